// The real model in the worker: the GGUF's bytes in one WebAssembly memory, its tensors read where the
// manifest says they lie, multiplied in their own formats by `matmul_q` and `matvec_q` (hooks/demos/device_kernels.wat).
// The passes are simulations/model.py's: `forward` runs T tokens at positions pos0… in one batched pass
// (prefill: the whole prompt; decode: one token) and appends their K and V to a preallocated cache.
import { DeviceError, KernelMemory } from "./wasm.js";
import { checkedFile } from "./live-store.js";

const TYPE = { f32: 0, q8_0: 1, q4_1: 2 };
const BAND_ROWS = 64; // weight rows matmul_q dequantizes at once for a prompt

export class LiveModel {
  /** integer: Q4_1's decode products in integers (where relaxed SIMD offers its dot product; see `matmul`). */
  constructor(module, manifest, { integer = false } = {}) {
    this.manifest = manifest;
    this.integer = integer;
    this.c = manifest.config;
    this.mem = new KernelMemory(module);
    this.k = this.mem.kernels;
    this.k.f16_table(this.mem.alloc(4 * 65536)); // a block's f16 scale becomes one load
    this.base = this.mem.alloc(manifest.file_bytes + 64);
    this.mark = this.mem.used; // everything after the file is the cache and activations of one run
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = this.c;
    this.dims = { d, h, kv, hd, ff, q: h * hd, kvDim: kv * hd, qkv: (h + 2 * kv) * hd };
    this.capacity = { tokens: 0, rows: 0 };
  }

  /** Copy `bytes` (a chunk) to `offset` of the file. */
  write(offset, bytes) {
    new Uint8Array(this.mem.memory.buffer, this.base + offset, bytes.byteLength).set(new Uint8Array(bytes));
  }

  tensor(name) {
    const t = this.manifest.tensors[name];
    if (!t) throw new DeviceError("load", `the model file has no tensor ${name}`);
    return { ptr: this.base + t.offset, type: TYPE[t.type], rows: t.shape[0], cols: t.shape.length > 1 ? t.shape[1] : 1 };
  }

  /** Pointers of every tensor, once the file is in memory. */
  bind() {
    const t = (name) => this.tensor(name);
    this.embedding = t("token_embd.weight");
    this.head = this.manifest.tensors["output.weight"] ? t("output.weight") : this.embedding;
    this.outputNorm = t("output_norm.weight");
    this.layers = Array.from({ length: this.c.n_layers }, (_, i) => {
      const b = `blk.${i}.`;
      return { attnNorm: t(`${b}attn_norm.weight`), q: t(`${b}attn_q.weight`), k: t(`${b}attn_k.weight`),
        v: t(`${b}attn_v.weight`), o: t(`${b}attn_output.weight`), ffnNorm: t(`${b}ffn_norm.weight`),
        gate: t(`${b}ffn_gate.weight`), up: t(`${b}ffn_up.weight`), down: t(`${b}ffn_down.weight`) };
    });
  }

