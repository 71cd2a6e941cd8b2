// The WebGPU backend: the same operations as ops-js.js, queued as compute-shader dispatches into one
// compute pass per timed segment; `finish()` submits it and waits for the GPU. Weights are filled on the
// GPU by a hash shader (no copy of them in the worker's memory). Buffers are counted against the budget.
import { KERNELS, MAX_ATTENTION_KEYS, MAX_HEAD_DIM } from "./kernels.wgsl.js";
import { median } from "./ops-js.js";
import { DeviceError } from "./wasm.js";

const SLOT_BYTES = 256; // minUniformBufferOffsetAlignment's default
const SLOTS = 1024;
const MAX_TOKENS_IN_PASS = 4096;
const MAX_GROUPS = 65535;
const STORAGE = 0x80 | 0x08 | 0x04; // GPUBufferUsage.STORAGE | COPY_DST | COPY_SRC, workers may lack the enum

/** Whether an adapter runs on the CPU: a fallback adapter, or one whose description names a software rasteriser. */
export function isSoftwareAdapter(adapter) {
  const info = adapter.info || {};
  const text = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ");
  return Boolean(info.isFallbackAdapter || adapter.isFallbackAdapter || /swiftshader|llvmpipe|software|warp|\bcpu\b/i.test(text));
}

/**
 * A WebGPU backend on this browser's adapter; null when there is none; {skipped: true} for a software
 * adapter unless `allowSoftware` (auto mode never measures a CPU through a GPU emulator).
 */
export async function openWebGpu(budgetBytes, { allowSoftware = false } = {}) {
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return null;
  if (isSoftwareAdapter(adapter) && !allowSoftware) return { skipped: true };
  const device = await adapter.requestDevice();
  const ops = new WebGpuOps(adapter, device, budgetBytes);
  await ops.compile();
  return ops;
}

export class WebGpuOps {
  constructor(adapter, device, budgetBytes) {
    this.name = "webgpu";
    this.device = device;
    const info = adapter.info || {};
    const text = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ");
    // A fallback adapter (SwiftShader here) runs the shaders on the CPU: say so, never call it a GPU figure.
    this.software = isSoftwareAdapter(adapter);
    // A lost device (driver reset, another tab's demand) fails the run with its reason, never hangs it.
    this.lost = device.lost.then((lost) => { throw new DeviceError("gpu_lost", lost.message || lost.reason || "device lost"); });
    this.lost.catch(() => {});
    this.adapterInfo = { vendor: info.vendor || "", architecture: info.architecture || "", description: text, fallback: this.software };
    // Limits under WebGPU's defaults mark a small GPU (compatibility mode, older phones): fewer layers.
    this.lowEnd = adapter.limits.maxBufferSize < 268435456 || adapter.limits.maxStorageBufferBindingSize < 134217728;
    const limits = device.limits;
    this.capacityBytes = Math.min(budgetBytes, limits.maxBufferSize * 4, limits.maxStorageBufferBindingSize * 4);
    this.maxBinding = limits.maxStorageBufferBindingSize;
    this.allocatedBytes = 0;
    this.peakBytes = 0;
    this.nextId = 0;
    this.tracked = new Set();
    this.params = device.createBuffer({ size: SLOT_BYTES * SLOTS, usage: 0x40 | 0x08 }); // UNIFORM | COPY_DST
    this.paramBytes = new ArrayBuffer(SLOT_BYTES * SLOTS);
    this.tokens = device.createBuffer({ size: 4 * MAX_TOKENS_IN_PASS, usage: STORAGE });
    this.bindGroups = new Map();
    this.slot = 0;
    this.encoder = null;
    this.pass = null;
  }

  async compile() {
    this.pipelines = {};
    await Promise.all(Object.entries(KERNELS).map(async ([name, code]) => {
      const module = this.device.createShaderModule({ code, label: name });
      this.pipelines[name] = await this.device.createComputePipelineAsync({
        layout: "auto", compute: { module, entryPoint: "main" }, label: name });
    }));
  }

  buffer(n) {
    const size = Math.max(16, Math.ceil((4 * n) / 16) * 16);
    if (size > this.maxBinding) throw new Error(`tensor of ${size} bytes exceeds this GPU's binding limit ${this.maxBinding}`);
    if (this.allocatedBytes + size > this.capacityBytes) throw new Error(`GPU budget full: ${this.allocatedBytes + size} > ${this.capacityBytes} bytes`);
    const buffer = this.device.createBuffer({ size, usage: STORAGE });
    const handle = { buffer, n, size, id: this.nextId++ };
    this.tracked.add(handle);
    this.allocatedBytes += size;
    this.peakBytes = Math.max(this.peakBytes, this.allocatedBytes);
    return handle;
  }

