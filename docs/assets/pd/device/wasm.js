// The WebAssembly kernels (built from hooks/demos/device_kernels.wat): which variant this browser runs,
// and one instance with its own memory. The relaxed-SIMD build (fused multiply-add) is used when the
// browser validates it, else the plain-SIMD build; a browser with neither gets the JavaScript backend.

const URLS = {
  relaxed: new URL("./kernels-relaxed.wasm", import.meta.url),
  simd: new URL("./kernels-simd.wasm", import.meta.url),
};
const PAGE_BYTES = 65536;

/** A typed failure, so the page can say which kind of thing went wrong. */
export class DeviceError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind; // "load" | "kernel" | "gpu_lost" | "memory"
  }
}

async function fetchBytes(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new DeviceError("load", `${url.pathname}: ${error?.message || error}`);
  }
  if (!response.ok) throw new DeviceError("load", `${url.pathname}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

/** {module, variant} of the fastest build this browser validates, or null when it has no WebAssembly SIMD. */
export async function loadKernels() {
  if (typeof WebAssembly !== "object") return null;
  for (const variant of ["relaxed", "simd"]) {
    const bytes = await fetchBytes(URLS[variant]);
    if (!WebAssembly.validate(bytes)) continue;
    try {
      return { module: await WebAssembly.compile(bytes), variant };
    } catch (error) {
      throw new DeviceError("load", `${URLS[variant].pathname}: ${error?.message || error}`);
    }
  }
  return null;
}

/** An instance with its own memory, and a bump allocator over it (byte offsets, 16-byte aligned). */
export class KernelMemory {
  constructor(module) {
    this.instance = new WebAssembly.Instance(module, {});
    this.kernels = this.instance.exports;
    this.memory = this.kernels.memory;
    this.used = 1024; // offset 0 stays unused: a zero pointer is never a tensor
  }

  /** `bytes` more bytes, growing the memory if needed; a browser that refuses raises a "memory" error. */
  alloc(bytes) {
    const ptr = this.used;
    this.used += Math.ceil(bytes / 16) * 16;
    const short = this.used - this.memory.buffer.byteLength;
    if (short > 0) {
      try {
        this.memory.grow(Math.ceil(short / PAGE_BYTES));
      } catch (error) {
        throw new DeviceError("memory", `could not grow WebAssembly memory to ${this.used} bytes: ${error?.message || error}`);
      }
    }
    return ptr;
  }

  /** A float32 view of n values at ptr (views are re-made after a grow detaches the old buffer). */
  f32(ptr, n) {
    return new Float32Array(this.memory.buffer, ptr, n);
  }

  get bytes() { return this.memory.buffer.byteLength; }
}
