// The measurement, off the main thread. Started by demos/device.js when the reader presses "measure";
// it posts {type: "progress"} messages and one {type: "result"} (or {type: "error", kind, message}),
// keeps nothing and sends nothing anywhere. Steps: pick a backend (a hardware GPU through WebGPU, else
// WebAssembly SIMD on every core, else one thread of JavaScript), check that its prefill and decode
// agree on a small model, measure its two ceilings with microbenchmarks of their own, then run prefill
// of the prompt (three times or more) and decode steps over as many of the model's layers as memory and
// time allow.
import { Model } from "./model.js";
import { JsOps } from "./ops-js.js";
import { lowbias32 } from "./weights.js";
import { deviceResult } from "./result.js";
import { DeviceError, loadKernels } from "./wasm.js";

const GEMM_SIZES = [128, 256, 384, 512, 768, 1024, 1536, 2048];
const MIN_GEMM_N = 512; // a slow backend's small products measure its per-call latency, not its arithmetic
const PREFILL_OVERHEAD = 1.5; // attention and element-wise work on top of the matrix products, roughly
const MAX_WORKERS = 16;

function post(message) {
  self.postMessage(message);
}

function progress(stage, fraction, detail = {}) {
  post({ type: "progress", stage, fraction: Math.max(0, Math.min(1, fraction)), ...detail });
}

/** `count` seeded token ids below `below` (the values do not change the speed). */
function seededTokens(count, below, seed) {
  return Array.from({ length: count }, (_, i) => lowbias32(seed * 7919 + i) % below);
}

/** The JavaScript backend's arena; a browser that refuses that much gets the low-memory arena instead. */
function jsOps(budgetBytes, lowBudgetBytes) {
  try {
    return new JsOps(budgetBytes);
  } catch (error) {
    if (error instanceof RangeError && lowBudgetBytes < budgetBytes) return new JsOps(lowBudgetBytes);
    throw new DeviceError("memory", String(error?.message || error));
  }
}

/** A module of this demo loaded on demand; a failure to load is a "load" failure. */
async function load(path) {
  try {
    return await import(path);
  } catch (error) {
    throw new DeviceError("load", `${path}: ${error?.message || error}`);
  }
}

/**
 * The backend: `wanted` is "auto" (a hardware GPU, else WebAssembly, else JavaScript) or one of "webgpu",
 * "wasm", "js" (the tests pin one). Auto never picks a software WebGPU adapter: on the CPU the
 * WebAssembly backend is the page's faster path. Notes say what was passed over and why.
 */
async function openBackend(wanted, budgetBytes, lowBudgetBytes, workers) {
  const notes = [];
  if ((wanted === "auto" || wanted === "webgpu") && self.navigator?.gpu) {
    try {
      const { openWebGpu } = await load("./ops-webgpu.js");
      const ops = await openWebGpu(budgetBytes, { allowSoftware: wanted === "webgpu" });
      if (ops?.name === "webgpu") return { ops, notes };
      if (ops?.skipped) notes.push("webgpu_software_skipped");
    } catch (error) {
      if (wanted === "webgpu") throw error;
      notes.push("webgpu_failed");
    }
  }
  if (wanted === "webgpu") throw new DeviceError("load", "WebGPU is not available in this browser");
  if (wanted !== "js") {
    const kernels = await loadKernels();
    if (kernels) {
      const { openWasm } = await load("./ops-wasm.js");
      return { ops: await openWasm(kernels, workers), notes };
    }
    if (wanted === "wasm") throw new DeviceError("load", "this browser has no WebAssembly SIMD");
    notes.push("no_wasm_simd");
  }
  return { ops: jsOps(budgetBytes, lowBudgetBytes), notes };
}

