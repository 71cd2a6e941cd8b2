// The JavaScript backend: float32 typed arrays carved from one arena (so the measurement never holds more
// than the arena's bytes), cache-blocked kernels, work done as it is queued (`finish` only marks the end of
// a timed segment). One thread, no SIMD: the fallback for a browser without WebAssembly SIMD (ops-wasm.js).
import { fillWeights } from "./weights.js";

const TILE = 4; // a 4×4 block of outputs per inner loop: 8 loads feed 16 multiply-adds
const ROW_BLOCK = 64; // weight rows kept in L2 while every input row passes over them

export class JsOps {
  constructor(arenaBytes) {
    this.name = "js";
    this.arena = new Float32Array(Math.floor(arenaBytes / 4));
    this.used = 0;
    this.cos = null;
    this.sin = null;
  }

  get capacityBytes() { return this.arena.byteLength; }
  get allocatedBytes() { return this.used * 4; }
  get peakBytes() { return this.arena.byteLength; } // the whole arena is allocated up front

  /** Every tensor is a view into the arena; `reset` gives the whole arena back. */
  alloc(n) {
    if (this.used + n > this.arena.length) throw new Error(`arena full: ${(this.used + n) * 4} > ${this.arena.byteLength} bytes`);
    const view = this.arena.subarray(this.used, this.used + n);
    this.used += n;
    return view;
  }

  reset() { this.used = 0; }
  zeros(n) { return this.alloc(n).fill(0); }
  ones(n) { return this.alloc(n).fill(1); }
  weights(n, key, scale) { return fillWeights(this.alloc(n), key, scale); }
  matrix(rows, cols, key, scale) { return this.weights(rows * cols, key, scale); }
  finish() { return Promise.resolve(); }
  read(tensor, n) { return Promise.resolve(Float32Array.from(tensor.subarray(0, n))); }
  destroy() { this.arena = null; }

  /** cos and sin of position × theta^(-2i/hd), in float64 then float32, as simulations.model.rope_angles. */
  ropeTable(maxTokens, hd, theta) {
    const half = hd / 2;
    this.cos = new Float32Array(maxTokens * half);
    this.sin = new Float32Array(maxTokens * half);
    for (let i = 0; i < half; i += 1) {
      const invFreq = 1 / theta ** ((2 * i) / hd);
      for (let pos = 0; pos < maxTokens; pos += 1) {
        this.cos[pos * half + i] = Math.cos(pos * invFreq);
        this.sin[pos * half + i] = Math.sin(pos * invFreq);
      }
    }
  }

  embed(table, tokens, x, d) {
    tokens.forEach((token, t) => x.set(table.subarray(token * d, token * d + d), t * d));
  }

  /** y[r] = x[row0 + r] · w / rms(x[row0 + r]) for `rows` rows of width d. */
  rmsnorm(x, w, y, rows, d, eps, row0) {
    for (let r = 0; r < rows; r += 1) {
      const base = (row0 + r) * d;
      let sum = 0;
      for (let i = 0; i < d; i += 1) sum += x[base + i] * x[base + i];
      const inv = 1 / Math.sqrt(Math.fround(sum / d) + eps);
      for (let i = 0; i < d; i += 1) y[r * d + i] = x[base + i] * (w[i] * inv);
    }
  }

  /** y (T, N) = x (T, K) · Wᵀ with W (N, K) as in PyTorch; `accumulate` adds to y (the residual). */
  matmul(x, w, y, T, N, K, accumulate) {
    if (T === 1) return matvec(x, w, y, N, K, accumulate);
    for (let n0 = 0; n0 < N; n0 += ROW_BLOCK) {
      const n1 = Math.min(N, n0 + ROW_BLOCK);
      for (let t = 0; t < T; t += TILE) {
        for (let n = n0; n < n1; n += TILE) {
          if (t + TILE <= T && n + TILE <= n1) tile4x4(x, w, y, t, n, N, K, accumulate);
          else edgeTile(x, w, y, t, Math.min(T, t + TILE), n, Math.min(n1, n + TILE), N, K, accumulate);
        }
      }
    }
    return undefined;
  }

