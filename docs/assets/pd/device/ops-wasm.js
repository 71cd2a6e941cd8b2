// The WebAssembly backend, on every core. This worker coordinates `workers` shard workers (shard.js),
// which split each layer as tensor-parallel inference does: each holds some key-value heads (with their
// query heads, KV cache and columns of wo) and a slice of the MLP, so a layer is two calls to all of
// them — attention, then the MLP — each returning a partial sum of the layer's output that is added up
// here. Each worker streams only its share of the weights. The output layer is split by rows. The norms
// and the embedding run here. No SharedArrayBuffer: inputs and partial sums are copied.
import { JsOps } from "./ops-js.js";
import { DeviceError, KernelMemory } from "./wasm.js";
import { fillWeights, layerTensors, matrixScale, tensorKey } from "./weights.js";

const SHARD_URL = new URL("./shard.js", import.meta.url);
// The compute ceiling: each worker multiplies (T, K) by (N, K)ᵀ of its own, sized like prefill's products
// (T = the prompt) with its weight block larger than L1 and smaller than L2, K a multiple of 8.
const GEMM = { T: 256, N: 512, K: 1024 };

/** One shard worker and its queue of pending replies (it answers in order). */
class Shard {
  constructor(index, onFailure) {
    this.index = index;
    this.pending = [];
    this.ready = false;
    this.worker = new Worker(SHARD_URL, { type: "module", name: `pd-device-shard-${index}` });
    this.worker.addEventListener("message", ({ data }) => {
      const next = this.pending.shift();
      if (!next) return;
      if (data.ok) next.resolve(data);
      else next.reject(new DeviceError(data.kind, `worker ${index + 1}: ${data.message}`));
    });
    this.worker.addEventListener("error", (event) => {
      event.preventDefault();
      const error = this.ready
        ? new DeviceError("kernel", `worker ${index + 1}: ${event.message || "stopped"}`)
        : new DeviceError("load", `worker ${index + 1} (${SHARD_URL.pathname}) could not start${event.message ? `: ${event.message}` : ""}`);
      for (const next of this.pending.splice(0)) next.reject(error);
      onFailure(error);
    });
  }

  call(message, transfer = []) {
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.worker.postMessage(message, transfer);
    });
  }
}

/** A WebAssembly backend with `workers` shard workers, or a DeviceError of kind "load". */
export async function openWasm(kernels, workers) {
  const ops = new WasmOps(kernels, workers);
  await ops.start();
  return ops;
}

export class WasmOps {
  constructor({ module, variant }, workers) {
    this.name = "wasm";
    this.variant = variant; // "relaxed" (fused multiply-add) or "simd"
    this.workers = workers;
    this.module = module;
    this.memory = new KernelMemory(module);
    this.failure = null;
    this.shards = Array.from({ length: workers }, (_, i) => new Shard(i, (error) => { this.failure ||= error; }));
    this.shardBytes = 0;
    this.nextId = 0;
  }

  async start() {
    await this.all((shard) => shard.call({ op: "init", module: this.module }));
    for (const shard of this.shards) shard.ready = true;
  }

  /** Run `fn` on every shard at once; the first failure (or a shard that died) rejects. */
  async all(fn) {
    if (this.failure) throw this.failure;
    return Promise.all(this.shards.map(fn));
  }

  get capacityBytes() { return Infinity; } // the plan's budget is the limit

  /**
   * Bytes this backend holds beyond Model.bytesNeeded: the embedding's copy kept here for lookups, and
   * each worker's input and output buffers for the widest product.
   */
  extraBytes(shapes, { vocabRows, maxRows }) {
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = shapes;
    const perWorker = Math.max((h + 3 * kv) * hd, 3 * ff) / Math.min(this.workers, kv); // the widest share
    return 4 * (vocabRows * d + this.workers * maxRows * (2 * d + Math.ceil(perWorker)));
  }
  get peakBytes() { return this.memory.bytes + this.shardBytes; }

  view(t) { return this.memory.f32(t.ptr, t.n); }

  reset() {
    this.memory = new KernelMemory(this.module);
    this.shardBytes = 0;
    return this.all((shard) => shard.call({ op: "reset" }));
  }

  destroy() {
    for (const shard of this.shards) shard.worker.terminate();
  }

  zeros(n) { return { ptr: this.memory.alloc(4 * n), n }; } // fresh memory is zero
  ones(n) {
    const t = this.zeros(n);
    this.view(t).fill(1);
    return t;
  }

  /** A seeded (rows, cols) matrix split by rows among the shards; `lookup` keeps a copy here (the embedding). */
  async matrix(rows, cols, key, scale, { lookup = false } = {}) {
    const id = this.nextId++;
    const shares = this.shards.map((shard, i) => {
      const first = Math.floor((rows * i) / this.workers);
      return { shard, first, rows: Math.floor((rows * (i + 1)) / this.workers) - first };
    });
    const replies = await this.all((shard, i) => shard.call({ op: "matrix", id, first: shares[i].first,
      rows: shares[i].rows, cols, key, scale }));
    this.shardBytes = replies.reduce((sum, r) => sum + r.bytes, 0);
    const matrix = { id, rows, cols, shares };
    if (lookup) {
      matrix.local = this.zeros(rows * cols);
      fillWeights(this.view(matrix.local), key, scale);
    }
    return matrix;
  }

  finish() { return this.failure ? Promise.reject(this.failure) : Promise.resolve(); }
  read(t, n) { return Promise.resolve(this.memory.f32(t.ptr, n).slice()); }