/** Prefill of `tokens` vs prefill of all but the last then one decode step: the last logits must agree. */
async function selfCheck(ops, shapes, check, seed) {
  const config = { ...shapes, ...check };
  const tokens = seededTokens(check.tokens, check.vocab_size, seed);
  const model = new Model(ops, config, { layers: check.n_layers, vocabRows: check.vocab_size,
    maxTokens: tokens.length, maxRows: tokens.length, seed });
  await model.build();
  await model.prefill(tokens);
  const prefillLogits = await model.readLogits();
  model.reset();
  await model.prefill(tokens.slice(0, -1));
  await model.decodeStep(tokens[tokens.length - 1]);
  const decodeLogits = await model.readLogits();
  await ops.reset();
  let diff = 0, size = 0;
  for (let i = 0; i < prefillLogits.length; i += 1) {
    diff = Math.max(diff, Math.abs(prefillLogits[i] - decodeLogits[i]));
    size = Math.max(size, Math.abs(prefillLogits[i]));
  }
  const relative = diff / Math.max(size, 1e-30);
  return { tokens, prefillLogits, decodeLogits, max_rel_diff: relative, passed: relative <= check.tolerance };
}

/**
 * Prefill's largest matrix product, (T × K) by (K × N) for a prompt of T tokens: of the four in each layer
 * (Q, K and V; the attention's output; gate and up; down), the one with the most FLOPs.
 */
function largestPrefillProduct(shapes, promptTokens) {
  const d = shapes.d_model;
  const products = [{ N: (shapes.n_heads + 2 * shapes.n_kv_heads) * shapes.head_dim, K: d },
    { N: d, K: shapes.n_heads * shapes.head_dim }, { N: 2 * shapes.d_ff, K: d }, { N: d, K: shapes.d_ff }];
  const { N, K } = products.reduce((most, p) => (p.N * p.K > most.N * most.K ? p : most));
  return { T: promptTokens, N, K };
}

/**
 * The compute ceiling of the JavaScript and WebGPU backends: square products of growing size (2n³ FLOPs each)
 * find where the kernel is fastest (small ones measure mostly a GPU's per-call latency, so sizes grow until one
 * takes the mode's time cap or the memory budget stops them); then the best of those squares and prefill's
 * largest product itself are each run up to `plan.ceiling_repeats` times within the time cap (three times at
 * least: with two, a loaded test machine's SwiftShader once gave a ceiling 3% below what prefill then reached),
 * and the best rate of any run is the ceiling. Measured only on products smaller than prefill's, it could be
 * beaten by prefill (SwiftShader's prefill beat a ceiling of 512³ squares).
 */
async function matrixProducts(ops, plan, mode, budgetBytes, fixedS, largest, onProgress) {
  const net = (seconds) => Math.max(seconds - fixedS, seconds / 100); // a GPU's fixed wait is no part of the product
  const rate = ({ T, N, K }, seconds) => (2 * T * N * K) / net(seconds) / 1e9;
  const fits = ({ T, N, K }) => 4 * (T * K + N * K + T * N) <= budgetBytes;
  let square = null;
  for (const [i, n] of GEMM_SIZES.entries()) {
    const shape = { T: n, N: n, K: n };
    if (!fits(shape)) break;
    const [seconds] = await ops.gemmTimes(shape);
    if (!square || rate(shape, seconds) > rate(square.shape, square.seconds)) square = { shape, seconds };
    onProgress((i + 1) / (GEMM_SIZES.length + 2));
    if (net(seconds) > mode.gemm_cap_s && n >= MIN_GEMM_N) break;
  }
  let best = { gflops: 0, shape: null, runs: 0 };
  const candidates = [square && square.shape, fits(largest) && largest].filter(Boolean);
  for (const shape of candidates) {
    // the kernel is compiled and warm from the squares: every run is timed
    const times = await ops.gemmTimes(shape, { most: plan.ceiling_repeats, least: 3, capS: mode.gemm_cap_s, warmUp: false });
    if (square && shape === square.shape) times.push(square.seconds);
    const gflops = rate(shape, Math.min(...times));
    if (gflops > best.gflops) best = { gflops, shape, runs: times.length };
    onProgress(1 - (candidates.length - 1 - candidates.indexOf(shape)) / (GEMM_SIZES.length + 2));
  }
  return best;
}