  /** Destroy every tensor (their memory is freed at once, unlike a garbage-collected array). */
  reset() {
    for (const handle of this.tracked) handle.buffer.destroy();
    this.tracked.clear();
    this.bindGroups.clear();
    this.allocatedBytes = 0;
  }

  destroy() {
    this.reset();
    this.device.destroy();
  }

  zeros(n) { return this.buffer(n); } // WebGPU buffers start zeroed
  ones(n) {
    const handle = this.buffer(n);
    this.device.queue.writeBuffer(handle.buffer, 0, new Float32Array(n).fill(1));
    return handle;
  }

  matrix(rows, cols, key, scale) { return this.weights(rows * cols, key, scale); }

  weights(n, key, scale) {
    const handle = this.buffer(n);
    this.run("fill", [handle], [n, key, 0, 0], [Math.fround(2 * scale)], [Math.min(MAX_GROUPS, Math.ceil(n / 256))]);
    return handle;
  }

  /** Queue one dispatch: parameters into the next 256-byte slot, bind group reused when the pass repeats. */
  run(kernel, tensors, u32s, f32s, groups) {
    if (this.slot >= SLOTS) throw new Error("too many dispatches in one segment");
    const view = new DataView(this.paramBytes, this.slot * SLOT_BYTES, 64);
    u32s.forEach((value, i) => view.setUint32(4 * i, value >>> 0, true));
    f32s.forEach((value, i) => view.setFloat32(4 * (u32s.length + i), value, true));
    const key = `${this.slot}|${kernel}|${tensors.map((t) => t.id ?? t.label).join(",")}`;
    let group = this.bindGroups.get(key);
    if (!group) {
      const entries = [{ binding: 0, resource: { buffer: this.params, offset: this.slot * SLOT_BYTES, size: 64 } },
        ...tensors.map((t, i) => ({ binding: i + 1, resource: { buffer: t.buffer } }))];
      group = this.device.createBindGroup({ layout: this.pipelines[kernel].getBindGroupLayout(0), entries });
      this.bindGroups.set(key, group);
    }
    if (!this.pass) {
      this.encoder = this.device.createCommandEncoder();
      this.pass = this.encoder.beginComputePass();
    }
    this.pass.setPipeline(this.pipelines[kernel]);
    this.pass.setBindGroup(0, group);
    this.pass.dispatchWorkgroups(...groups);
    this.slot += 1;
  }

  /** Submit what was queued and wait until the GPU has done it. */
  async finish() {
    if (this.pass) {
      this.pass.end();
      this.device.queue.writeBuffer(this.params, 0, this.paramBytes, 0, this.slot * SLOT_BYTES);
      this.device.queue.submit([this.encoder.finish()]);
      this.pass = null;
      this.encoder = null;
      this.slot = 0;
    }
    await Promise.race([this.device.queue.onSubmittedWorkDone(), this.lost]);
  }

  /**
   * The fixed wait of one submission (an empty command buffer, submitted and waited for), median of
   * seven: paid once per timed pass, so the result does not multiply it by the layers it scales.
   */
  async fixedWaitMs() {
    const times = [];
    for (let i = 0; i < 7; i += 1) {
      const start = performance.now();
      this.device.queue.submit([this.device.createCommandEncoder().finish()]);
      await Promise.race([this.device.queue.onSubmittedWorkDone(), this.lost]);
      times.push(performance.now() - start);
    }
    return median(times);
  }

  async read(handle, n) {
    await this.finish();
    const staging = this.device.createBuffer({ size: handle.size, usage: 0x01 | 0x08 }); // MAP_READ | COPY_DST
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(handle.buffer, 0, staging, 0, handle.size);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(1); // GPUMapMode.READ
    const values = new Float32Array(staging.getMappedRange().slice(0, 4 * n));
    staging.unmap();
    staging.destroy();
    return values;
  }

