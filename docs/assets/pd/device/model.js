// The transformer the worker measures, with the same phases as simulations/model.py: `prefill` runs the
// whole prompt in one batched pass and fills a preallocated KV cache; `decodeStep` runs one token and
// reads it. The maths is written once, against an `ops` backend (ops-wasm.js, ops-js.js or ops-webgpu.js);
// each call is awaited (the WebAssembly backend's matrix products wait for its workers, the others only
// queue work) and `await ops.finish()` ends a timed segment. The layers and the LM head are timed
// apart, because the worker measures a subset of each and scales them separately.
import { layerTensors, matrixScale, tensorKey } from "./weights.js";

export class Model {
  /**
   * shapes: the model's shapes (demo JSON `model`); layers: how many of its layers to build;
   * vocabRows: LM-head rows to build (tied with the embedding); maxTokens: KV-cache capacity;
   * maxRows: the most tokens one pass takes (the prompt).
   */
  constructor(ops, shapes, { layers, vocabRows, maxTokens, maxRows, seed }) {
    Object.assign(this, { ops, shapes, layers, vocabRows, maxTokens, maxRows, seed });
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = shapes;
    this.dims = { d, h, kv, hd, ff, q: h * hd, kvDim: kv * hd, qkv: (h + 2 * kv) * hd };
    this.length = 0; // tokens in the KV cache
  }

  /** Bytes the model will allocate (weights, KV cache, activations), before allocating any. */
  static bytesNeeded(shapes, { layers, vocabRows, maxTokens, maxRows }) {
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = shapes;
    const qkv = (h + 2 * kv) * hd;
    const perLayer = d * qkv + h * hd * d + 3 * d * ff + 2 * kv * hd * maxTokens;
    const activations = maxRows * (2 * d + qkv + h * hd + 3 * ff) + d + vocabRows;
    return 4 * (layers * perLayer + vocabRows * d + d + activations);
  }

  /** Allocate and fill every tensor (the fill runs on the backend: the GPU fills its own buffers). */
  async build() {
    const { ops, dims, shapes, seed } = this;
    const { d, kv, hd, ff } = dims;
    this.embedding = await ops.matrix(this.vocabRows, d, tensorKey(seed, 0), 1, { lookup: true }); // tied LM head, ±1
    this.ones = ops.ones(d); // every norm's weight (RMSNorm's initial value)
    this.layerWeights = [];
    const split = Boolean(ops.layer); // a backend that splits each layer among workers builds it itself
    for (let layer = 0; layer < this.layers && split; layer += 1) {
      this.layerWeights.push(await ops.layer(shapes, layer, seed, this.maxTokens));
    }
    for (let layer = 0; layer < this.layers && !split; layer += 1) {
      const weights = {};
      for (const [name, t] of Object.entries(layerTensors(shapes, layer))) {
        weights[name] = await ops.matrix(t.rows, t.cols, tensorKey(seed, t.tensor), matrixScale(t.cols));
      }
      weights.k = ops.zeros(kv * this.maxTokens * hd); // (kv_heads, max_tokens, head_dim), as KVCache
      weights.v = ops.zeros(kv * this.maxTokens * hd);
      this.layerWeights.push(weights);
    }
    const rows = this.maxRows;
    this.x = ops.zeros(rows * d);
    this.xn = ops.zeros(rows * d);
    if (!split) {
      this.qkv = ops.zeros(rows * dims.qkv);
      this.mixed = ops.zeros(rows * dims.q);
      this.gateUp = ops.zeros(rows * 2 * ff);
      this.hidden = ops.zeros(rows * ff);
    }
    this.last = ops.zeros(d);
    this.logits = ops.zeros(this.vocabRows);
    await ops.ropeTable(this.maxTokens, hd, shapes.rope_theta);
    await ops.finish();
  }

  /** Forget the cached tokens (the cache's memory stays allocated, as KVCache.empty's). */
  reset() {
    this.length = 0;
  }

  /** One pre-norm block over T rows at positions pos0…: x += attention(norm x); x += mlp(norm x). */
  async block(w, rows, pos0) {
    const { ops, dims, shapes } = this;
    const eps = shapes.rms_eps;
    if (ops.attentionBlock) { // the same two halves, each split among workers (ops-wasm.js)
      await ops.rmsnorm(this.x, this.ones, this.xn, rows, dims.d, eps, 0);
      await ops.attentionBlock(this.xn, w, this.x, rows, dims.d, pos0);
      await ops.rmsnorm(this.x, this.ones, this.xn, rows, dims.d, eps, 0);
      await ops.mlpBlock(this.xn, w, this.x, rows, dims.d);
      return;
    }
    await ops.rmsnorm(this.x, this.ones, this.xn, rows, dims.d, eps, 0);
    await ops.matmul(this.xn, w.wqkv, this.qkv, rows, dims.qkv, dims.d, false);
    await ops.rope(this.qkv, rows, dims.h + dims.kv, dims.qkv, dims.hd, pos0);
    await ops.kvWrite(this.qkv, w.k, w.v, rows, pos0, dims, this.maxTokens);
    await ops.attention(this.qkv, w.k, w.v, this.mixed, rows, pos0, dims, this.maxTokens);
    await ops.matmul(this.mixed, w.wo, this.x, rows, dims.d, dims.q, true);
    await ops.rmsnorm(this.x, this.ones, this.xn, rows, dims.d, eps, 0);
    await ops.matmul(this.xn, w.w_gate_up, this.gateUp, rows, 2 * dims.ff, dims.d, false);
    await ops.swiglu(this.gateUp, this.hidden, rows, dims.ff);
    await ops.matmul(this.hidden, w.w_down, this.x, rows, dims.d, dims.ff, true);
  }

  /** Embedding and every built layer for `tokens`, appended to the cache; resolves to its ms. */
  async layersPass(tokens) {
    const { ops } = this;
    if (this.length + tokens.length > this.maxTokens) throw new Error(`KV cache full: ${this.length + tokens.length} > ${this.maxTokens}`);
    const start = performance.now();
    await ops.embed(this.embedding, tokens, this.x, this.dims.d);
    for (const w of this.layerWeights) await this.block(w, tokens.length, this.length);
    await ops.finish();
    this.length += tokens.length;
    return performance.now() - start;
  }

  /** Final norm of the last row and the LM head over the built vocabulary rows; resolves to its ms. */
  async headPass(rows) {
    const { ops, dims } = this;
    const start = performance.now();
    await ops.rmsnorm(this.x, this.ones, this.last, 1, dims.d, this.shapes.rms_eps, rows - 1);
    await ops.matmul(this.last, this.embedding, this.logits, 1, this.vocabRows, dims.d, false);
    await ops.finish();
    return performance.now() - start;
  }

  /** The whole prompt in one batched pass, filling the cache. Resolves to {layersMs, headMs}. */
  async prefill(tokens) {
    const layersMs = await this.layersPass(tokens);
    return { layersMs, headMs: await this.headPass(tokens.length) };
  }

  /** One token, reading the cache and appending its K and V. Resolves to {layersMs, headMs}. */
  async decodeStep(token) {
    const layersMs = await this.layersPass([token]);
    return { layersMs, headMs: await this.headPass(1) };
  }

  /** The last logits (vocabRows values). */
  readLogits() {
    return this.ops.read(this.logits, this.vocabRows);
  }
}