/** The compute ceiling: the backend's own microbenchmark, or `matrixProducts`. */
function computeCeiling(ops, plan, mode, budget, fixedMs, largest, onProgress) {
  return ops.computeCeiling
    ? ops.computeCeiling(plan.ceiling_repeats)
    : matrixProducts(ops, plan, mode, budget, fixedMs / 1000, largest, onProgress);
}

/** The stream ceiling: the backend's own microbenchmark, or a timed read of as much as the budget allows. */
async function streamCeiling(ops, plan, budget, lowMemory, fixedMs) {
  const wanted = lowMemory ? plan.low_memory_stream_bytes : plan.stream_bytes;
  if (ops.streamCeiling) return ops.streamCeiling(wanted, plan.least_stream_bytes, plan.ceiling_repeats);
  const bytes = Math.min(wanted, Math.floor(budget * 0.9));
  const seconds = await ops.streamSeconds(bytes, plan.ceiling_repeats);
  return { gbps: bytes / Math.max(seconds - fixedMs / 1000, seconds / 100) / 1e9, bytes };
}

/** Both ceilings, each its own microbenchmark (never raised by what a phase reached). */
async function ceilings(ops, plan, mode, budget, lowMemory, fixedMs, largest) {
  progress("compute", 0.05);
  const compute = await computeCeiling(ops, plan, mode, budget, fixedMs, largest, (f) => progress("compute", 0.05 + 0.1 * f));
  progress("bandwidth", 0.16);
  return { compute, stream: await streamCeiling(ops, plan, budget, lowMemory, fixedMs) };
}