  /** Rotate the query and key heads of each qkv row (interleaved pairs), as simulations.model.rope. */
  rope(qkv, rows, heads, stride, hd, pos0) {
    const half = hd / 2;
    for (let t = 0; t < rows; t += 1) {
      const table = (pos0 + t) * half;
      for (let head = 0; head < heads; head += 1) {
        const base = t * stride + head * hd;
        for (let i = 0; i < half; i += 1) {
          const a = qkv[base + 2 * i];
          const b = qkv[base + 2 * i + 1];
          const c = this.cos[table + i];
          const s = this.sin[table + i];
          qkv[base + 2 * i] = a * c - b * s;
          qkv[base + 2 * i + 1] = a * s + b * c;
        }
      }
    }
  }

  /** Store the rows' keys and values at positions pos0… of the (kv_heads, max_tokens, hd) cache. */
  kvWrite(qkv, k, v, rows, pos0, dims, maxTokens) {
    const { q, kvDim, hd, kv, qkv: stride } = dims;
    for (let t = 0; t < rows; t += 1) {
      for (let head = 0; head < kv; head += 1) {
        const from = t * stride + q + head * hd;
        const to = (head * maxTokens + pos0 + t) * hd;
        k.set(qkv.subarray(from, from + hd), to);
        v.set(qkv.subarray(from + kvDim, from + kvDim + hd), to);
      }
    }
  }

  /** Causal grouped-query attention of the rows' queries over every cached key up to their position. */
  attention(qkv, k, v, out, rows, pos0, dims, maxTokens) {
    const { h, kv, hd, q: qDim, qkv: stride } = dims;
    const rep = h / kv;
    const scale = Math.fround(1 / Math.sqrt(hd));
    const scores = new Float32Array(pos0 + rows);
    const query = new Float32Array(hd);
    const mixed = new Float64Array(hd);
    for (let t = 0; t < rows; t += 1) {
      const keys = pos0 + t + 1;
      for (let head = 0; head < h; head += 1) {
        const kvBase = Math.floor(head / rep) * maxTokens * hd;
        for (let i = 0; i < hd; i += 1) query[i] = qkv[t * stride + head * hd + i] * scale;
        let max = -Infinity;
        for (let j = 0; j < keys; j += 1) {
          let dot = 0;
          const row = kvBase + j * hd;
          for (let i = 0; i < hd; i += 1) dot += query[i] * k[row + i];
          scores[j] = dot;
          if (dot > max) max = dot;
        }
        let sum = 0;
        mixed.fill(0);
        for (let j = 0; j < keys; j += 1) {
          const weight = Math.exp(scores[j] - max);
          sum += weight;
          const row = kvBase + j * hd;
          for (let i = 0; i < hd; i += 1) mixed[i] += weight * v[row + i];
        }
        for (let i = 0; i < hd; i += 1) out[t * qDim + head * hd + i] = mixed[i] / sum;
      }
    }
  }

  /** SwiGLU's gate: hidden = silu(gate) × up, from the stacked (T, 2·ff) projection. */
  swiglu(gateUp, hidden, rows, ff) {
    for (let t = 0; t < rows; t += 1) {
      for (let j = 0; j < ff; j += 1) {
        const g = gateUp[t * 2 * ff + j];
        hidden[t * ff + j] = (g / (1 + Math.exp(-g))) * gateUp[t * 2 * ff + ff + j];
      }
    }
  }

  // --- the device's ceilings, as this backend reaches them ----------------------------------------

  /**
   * Seconds of each run of a (T × K) by (K × N) product (2·T·N·K FLOPs) with this backend's matmul, buffers from
   * the arena: `most` runs, fewer once they have taken `capS` (never fewer than `least`), after a warm-up run
   * (the JIT compiles the kernel) when `warmUp`.
   */
  async gemmTimes({ T, N, K }, { most = 1, least = 1, capS = Infinity, warmUp = true } = {}) {
    const a = this.weights(T * K, 1, 1);
    const b = this.weights(N * K, 2, 1);
    const c = this.zeros(T * N);
    if (warmUp) this.matmul(a, b, c, T, N, K, false);
    const times = [];
    for (let total = 0; times.length < most && (times.length < least || total < capS);) {
      const start = performance.now();
      this.matmul(a, b, c, T, N, K, false);
      times.push((performance.now() - start) / 1000);
      total += times[times.length - 1];
    }
    this.reset();
    return times;
  }

