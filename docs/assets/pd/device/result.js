// From the worker's timings to the figures the page shows. The FLOPs and bytes are the build's cost model
// (the demo JSON's `costs`); the only arithmetic here is scaling the measured subset to the whole model —
// layers by layer count, the LM head by rows — and the statistics of the repetitions, as llama-bench
// reports them: pp512 (prefill of a 512-token prompt) and tg (one decode step at that context) in tokens
// per second, median and range.
import { median } from "./ops-js.js";

/**
 * Milliseconds of the whole model from one measured pass: layers × (all / measured), head × (vocab / rows).
 * `fixedMs` is the backend's wait per submission (a GPU's round trip), paid once per pass whatever the
 * number of layers, so it is taken out before scaling and added back once.
 */
export function scaledMs(timed, layers, layersTotal, headScale, fixedMs = 0) {
  const layersMs = Math.max(0, timed.layersMs - fixedMs) * (layersTotal / layers) + fixedMs;
  const headMs = Math.max(0, timed.headMs - fixedMs) * headScale + fixedMs;
  return layersMs + headMs;
}

/** Median, least and most of a list, and how many. */
export function spread(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

function phasePoint(cost, ms, peaks) {
  const seconds = ms / 1000;
  const gflops = cost.flops / seconds / 1e9;
  const gbps = cost.bytes / seconds / 1e9;
  return { ms, flops: cost.flops, bytes: cost.bytes, gflops, gbps, intensity: cost.flops / cost.bytes,
    compute_utilization: gflops / peaks.gflops, bandwidth_utilization: gbps / peaks.gbps };
}

/** The result object the page shows, copies as text and exposes as data-pd-result. */
export function deviceResult(run) {
  const { demo, peaks, layers, vocabRows, fixedMs } = run;
  const shapes = demo.model;
  const prompt = demo.workload.prompt_tokens;
  const headScale = shapes.vocab_size / vocabRows;
  const scale = (timed) => scaledMs(timed, layers, shapes.n_layers, headScale, fixedMs);
  const prefillMs = run.prefills.map(scale);
  const decodeMs = run.decodes.map(scale);
  const ttft = median(prefillMs);
  const decodeMsPerToken = median(decodeMs);
  // Each ceiling is its own microbenchmark; a phase that beats it means the microbenchmark is wrong.
  const ceilings = { gflops: peaks.compute.gflops, gbps: peaks.stream.gbps };
  const prefill = phasePoint(demo.costs.prefill.total, ttft, ceilings);
  const decode = phasePoint(demo.costs.decode.total, decodeMsPerToken, ceilings);
  const ridge = ceilings.gflops / ceilings.gbps;
  const exceeded = [];
  if (prefill.gflops > ceilings.gflops) exceeded.push("compute");
  if (decode.gbps > ceilings.gbps) exceeded.push("stream");
  return {
    backend: run.backend,
    variant: run.variant,
    workers: run.workers,
    precision: "f32",
    adapter: run.adapter,
    software: run.software,
    mode: run.mode,
    notes: run.notes,
    peak_gflops: ceilings.gflops,
    peak_gbps: ceilings.gbps,
    gemm_shape: peaks.compute.shape,
    stream_bytes: peaks.stream.bytes,
    ceiling_runs: run.ceilingRuns,
    compute_runs: run.computeRuns,
    ceiling_exceeded: exceeded,
    fixed_wait_ms: fixedMs,
    ridge,
    prompt_tokens: prompt,
    ttft_ms: ttft,
    ttft_spread_ms: spread(prefillMs),
    prefill_ms_per_token: ttft / prompt,
    pp_tps: spread(prefillMs.map((ms) => (1000 * prompt) / ms)),
    decode_ms_per_token: decodeMsPerToken,
    tps: 1000 / decodeMsPerToken,
    tg_tps: spread(decodeMs.map((ms) => 1000 / ms)),
    decode_steps: run.decodes.length,
    prefill_repeats: run.prefills.length,
    layers_measured: layers,
    layers_total: shapes.n_layers,
    head_rows_measured: vocabRows,
    vocab_size: shapes.vocab_size,
    prefill,
    decode,
    prefill_intensity: prefill.intensity,
    decode_intensity: decode.intensity,
    prefill_ridge_ratio: prefill.intensity / ridge,
    decode_ridge_ratio: decode.intensity / ridge,
    check: run.check,
    memory_bytes: run.memoryBytes,
    elapsed_s: run.elapsedS,
  };
}