  ropeTable(maxTokens, hd, theta) {
    const half = hd / 2;
    const cos = new Float32Array(maxTokens * half);
    const sin = new Float32Array(maxTokens * half);
    for (let i = 0; i < half; i += 1) {
      const invFreq = 1 / theta ** ((2 * i) / hd);
      for (let pos = 0; pos < maxTokens; pos += 1) {
        cos[pos * half + i] = Math.cos(pos * invFreq);
        sin[pos * half + i] = Math.sin(pos * invFreq);
      }
    }
    this.cos = this.buffer(cos.length);
    this.sin = this.buffer(sin.length);
    this.device.queue.writeBuffer(this.cos.buffer, 0, cos);
    this.device.queue.writeBuffer(this.sin.buffer, 0, sin);
  }

  embed(table, tokens, x, d) {
    if (tokens.length > MAX_TOKENS_IN_PASS) throw new Error(`at most ${MAX_TOKENS_IN_PASS} tokens in one pass`);
    this.device.queue.writeBuffer(this.tokens, 0, Uint32Array.from(tokens));
    this.run("embed", [{ buffer: this.tokens, label: "tokens" }, table, x], [tokens.length, d], [], [tokens.length]);
  }

  rmsnorm(x, w, y, rows, d, eps, row0) {
    this.run("rmsnorm", [x, w, y], [rows, d, row0, 0], [eps], [rows]);
  }

  matmul(x, w, y, T, N, K, accumulate) {
    if (T === 1) {
      if (K % 4) throw new Error(`the matrix-vector kernel reads vec4s: K = ${K} is not a multiple of 4`);
      const groups = Math.ceil(N / 8);
      this.run("matvec", [x, w, y], [T, N, K, accumulate ? 1 : 0], [], [Math.min(groups, MAX_GROUPS), Math.ceil(groups / MAX_GROUPS)]);
    } else {
      this.run("matmul", [x, w, y], [T, N, K, accumulate ? 1 : 0], [], [Math.ceil(N / 64), Math.ceil(T / 64)]);
    }
  }

  rope(qkv, rows, heads, stride, hd, pos0) {
    this.run("rope", [qkv, this.cos, this.sin], [rows, heads, stride, hd, pos0], [], [Math.ceil((rows * heads * hd) / 2 / 64)]);
  }

  kvWrite(qkv, k, v, rows, pos0, dims, maxTokens) {
    this.run("kvwrite", [qkv, k, v], [rows, pos0, dims.q, dims.kvDim, dims.hd, dims.qkv, maxTokens], [],
      [Math.ceil((rows * dims.kvDim) / 64)]);
  }

  attention(qkv, k, v, out, rows, pos0, dims, maxTokens) {
    if (pos0 + rows > MAX_ATTENTION_KEYS || dims.hd > MAX_HEAD_DIM) throw new Error("attention kernel limits exceeded");
    this.run("attention", [qkv, k, v, out], [rows, pos0, dims.h, dims.kv, dims.hd, dims.q, dims.qkv, maxTokens],
      [Math.fround(1 / Math.sqrt(dims.hd))], [rows, dims.h]);
  }

  swiglu(gateUp, hidden, rows, ff) {
    this.run("swiglu", [gateUp, hidden], [rows, ff], [], [Math.ceil((rows * ff) / 64)]);
  }

  // --- the device's ceilings, as this backend reaches them ----------------------------------------

  /** As ops-js.js's: each run's seconds of a (T × K) by (K × N) product, the fills done before the first. */
  async gemmTimes({ T, N, K }, { most = 1, least = 1, capS = Infinity, warmUp = true } = {}) {
    const a = this.weights(T * K, 1, 1);
    const b = this.weights(N * K, 2, 1);
    const c = this.zeros(T * N);
    if (warmUp) this.matmul(a, b, c, T, N, K, false);
    await this.finish(); // the fills (and the warm-up)
    const times = [];
    for (let total = 0; times.length < most && (times.length < least || total < capS);) {
      const start = performance.now();
      this.matmul(a, b, c, T, N, K, false);
      await this.finish();
      times.push((performance.now() - start) / 1000);
      total += times[times.length - 1];
    }
    this.reset();
    return times;
  }

  async streamSeconds(bytes, repeats) {
    const n = Math.floor(bytes / 16) * 4;
    const data = this.weights(n, 3, 1);
    const groups = 1024;
    const sums = this.zeros(groups * 256);
    this.run("stream", [data, sums], [n / 4], [], [groups]);
    await this.finish(); // warm-up
    const times = [];
    for (let r = 0; r < repeats; r += 1) {
      const start = performance.now();
      this.run("stream", [data, sums], [n / 4], [], [groups]);
      await this.finish();
      times.push((performance.now() - start) / 1000);
    }
    this.reset();
    return Math.min(...times); // the best run, as every ceiling
  }
}
