// The measurement, off the main thread. Started by demos/device.js when the reader presses "measure";
// it posts {type: "progress"} messages and one {type: "result"} (or {type: "error"}), keeps nothing and
// sends nothing anywhere. Steps: pick a backend (WebGPU if an adapter is there, else JavaScript), check
// that its prefill and decode agree on a small model, measure the device's two ceilings, then run
// prefill of the prompt and decode steps over as many of the model's layers as memory and time allow.
import { Model } from "./model.js";
import { JsOps, median } from "./ops-js.js";
import { lowbias32 } from "./weights.js";
import { deviceResult } from "./result.js";

const GEMM_SIZES = [128, 256, 384, 512, 768, 1024, 1536, 2048];
const PREFILL_OVERHEAD = 1.5; // attention and element-wise work on top of the matrix products, roughly

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
    throw error;
  }
}

async function openBackend(wanted, budgetBytes, lowBudgetBytes = budgetBytes) {
  if (wanted !== "js" && self.navigator?.gpu) {
    try {
      const { openWebGpu } = await import("./ops-webgpu.js");
      const ops = await openWebGpu(budgetBytes);
      if (ops) return { ops, fellBack: null };
    } catch (error) {
      return { ops: jsOps(budgetBytes, lowBudgetBytes), fellBack: String(error?.message || error) };
    }
  }
  if (wanted === "webgpu") throw new Error("WebGPU is not available in this browser");
  return { ops: jsOps(budgetBytes, lowBudgetBytes), fellBack: null };
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
  ops.reset();
  let diff = 0, size = 0;
  for (let i = 0; i < prefillLogits.length; i += 1) {
    diff = Math.max(diff, Math.abs(prefillLogits[i] - decodeLogits[i]));
    size = Math.max(size, Math.abs(prefillLogits[i]));
  }
  const relative = diff / Math.max(size, 1e-30);
  return { tokens, prefillLogits, decodeLogits, max_rel_diff: relative, passed: relative <= check.tolerance };
}

/**
 * The device's compute ceiling: products of growing size (2n³ FLOPs each), the best rate kept. Small ones
 * measure mostly the backend's per-call latency (a GPU submission), so sizes grow until one takes the
 * mode's time cap or the memory budget stops them.
 */
async function measureCompute(ops, mode, budgetBytes, onProgress) {
  let best = { n: 0, gflops: 0 };
  for (const [i, n] of GEMM_SIZES.entries()) {
    if (3 * n * n * 4 > budgetBytes) break;
    const seconds = await ops.gemmSeconds(n, 1);
    const gflops = (2 * n ** 3) / seconds / 1e9;
    if (gflops > best.gflops) best = { n, gflops };
    onProgress((i + 1) / GEMM_SIZES.length);
    if (seconds > mode.gemm_cap_s) break;
  }
  if (mode.repeats > 1) {
    const seconds = await ops.gemmSeconds(best.n, mode.repeats);
    best.gflops = Math.max(best.gflops, (2 * best.n ** 3) / seconds / 1e9);
  }
  return best;
}

