// One of the measurement's compute workers, in its own WebAssembly memory. Each layer is split among the
// workers as in tensor-parallel inference: this worker holds its key-value heads (their query heads' rows
// of wqkv, their KV cache, their columns of wo) and its slice of the MLP (rows of gate and up, the same
// columns of down), so one call runs its share of attention, or of the MLP, and returns a partial sum of
// the layer's output, which the coordinator (ops-wasm.js) adds up. It also holds a block of rows of the
// output layer, and runs its share of the two ceilings. No memory is shared between workers: inputs come
// in and results go back as copies, so no cross-origin isolation is needed.
import { JsOps } from "./ops-js.js";
import { DeviceError, KernelMemory } from "./wasm.js";
import { fillWeights } from "./weights.js";

let module = null;
let main = null; // weights and scratch
let scratch = null; // the ceilings' buffers, dropped after each
const matrices = new Map(); // id → {ptr, rows, cols}
const layers = new Map(); // id → this worker's share of one layer (see `layer`)
const table = { cos: null, sin: null }; // RoPE's, as JsOps keeps it
let io = { ptr: 0, bytes: 0 };

/** Rows [first, first + rows) of a seeded matrix with `cols` columns, into `view`. */
function fillRows(view, key, scale, first, cols) {
  fillWeights(view, key, scale, first * cols);
}

/** Columns [first, first + count) of a seeded (rows, cols) matrix, as a (rows, count) matrix, into `view`. */
function fillColumns(view, key, scale, rows, cols, first, count) {
  for (let r = 0; r < rows; r += 1) fillWeights(view.subarray(r * count, (r + 1) * count), key, scale, r * cols + first);
}

/** Scratch for one call: consecutive float32 buffers of the given lengths, as pointers. */
function scratchBuffers(...lengths) {
  const sizes = lengths.map((n) => Math.ceil((4 * n) / 16) * 16);
  let ptr = ioBuffer(sizes.reduce((a, b) => a + b, 0));
  return sizes.map((size) => { const at = ptr; ptr += size; return at; });
}

/** The partial sum a call returns, copied out of this worker's memory. */
function partial(ptr, n) {
  const y = main.f32(ptr, n).slice();
  return { y, transfer: [y.buffer] };
}

function ioBuffer(bytes) {
  if (bytes > io.bytes) io = { ptr: main.alloc(bytes), bytes };
  return io.ptr;
}