  /** Seconds to read `bytes` once (a sum over a buffer far larger than the caches), the best of repeats. */
  async streamSeconds(bytes, repeats) {
    const data = this.ones(Math.floor(bytes / 4));
    sumAll(data.subarray(0, 1 << 16)); // warm-up
    const times = [];
    let total = 0;
    for (let r = 0; r < repeats; r += 1) {
      const start = performance.now();
      total += sumAll(data);
      times.push((performance.now() - start) / 1000);
    }
    this.reset();
    if (!(total > 0)) throw new Error("stream benchmark read nothing");
    return Math.min(...times);
  }
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// The buffer is summed a run of RUN_FLOATS at a time. V8 on one Xeon read a Float32Array at 2.5 GB/s in one long
// loop and at 5.2 in runs of 256 floats, while decode's rows of 576 read at 3.4: a ceiling summed in one loop was
// beaten by decode (the page said "ceiling exceeded"). Runs of 128-576 floats were alike there; 1,024 and more
// as slow as one loop.
const RUN_FLOATS = 256;

function sumAll(data) {
  let total = 0;
  const n = data.length - (data.length % RUN_FLOATS);
  for (let start = 0; start < n; start += RUN_FLOATS) total += sumRun(data, start, start + RUN_FLOATS);
  return total + sumRun(data, n, data.length);
}

function sumRun(data, start, end) {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const end4 = end - ((end - start) % 4);
  for (let i = start; i < end4; i += 4) {
    s0 += data[i]; s1 += data[i + 1]; s2 += data[i + 2]; s3 += data[i + 3];
  }
  for (let i = end4; i < end; i += 1) s0 += data[i];
  return s0 + s1 + s2 + s3;
}

function matvec(x, w, y, N, K, accumulate) {
  const k4 = K - (K % 4);
  for (let n = 0; n < N; n += 1) {
    const row = n * K;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let k = 0; k < k4; k += 4) {
      s0 += x[k] * w[row + k]; s1 += x[k + 1] * w[row + k + 1];
      s2 += x[k + 2] * w[row + k + 2]; s3 += x[k + 3] * w[row + k + 3];
    }
    for (let k = k4; k < K; k += 1) s0 += x[k] * w[row + k];
    const sum = s0 + s1 + s2 + s3;
    y[n] = accumulate ? y[n] + sum : sum;
  }
}

function tile4x4(x, w, y, t, n, N, K, accumulate) {
  const x0 = t * K, x1 = x0 + K, x2 = x1 + K, x3 = x2 + K;
  const w0 = n * K, w1 = w0 + K, w2 = w1 + K, w3 = w2 + K;
  let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
  let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
  for (let k = 0; k < K; k += 1) {
    const a0 = x[x0 + k], a1 = x[x1 + k], a2 = x[x2 + k], a3 = x[x3 + k];
    const b0 = w[w0 + k], b1 = w[w1 + k], b2 = w[w2 + k], b3 = w[w3 + k];
    c00 += a0 * b0; c01 += a0 * b1; c02 += a0 * b2; c03 += a0 * b3;
    c10 += a1 * b0; c11 += a1 * b1; c12 += a1 * b2; c13 += a1 * b3;
    c20 += a2 * b0; c21 += a2 * b1; c22 += a2 * b2; c23 += a2 * b3;
    c30 += a3 * b0; c31 += a3 * b1; c32 += a3 * b2; c33 += a3 * b3;
  }
  put4(y, t * N + n, c00, c01, c02, c03, accumulate);
  put4(y, (t + 1) * N + n, c10, c11, c12, c13, accumulate);
  put4(y, (t + 2) * N + n, c20, c21, c22, c23, accumulate);
  put4(y, (t + 3) * N + n, c30, c31, c32, c33, accumulate);
}

function put4(y, base, v0, v1, v2, v3, accumulate) {
  if (accumulate) {
    y[base] += v0; y[base + 1] += v1; y[base + 2] += v2; y[base + 3] += v3;
  } else {
    y[base] = v0; y[base + 1] = v1; y[base + 2] = v2; y[base + 3] = v3;
  }
}

function edgeTile(x, w, y, t0, t1, n0, n1, N, K, accumulate) {
  for (let t = t0; t < t1; t += 1) {
    for (let n = n0; n < n1; n += 1) {
      let sum = 0;
      for (let k = 0; k < K; k += 1) sum += x[t * K + k] * w[n * K + k];
      y[t * N + n] = accumulate ? y[t * N + n] + sum : sum;
    }
  }
}