async function measure({ demo, mode: modeName, backend, deviceMemory }) {
  const started = performance.now();
  const { plan, model: shapes, costs, workload } = demo;
  const mode = plan.modes[modeName];
  const lowMemory = Number.isFinite(deviceMemory) && deviceMemory <= 2;
  let budget = lowMemory ? plan.low_memory_budget_bytes : plan.memory_budget_bytes;
  progress("backend", 0);
  let { ops, fellBack } = await openBackend(backend, budget, plan.low_memory_budget_bytes);
  if (ops.lowEnd) budget = Math.min(budget, plan.low_memory_budget_bytes);
  budget = Math.min(budget, ops.capacityBytes);
  const notes = [];
  if (fellBack) notes.push("webgpu_failed");
  if (lowMemory || budget < plan.memory_budget_bytes) notes.push("low_memory");

  progress("check", 0.02);
  let check = await selfCheck(ops, shapes, plan.check, workload.weight_seed);
  if (!check.passed && ops.name === "webgpu" && backend !== "webgpu") {
    // This GPU's results are wrong: measure with JavaScript rather than show a fast wrong answer.
    ops.destroy();
    ({ ops } = await openBackend("js", budget, plan.low_memory_budget_bytes));
    notes.push("webgpu_failed");
    check = await selfCheck(ops, shapes, plan.check, workload.weight_seed);
  }
  if (!check.passed) throw new Error(`prefill and decode disagree on ${ops.name} (relative difference ${check.max_rel_diff})`);

  const compute = await measureCompute(ops, mode, budget, (f) => progress("compute", 0.05 + 0.1 * f));
  const streamBytes = Math.min(plan.stream_bytes, Math.floor(budget * 0.9));
  progress("bandwidth", 0.16);
  const streamSeconds = await ops.streamSeconds(streamBytes, Math.max(3, mode.repeats));
  const gbps = streamBytes / streamSeconds / 1e9;

  // As many layers as fit the memory budget and the mode's time budget (at least one).
  const prompt = workload.prompt_tokens;
  const sizes = { vocabRows: Math.min(plan.head_rows, shapes.vocab_size), maxTokens: prompt + mode.decode_steps + 1,
    maxRows: prompt };
  let byMemory = 0;
  const most = Math.min(plan.max_layers, shapes.n_layers);
  while (byMemory < most && Model.bytesNeeded(shapes, { ...sizes, layers: byMemory + 1 }) <= budget) byMemory += 1;
  if (byMemory === 0) throw new Error(`not enough memory for one layer within ${budget} bytes`);
  // A slow device repeats prefill fewer times before it measures fewer layers (one layer, once, at least).
  const prefillSeconds = PREFILL_OVERHEAD * costs.prefill.per_layer.flops / (compute.gflops * 1e9);
  const decodeSeconds = mode.decode_steps * costs.decode.per_layer.bytes / (gbps * 1e9);
  const repeats = Math.max(1, Math.min(mode.repeats, Math.floor((mode.phase_budget_s - decodeSeconds) / prefillSeconds)));
  const byTime = Math.max(1, Math.floor(mode.phase_budget_s / (repeats * prefillSeconds + decodeSeconds)));
  const layers = Math.min(byMemory, byTime);

  progress("build", 0.2, { layers });
  const model = new Model(ops, shapes, { ...sizes, layers, seed: workload.weight_seed });
  await model.build();
  const memoryBytes = ops.peakBytes;
  const tokens = seededTokens(prompt + mode.decode_steps, sizes.vocabRows, workload.weight_seed + 1);
  const prefills = [];
  for (let r = 0; r < repeats; r += 1) {
    progress("prefill", 0.25 + 0.55 * r / repeats, { layers });
    model.reset();
    prefills.push(await model.prefill(tokens.slice(0, prompt)));
  }
  const decodes = [];
  for (let s = 0; s < mode.decode_steps; s += 1) {
    decodes.push(await model.decodeStep(tokens[prompt + s]));
    progress("decode", 0.8 + 0.2 * (s + 1) / mode.decode_steps, { layers });
  }
  ops.destroy();
  const timed = (runs) => ({ layersMs: median(runs.map((r) => r.layersMs)), headMs: median(runs.map((r) => r.headMs)) });
  return deviceResult({
    demo, backend: ops.name, adapter: ops.adapterInfo || null, software: ops.software !== false, notes,
    mode: modeName, peaks: { gflops: compute.gflops, gemmN: compute.n, gbps, streamBytes },
    layers, vocabRows: sizes.vocabRows, prefill: timed(prefills), decode: timed(decodes),
    decodeSteps: mode.decode_steps, prefillRepeats: repeats, check: { passed: check.passed, max_rel_diff: check.max_rel_diff },
    memoryBytes, elapsedS: (performance.now() - started) / 1000,
  });
}

self.addEventListener("message", async ({ data }) => {
  try {
    if (data?.type === "measure") {
      post({ type: "result", result: await measure(data) });
    } else if (data?.type === "check") {
      // For the tests: the small model's logits on a chosen backend, compared with numpy there.
      const { ops } = await openBackend(data.backend, 16e6);
      const check = await selfCheck(ops, data.shapes, data.check, data.seed);
      ops.destroy();
      post({ type: "check", backend: ops.name, ...check,
        prefillLogits: Array.from(check.prefillLogits), decodeLogits: Array.from(check.decodeLogits) });
    }
  } catch (error) {
    post({ type: "error", message: String(error?.message || error) });
  }
});