async function measure({ demo, mode: modeName, backend, deviceMemory, workers: wantedWorkers }) {
  const started = performance.now();
  const { plan, model: shapes } = demo;
  const mode = plan.modes[modeName];
  // A mode may bring a prompt of its own, with that prompt's costs (the tests' plan: a shorter prompt); the
  // result reports what was measured.
  const workload = { ...demo.workload, prompt_tokens: mode.prompt_tokens ?? demo.workload.prompt_tokens };
  const costs = mode.costs ?? demo.costs;
  const lowMemory = Number.isFinite(deviceMemory) && deviceMemory <= 2;
  let budget = lowMemory ? plan.low_memory_budget_bytes : plan.memory_budget_bytes;
  const workers = Math.max(1, Math.min(MAX_WORKERS, wantedWorkers || self.navigator?.hardwareConcurrency || 1));
  progress("backend", 0);
  let { ops, notes } = await openBackend(backend, budget, plan.low_memory_budget_bytes, workers);
  if (ops.lowEnd) budget = Math.min(budget, plan.low_memory_budget_bytes);
  budget = Math.min(budget, ops.capacityBytes);
  if (lowMemory || budget < plan.memory_budget_bytes) notes.push("low_memory");

  progress("check", 0.02);
  let check = await selfCheck(ops, shapes, plan.check, workload.weight_seed);
  if (!check.passed && ops.name === "webgpu" && backend !== "webgpu") {
    // This GPU's results are wrong: measure on the CPU rather than show a fast wrong answer.
    ops.destroy();
    ({ ops } = await openBackend("wasm", budget, plan.low_memory_budget_bytes, workers));
    notes.push("webgpu_failed");
    check = await selfCheck(ops, shapes, plan.check, workload.weight_seed);
  }
  if (!check.passed) throw new DeviceError("kernel", `prefill and decode disagree on ${ops.name} (relative difference ${check.max_rel_diff})`);

  const fixedMs = ops.fixedWaitMs ? await ops.fixedWaitMs() : 0;
  const largest = largestPrefillProduct(shapes, workload.prompt_tokens);
  let peaks = await ceilings(ops, plan, mode, budget, lowMemory, fixedMs, largest);

  if (demo.live && ops.name === "wasm" && !mode.prompt_tokens) {
    // The published model's real weights, in their own formats, on one worker (its decode steps would wait for a
    // message round trip a layer if split): every layer and the whole LM head are measured.
    const run = await realWeights(demo, mode, workload);
    const result = deviceResult({
      demo: { ...demo, workload, costs: demo.live.costs }, backend: ops.name, variant: ops.variant || null,
      workers: ops.workers, adapter: null, software: false, notes, mode: modeName, peaks, fixedMs,
      ceilingRuns: plan.ceiling_repeats, computeRuns: peaks.compute.runs, layers: shapes.n_layers,
      vocabRows: shapes.vocab_size, prefills: run.prefills, decodes: run.decodes,
      check: { passed: check.passed, max_rel_diff: check.max_rel_diff }, memoryBytes: run.memoryBytes,
      elapsedS: (performance.now() - started) / 1000,
    });
    ops.destroy();
    return { ...result, precision: formatsLabel(demo.live.formats), weights: "real", phase_workers: 1,
      model_from_cache: run.fromCache };
  }

  // As many layers as fit the memory budget and the mode's time budget (at least one).
  const prompt = workload.prompt_tokens;
  const sizes = { vocabRows: Math.min(plan.head_rows, shapes.vocab_size), maxTokens: prompt + mode.decode_steps + 1,
    maxRows: prompt };
  let byMemory = 0;
  const most = Math.min(plan.max_layers, shapes.n_layers);
  const extra = ops.extraBytes ? ops.extraBytes(shapes, sizes) : 0;
  while (byMemory < most && Model.bytesNeeded(shapes, { ...sizes, layers: byMemory + 1 }) + extra <= budget) byMemory += 1;
  if (byMemory === 0) throw new DeviceError("memory", `not enough memory for one layer within ${budget} bytes`);
  const repeats = Math.max(3, mode.repeats);
  const prefillSeconds = PREFILL_OVERHEAD * costs.prefill.per_layer.flops / (peaks.compute.gflops * 1e9);
  const decodeSeconds = mode.decode_steps * costs.decode.per_layer.bytes / (peaks.stream.gbps * 1e9);
  const byTime = Math.max(1, Math.floor(mode.phase_budget_s / (repeats * prefillSeconds + decodeSeconds)));
  const layers = Math.min(byMemory, byTime, mode.max_layers ?? most);

  progress("build", 0.2, { layers });
  const model = new Model(ops, shapes, { ...sizes, layers, seed: workload.weight_seed });
  await model.build();
  const memoryBytes = ops.peakBytes;
  const tokens = seededTokens(prompt + mode.decode_steps, sizes.vocabRows, workload.weight_seed + 1);
  const prefills = [];
  for (let r = 0; r < repeats; r += 1) {
    progress("prefill", 0.25 + 0.55 * r / repeats, { layers, repeat: r + 1, repeats, tokens: prompt });
    model.reset();
    prefills.push(await model.prefill(tokens.slice(0, prompt)));
  }
  const decodes = [];
  for (let s = 0; s < mode.decode_steps; s += 1) {
    decodes.push(await model.decodeStep(tokens[prompt + s]));
    progress("decode", 0.8 + 0.2 * (s + 1) / mode.decode_steps, { layers });
  }
  const resultOn = (ceilingsMeasured) => deviceResult({
    demo: { ...demo, workload, costs }, backend: ops.name, variant: ops.variant || null, workers: ops.name === "wasm" ? ops.workers : 1,
    adapter: ops.adapterInfo || null, software: ops.software === true || ops.name === "js", notes, mode: modeName,
    peaks: ceilingsMeasured, fixedMs, ceilingRuns: plan.ceiling_repeats, computeRuns: ceilingsMeasured.compute.runs,
    layers, vocabRows: sizes.vocabRows, prefills, decodes, check: { passed: check.passed, max_rel_diff: check.max_rel_diff },
    memoryBytes, elapsedS: (performance.now() - started) / 1000,
  });
  let result = resultOn(peaks);
  if (result.ceiling_exceeded.length) {
    // A ceiling measured while something else held the processor (on a loaded test machine, SwiftShader's compute
    // ceiling came out 6% under the prefill that followed) is measured once more after the phases, the model's
    // tensors given back first, and the better of the two counts, as the build's roofline keeps the best of its
    // peaks before and after its phases. What a phase reached never raises it; if the second run fails, the first
    // stands (and the page says the ceiling was beaten).
    try {
      ops.reset();
      if (result.ceiling_exceeded.includes("compute")) {
        const again = await computeCeiling(ops, plan, mode, budget, fixedMs, largest, () => {});
        if (again.gflops > peaks.compute.gflops) peaks = { ...peaks, compute: { ...again, runs: again.runs + peaks.compute.runs } };
      }
      if (result.ceiling_exceeded.includes("stream")) {
        const again = await streamCeiling(ops, plan, budget, lowMemory, fixedMs);
        if (again.gbps > peaks.stream.gbps) peaks = { ...peaks, stream: again };
      }
      result = resultOn(peaks);
    } catch {
      notes.push("ceiling_not_remeasured");
    }
  }
  ops.destroy();
  return result;
}