  /** Bytes a run of `tokens` tokens (at most `rows` in one pass) needs beyond the file. */
  static runBytes(config, tokens, rows) {
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff, n_layers: L, vocab_size: V } = config;
    const cache = 2 * L * kv * tokens * hd;
    const activations = rows * (2 * d + (h + 2 * kv) * hd + h * hd + 3 * ff) + d + V + BAND_ROWS * Math.max(d, ff, h * hd) + tokens + 8;
    return 4 * (cache + activations);
  }

  /** The KV cache for `tokens` tokens and activations for passes of up to `rows` rows (allocated anew). */
  prepare(tokens, rows) {
    const { mem, dims, c } = this;
    mem.used = this.mark;
    const f = (n) => mem.alloc(4 * n);
    this.caches = this.layers.map(() => ({ k: f(dims.kv * tokens * dims.hd), v: f(dims.kv * tokens * dims.hd) }));
    Object.assign(this, { x: f(rows * dims.d), xn: f(rows * dims.d), qkv: f(rows * dims.qkv), mixed: f(rows * dims.q),
      gateUp: f(rows * 2 * dims.ff), hidden: f(rows * dims.ff), last: f(dims.d), logits: f(c.vocab_size),
      scratch: f(BAND_ROWS * Math.max(dims.d, dims.ff, dims.q)), scores: f(tokens + 8) });
    this.capacity = { tokens, rows };
    this.length = 0;
    this.rope = ropeTable(tokens, dims.hd, c.rope_theta);
  }

  f32(ptr, n) {
    return this.mem.f32(ptr, n);
  }

  matmul(x, w, y, T, N, K, acc, ys = N) {
    if (w.rows !== N || w.cols !== K) throw new DeviceError("kernel", `a ${w.rows}×${w.cols} matrix where ${N}×${K} was expected`);
    // A prompt: bands of rows dequantized into scratch, then the float32 tile kernel. A token: each row
    // dequantized in registers (matvec_q), every weight read once; Q4_1 under relaxed SIMD as integer dot products
    // of its nibbles and x's 8-bit digits (twice matvec_q's rate there; slower than it without relaxed SIMD).
    if (T < 4 && w.type === TYPE.q4_1 && this.integer) {
      this.k.matvec_q4_1_int(x, w.ptr, y, T, N, K, acc ? 1 : 0, 4 * ys, this.scratch);
      return;
    }
    const product = T >= 4 || w.type === TYPE.f32 ? this.k.matmul_q : this.k.matvec_q;
    product(x, w.ptr, y, T, N, K, acc ? 1 : 0, w.type, 4 * ys, this.scratch);
  }

  /** RMSNorm of `rows` rows of x (from row `row0`) into y: x · (w / sqrt(mean(x²) + eps)), as model.rms_norm. */
  rmsnorm(xPtr, w, yPtr, rows, row0 = 0) {
    const d = this.dims.d;
    const x = this.f32(xPtr + 4 * row0 * d, rows * d), y = this.f32(yPtr, rows * d), g = this.f32(w.ptr, d);
    const eps = this.c.rms_eps;
    for (let r = 0; r < rows; r += 1) {
      let sum = 0;
      for (let i = r * d; i < (r + 1) * d; i += 1) sum += x[i] * x[i];
      const root = Math.fround(Math.sqrt(Math.fround(Math.fround(sum / d) + eps)));
      for (let i = 0; i < d; i += 1) y[r * d + i] = x[r * d + i] * Math.fround(g[i] / root);
    }
  }

  /** Rotate the query and key heads of T rows at positions pos0… (pairs (0, 1), (2, 3)…, as the GGUF's llama). */
  applyRope(T, pos0) {
    const { h, kv, hd, qkv } = this.dims;
    const half = hd / 2;
    const a = this.f32(this.qkv, T * qkv);
    const { cos, sin } = this.rope;
    for (let t = 0; t < T; t += 1) {
      const row = (pos0 + t) * half;
      for (let head = 0; head < h + kv; head += 1) {
        const at = t * qkv + head * hd;
        for (let i = 0; i < half; i += 1) {
          const x0 = a[at + 2 * i], x1 = a[at + 2 * i + 1], c = cos[row + i], s = sin[row + i];
          a[at + 2 * i] = Math.fround(x0 * c) - Math.fround(x1 * s);
          a[at + 2 * i + 1] = Math.fround(x0 * s) + Math.fround(x1 * c);
        }
      }
    }
  }

  /** This pass's K and V rows into the layer's cache, laid out (kv_heads, tokens, head_dim). */
  writeCache(layer, T, pos0) {
    const { q, kv, hd, kvDim, qkv } = this.dims;
    const tokens = this.capacity.tokens;
    const a = this.f32(this.qkv, T * qkv);
    const kc = this.f32(this.caches[layer].k, kv * tokens * hd), vc = this.f32(this.caches[layer].v, kv * tokens * hd);
    for (let t = 0; t < T; t += 1) {
      for (let head = 0; head < kv; head += 1) {
        const to = (head * tokens + pos0 + t) * hd, from = t * qkv + q + head * hd;
        kc.set(a.subarray(from, from + hd), to);
        vc.set(a.subarray(from + kvDim, from + kvDim + hd), to);
      }
    }
  }

  /** hidden = silu(gate) · up, with silu(x) = x (1 + tanh(x / 2)) / 2 as model.silu. */
  swiglu(T) {
    const ff = this.dims.ff;
    const gu = this.f32(this.gateUp, T * 2 * ff), out = this.f32(this.hidden, T * ff);
    for (let t = 0; t < T; t += 1) {
      for (let i = 0; i < ff; i += 1) {
        const g = gu[t * 2 * ff + i];
        out[t * ff + i] = g * (0.5 + 0.5 * Math.tanh(0.5 * g)) * gu[t * 2 * ff + ff + i];
      }
    }
  }

  /** T tokens through every layer, appended to the cache; the logits of the last. afterLayer(l) after each layer. */
  forward(tokens, afterLayer = null) {
    const T = tokens.length, pos0 = this.length;
    const { dims, k } = this;
    if (pos0 + T > this.capacity.tokens || T > this.capacity.rows) {
      throw new DeviceError("memory", `the run holds ${this.capacity.tokens} tokens, ${this.capacity.rows} a pass`);
    }
    const e = this.embedding;
    tokens.forEach((id, i) => k.dequantize_row(e.ptr, id, dims.d, e.type, this.x + 4 * i * dims.d));
    const scale = 1 / Math.sqrt(dims.hd);
    this.layers.forEach((w, l) => {
      this.rmsnorm(this.x, w.attnNorm, this.xn, T);
      this.matmul(this.xn, w.q, this.qkv, T, dims.q, dims.d, false, dims.qkv);
      this.matmul(this.xn, w.k, this.qkv + 4 * dims.q, T, dims.kvDim, dims.d, false, dims.qkv);
      this.matmul(this.xn, w.v, this.qkv + 4 * (dims.q + dims.kvDim), T, dims.kvDim, dims.d, false, dims.qkv);
      this.applyRope(T, pos0);
      this.writeCache(l, T, pos0);
      k.attention(this.qkv, this.caches[l].k, this.caches[l].v, this.mixed, this.scores, T, pos0, dims.h, dims.kv, dims.hd,
        this.capacity.tokens, scale);
      this.matmul(this.mixed, w.o, this.x, T, dims.d, dims.q, true);
      this.rmsnorm(this.x, w.ffnNorm, this.xn, T);
      this.matmul(this.xn, w.gate, this.gateUp, T, dims.ff, dims.d, false, 2 * dims.ff);
      this.matmul(this.xn, w.up, this.gateUp + 4 * dims.ff, T, dims.ff, dims.d, false, 2 * dims.ff);
      this.swiglu(T);
      this.matmul(this.hidden, w.down, this.x, T, dims.d, dims.ff, true);
      afterLayer?.(l);
    });
    this.length += T;
    this.rmsnorm(this.x, this.outputNorm, this.last, 1, T - 1);
    this.matmul(this.last, this.head, this.logits, 1, this.c.vocab_size, dims.d, false);
    return this.f32(this.logits, this.c.vocab_size);
  }
}

