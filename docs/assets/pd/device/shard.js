// One of the measurement's compute workers: it holds its share of every weight matrix (a contiguous
// block of output rows) in its own WebAssembly memory and multiplies the inputs the coordinator
// (ops-wasm.js) sends by it. No memory is shared between workers: inputs come in and results go back
// as copies, so no cross-origin isolation is needed. It also runs its share of the two ceilings.
import { DeviceError, KernelMemory } from "./wasm.js";
import { fillWeights } from "./weights.js";

let module = null;
let main = null; // weights and scratch
let scratch = null; // the ceilings' buffers, dropped after each
const matrices = new Map(); // id → {ptr, rows, cols}
let io = { ptr: 0, bytes: 0 };

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