/** "Q4_1 + Q8_0 + F32": the formats the model's bytes are held in, most bytes first. */
function formatsLabel(formats) {
  return Object.entries(formats).sort((a, b) => b[1] - a[1]).map(([name]) => name.toUpperCase()).join(" + ");
}

/**
 * Prefill of a prompt of seeded token ids (`repeats` times, the cache emptied between) and decode steps after it,
 * on the published model (Cache Storage first, as the conversation demo keeps it).
 */
async function realWeights(demo, mode, workload) {
  const kernels = await loadKernels();
  const { loadWeights } = await load("./live-model.js");
  const { checkedFile, openStore } = await load("./live-store.js");
  const base = new URL("../model/", import.meta.url);
  const store = await openStore();
  progress("weights", 0.2, { loaded: 0, total: demo.live.download_bytes });
  const name = demo.live.manifest;
  const digest = name.replace(/^manifest-/, "").replace(/\.json$/, "");
  const manifest = JSON.parse(new TextDecoder().decode((await checkedFile(store, new URL(name, base), digest, 0)).buffer));
  let done = 0;
  const { model, fromCache } = await loadWeights(kernels, manifest, base, store, (n) => {
    done += n;
    progress("weights", 0.2 + 0.1 * done / manifest.file_bytes, { loaded: done, total: manifest.file_bytes });
  });
  const prompt = workload.prompt_tokens;
  const repeats = Math.max(3, mode.repeats);
  model.prepare(prompt + mode.decode_steps + 1, prompt);
  const tokens = seededTokens(prompt + mode.decode_steps, manifest.config.vocab_size, workload.weight_seed + 1);
  const prefills = [];
  for (let r = 0; r < repeats; r += 1) {
    progress("prefill", 0.3 + 0.5 * r / repeats, { layers: manifest.config.n_layers, repeat: r + 1, repeats, tokens: prompt });
    model.length = 0;
    const start = performance.now();
    model.forward(tokens.slice(0, prompt));
    prefills.push({ layersMs: performance.now() - start, headMs: 0 });
  }
  const decodes = [];
  for (let s = 0; s < mode.decode_steps; s += 1) {
    const start = performance.now();
    model.forward([tokens[prompt + s]]);
    decodes.push({ layersMs: performance.now() - start, headMs: 0 });
    progress("decode", 0.8 + 0.2 * (s + 1) / mode.decode_steps, { layers: manifest.config.n_layers });
  }
  return { prefills, decodes, memoryBytes: model.mem.bytes, fromCache };
}

function failure(error) {
  const kind = error?.kind || "kernel"; // a RuntimeError from a kernel, a GPU validation error…
  return { type: "error", kind, message: String(error?.message || error) };
}

self.addEventListener("message", async ({ data }) => {
  try {
    if (data?.type === "measure") {
      post({ type: "result", result: await measure(data) });
    } else if (data?.type === "check") {
      // For the tests: the small model's logits on a chosen backend, compared with numpy there.
      const { ops } = await openBackend(data.backend, 16e6, 16e6, data.workers || 2);
      const check = await selfCheck(ops, data.shapes, data.check, data.seed);
      ops.destroy();
      post({ type: "check", backend: ops.name, workers: ops.workers || 1, variant: ops.variant || null, ...check,
        prefillLogits: Array.from(check.prefillLogits), decodeLogits: Array.from(check.decodeLogits) });
    }
  } catch (error) {
    post(failure(error));
  }
});