/** cos and sin of position · theta^(−2i/hd), computed in double precision then rounded, as model.rope_angles. */
function ropeTable(tokens, hd, theta) {
  const half = hd / 2;
  const cos = new Float32Array(tokens * half), sin = new Float32Array(tokens * half);
  for (let p = 0; p < tokens; p += 1) {
    for (let i = 0; i < half; i += 1) {
      const angle = p * (1 / theta ** ((2 * i) / hd));
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** The index of the largest logit (the first, on a tie: numpy's argmax). */
export function argmax(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i += 1) if (logits[i] > logits[best]) best = i;
  return best;
}

/**
 * The model of `manifest` in a memory of its own: every chunk from `store` (Cache Storage, or null) or fetched from
 * `modelBase`, checked, and copied into place. onBytes(n) as bytes arrive; `kernels`: loadKernels()'s answer.
 * Resolves to {model, fromCache, kept}.
 */
export async function loadWeights(kernels, manifest, modelBase, store, onBytes = () => {}) {
  let model;
  try {
    model = new LiveModel(kernels.module, manifest, { integer: kernels.variant === "relaxed" });
  } catch (error) {
    throw error instanceof DeviceError ? error : new DeviceError("memory", String(error?.message || error));
  }
  let offset = 0, fromCache = 0, kept = Boolean(store);
  for (const chunk of manifest.chunks) {
    const file = await checkedFile(store, new URL(chunk.name, modelBase), chunk.sha256, chunk.bytes, onBytes);
    if (file.cached) fromCache += chunk.bytes;
    kept &&= file.kept;
    model.write(offset, file.buffer);
    offset += chunk.bytes;
  }
  model.bind();
  return { model, fromCache: fromCache === manifest.file_bytes, kept };
}