const HANDLERS = {
  init(message) {
    module = message.module;
    main = new KernelMemory(module);
    return {};
  },
  reset() {
    main = new KernelMemory(module);
    matrices.clear();
    layers.clear();
    io = { ptr: 0, bytes: 0 };
    return {};
  },
  /** Rows [first, first + rows) of a seeded matrix with `cols` columns. */
  matrix({ id, first, rows, cols, key, scale }) {
    const ptr = main.alloc(4 * rows * cols);
    fillWeights(main.f32(ptr, rows * cols), key, scale, first * cols);
    matrices.set(id, { ptr, rows, cols });
    return { bytes: main.bytes };
  },
  rope({ maxTokens, hd, theta }) {
    JsOps.prototype.ropeTable.call(table, maxTokens, hd, theta);
    return {};
  },
  /**
   * This worker's share of one layer: key-value heads [g0, g1) with their query heads, and MLP units
   * [a, b). `keys` and `scales` are the layer's four tensors' (weights.js), `shapes` the model's.
   */
  layer({ id, shapes, keys, scales, groups: [g0, g1], units: [a, b], maxTokens }) {
    const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = shapes;
    const rep = h / kv;
    const heads = (g1 - g0) * rep, kvHeads = g1 - g0, n = b - a;
    const q = heads * hd, kvDim = kvHeads * hd, stride = q + 2 * kvDim;
    const L = { d, hd, heads, kvHeads, n, q, kvDim, stride, maxTokens };
    L.wqkv = main.alloc(4 * stride * d);
    L.wo = main.alloc(4 * d * q);
    L.gu = main.alloc(4 * 2 * n * d);
    L.down = main.alloc(4 * d * n);
    L.k = main.alloc(4 * kvDim * maxTokens);
    L.v = main.alloc(4 * kvDim * maxTokens);
    const view = (ptr, rows, cols) => main.f32(ptr, rows * cols);
    const wqkv = view(L.wqkv, stride, d);
    fillRows(wqkv.subarray(0, q * d), keys.wqkv, scales.wqkv, g0 * rep * hd, d); // its query heads
    fillRows(wqkv.subarray(q * d, (q + kvDim) * d), keys.wqkv, scales.wqkv, h * hd + g0 * hd, d); // keys
    fillRows(wqkv.subarray((q + kvDim) * d), keys.wqkv, scales.wqkv, (h + kv) * hd + g0 * hd, d); // values
    fillColumns(view(L.wo, d, q), keys.wo, scales.wo, d, h * hd, g0 * rep * hd, q);
    const gu = view(L.gu, 2 * n, d);
    fillRows(gu.subarray(0, n * d), keys.w_gate_up, scales.w_gate_up, a, d); // gate
    fillRows(gu.subarray(n * d), keys.w_gate_up, scales.w_gate_up, ff + a, d); // up
    fillColumns(view(L.down, d, n), keys.w_down, scales.w_down, d, ff, a, n);
    layers.set(id, L);
    return { bytes: main.bytes };
  },
  /** Its heads' attention for T new rows at positions pos0…, times its columns of wo: a (T, d) partial sum. */
  attention({ id, x, T, pos0 }) {
    const L = layers.get(id);
    if (!L.heads) return { y: null };
    const [xp, qkv, mixed, y, scores] = scratchBuffers(T * L.d, T * L.stride, T * L.q, T * L.d, L.maxTokens + 4);
    main.f32(xp, T * L.d).set(x);
    const k = main.kernels;
    k.matmul(xp, L.wqkv, qkv, T, L.stride, L.d, 0);
    const qkvView = main.f32(qkv, T * L.stride);
    JsOps.prototype.rope.call(table, qkvView, T, L.heads + L.kvHeads, L.stride, L.hd, pos0);
    JsOps.prototype.kvWrite.call(null, qkvView, main.f32(L.k, L.kvDim * L.maxTokens), main.f32(L.v, L.kvDim * L.maxTokens),
      T, pos0, { q: L.q, kvDim: L.kvDim, hd: L.hd, kv: L.kvHeads, qkv: L.stride }, L.maxTokens);
    k.attention(qkv, L.k, L.v, mixed, scores, T, pos0, L.heads, L.kvHeads, L.hd, L.maxTokens, Math.fround(1 / Math.sqrt(L.hd)));
    k.matmul(mixed, L.wo, y, T, L.d, L.q, 0);
    return partial(y, T * L.d);
  },
  /** Its units of the MLP: down[:, a:b] · silu(gate[a:b] x) × up[a:b] x, a (T, d) partial sum. */
  mlp({ id, x, T }) {
    const L = layers.get(id);
    if (!L.n) return { y: null };
    const [xp, gu, hidden, y] = scratchBuffers(T * L.d, T * 2 * L.n, T * L.n, T * L.d);
    main.f32(xp, T * L.d).set(x);
    main.kernels.matmul(xp, L.gu, gu, T, 2 * L.n, L.d, 0);
    JsOps.prototype.swiglu.call(null, main.f32(gu, T * 2 * L.n), main.f32(hidden, T * L.n), T, L.n);
    main.kernels.matmul(hidden, L.down, y, T, L.d, L.n, 0);
    return partial(y, T * L.d);
  },
  /** y (T, rows) = x (T, cols) · this share's rowsᵀ. */
  matmul({ id, x, T }) {
    const m = matrices.get(id);
    const xBytes = 4 * T * m.cols;
    const xPtr = ioBuffer(xBytes + 4 * T * m.rows + 16);
    const yPtr = xPtr + Math.ceil(xBytes / 16) * 16;
    main.f32(xPtr, T * m.cols).set(x);
    main.kernels.matmul(xPtr, m.ptr, yPtr, T, m.rows, m.cols, 0);
    const y = main.f32(yPtr, T * m.rows).slice();
    return { y, transfer: [y.buffer] };
  },
  /** The compute ceiling's operands: x (T, K) and a (N, K) matrix, in a memory of their own. */
  gemm_setup({ T, N, K }) {
    scratch = new KernelMemory(module);
    const x = scratch.alloc(4 * T * K), w = scratch.alloc(4 * N * K), y = scratch.alloc(4 * T * N);
    fillWeights(scratch.f32(x, T * K), 1, 1);
    fillWeights(scratch.f32(w, N * K), 2, 1);
    scratch.gemm = { x, w, y, T, N, K };
    scratch.kernels.matmul(x, w, y, T, N, K, 0); // warm-up: the engine's optimising compiler
    return {};
  },
  gemm_run() {
    const { x, w, y, T, N, K } = scratch.gemm;
    scratch.kernels.matmul(x, w, y, T, N, K, 0);
    return {};
  },
  /** The streaming ceiling's buffer: `bytes` of ones, far larger than the caches. */
  stream_setup({ bytes }) {
    scratch = new KernelMemory(module);
    const size = Math.floor(bytes / 128) * 128;
    const ptr = scratch.alloc(size);
    scratch.f32(ptr, size / 4).fill(1);
    scratch.stream = { ptr, size };
    scratch.kernels.stream_sum(ptr, 1 << 16); // warm-up
    return { bytes: size };
  },
  stream_run() {
    const { ptr, size } = scratch.stream;
    const sum = scratch.kernels.stream_sum(ptr, size);
    if (!(sum > 0)) throw new DeviceError("kernel", "the streaming read summed nothing");
    return {};
  },
  scratch_free() {
    scratch = null;
    return {};
  },
};

self.addEventListener("message", ({ data }) => {
  try {
    const { transfer = [], ...reply } = HANDLERS[data.op](data) || {};
    self.postMessage({ ok: true, ...reply }, transfer);
  } catch (error) {
    self.postMessage({ ok: false, kind: error?.kind || "kernel", message: `${error?.name || "Error"}: ${error?.message || error}` });
  }
});