  async ropeTable(maxTokens, hd, theta) {
    await this.all((shard) => shard.call({ op: "rope", maxTokens, hd, theta }));
  }

  /**
   * One layer, split among the workers: worker i takes key-value heads [g0, g1) (an even split, some
   * may take none when there are more workers than heads) and MLP units [a, b) (multiples of 8, the
   * matrix kernel's step).
   */
  async layer(shapes, layer, seed, maxTokens) {
    const id = this.nextId++;
    const tensors = layerTensors(shapes, layer);
    const keys = {}, scales = {};
    for (const [name, t] of Object.entries(tensors)) {
      keys[name] = tensorKey(seed, t.tensor);
      scales[name] = matrixScale(t.cols);
    }
    const kv = shapes.n_kv_heads, units = shapes.d_ff / 8, W = this.workers;
    const replies = await this.all((shard, i) => shard.call({ op: "layer", id, shapes, keys, scales, maxTokens,
      groups: [Math.floor((kv * i) / W), Math.floor((kv * (i + 1)) / W)],
      units: [8 * Math.floor((units * i) / W), 8 * Math.floor((units * (i + 1)) / W)] }));
    this.shardBytes = replies.reduce((sum, r) => sum + r.bytes, 0);
    return { id };
  }

  /** x += the layer's attention of xn (rows new tokens at positions pos0…): every worker's partial sum. */
  async attentionBlock(xn, layer, x, rows, d, pos0) {
    const input = this.memory.f32(xn.ptr, rows * d).slice(); // a view would send the whole memory
    this.gather(x, rows * d, await this.all((shard) => shard.call({ op: "attention", id: layer.id, x: input, T: rows, pos0 })));
  }

  /** x += the layer's MLP of xn: every worker's partial sum. */
  async mlpBlock(xn, layer, x, rows, d) {
    const input = this.memory.f32(xn.ptr, rows * d).slice();
    this.gather(x, rows * d, await this.all((shard) => shard.call({ op: "mlp", id: layer.id, x: input, T: rows })));
  }

  gather(x, n, replies) {
    const out = this.memory.f32(x.ptr, n);
    for (const { y } of replies) {
      if (y) for (let i = 0; i < n; i += 1) out[i] += y[i];
    }
  }

  embed(table, tokens, x, d) {
    JsOps.prototype.embed.call(this, this.view(table.local), tokens, this.view(x), d);
  }

  rmsnorm(x, w, y, rows, d, eps, row0) {
    JsOps.prototype.rmsnorm.call(this, this.view(x), this.view(w), this.view(y), rows, d, eps, row0);
  }

  /** y (T, N) = x (T, K) · Wᵀ (the output layer): every shard multiplies by its rows, gathered into y's columns. */
  async matmul(x, w, y, T, N, K, accumulate) {
    if (K % 8) throw new DeviceError("kernel", `the WebAssembly matrix kernel reads 8 floats at a time: K = ${K}`);
    const input = this.memory.f32(x.ptr, T * K).slice();
    const parts = await this.all((shard) => shard.call({ op: "matmul", id: w.id, x: input, T }));
    const out = this.view(y);
    parts.forEach(({ y: part }, i) => {
      const { first, rows } = w.shares[i];
      for (let t = 0; t < T; t += 1) {
        const from = t * rows, to = t * N + first;
        if (accumulate) for (let j = 0; j < rows; j += 1) out[to + j] += part[from + j];
        else out.set(part.subarray(from, from + rows), to);
      }
    });
  }

  // --- the ceilings: what this page's WebAssembly reaches on `workers` cores ---------------------------

  /** The best rate of the matrix kernel, every worker multiplying its own operands at once. */
  async computeCeiling(repeats) {
    const { T, N, K } = GEMM;
    await this.all((shard) => shard.call({ op: "gemm_setup", T, N, K }));
    const times = [];
    for (let r = 0; r < repeats; r += 1) {
      const start = performance.now();
      await this.all((shard) => shard.call({ op: "gemm_run" }));
      times.push((performance.now() - start) / 1000);
    }
    await this.all((shard) => shard.call({ op: "scratch_free" }));
    const flops = 2 * T * N * K * this.workers;
    return { gflops: flops / Math.min(...times) / 1e9, times, runs: times.length, shape: { T, N: N * this.workers, K } };
  }

  /**
   * The best rate of a streaming read of `bytes` (split among the workers, each summing its own buffer);
   * a browser that refuses that much memory gets half, down to `leastBytes`.
   */
  async streamCeiling(bytes, leastBytes, repeats) {
    let total = 0;
    for (let wanted = bytes; ; wanted = Math.floor(wanted / 2)) {
      try {
        const replies = await this.all((shard) => shard.call({ op: "stream_setup", bytes: wanted / this.workers }));
        total = replies.reduce((sum, r) => sum + r.bytes, 0);
        break;
      } catch (error) {
        await this.all((shard) => shard.call({ op: "scratch_free" }));
        if (error.kind !== "memory" || wanted / 2 < leastBytes) throw error;
      }
    }
    const times = [];
    for (let r = 0; r < repeats; r += 1) {
      const start = performance.now();
      await this.all((shard) => shard.call({ op: "stream_run" }));
      times.push((performance.now() - start) / 1000);
    }
    await this.all((shard) => shard.call({ op: "scratch_free" }));
    return { gbps: total / Math.min(...times) / 1e9, bytes: total, times };
  }
}
