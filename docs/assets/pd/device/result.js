// From the worker's timings to the figures the page shows. The FLOPs and bytes are the build's cost model
// (the demo JSON's `costs`: one layer's share and the share outside the layers); the only arithmetic here
// is scaling the measured subset to the whole model — layers by layer count, the LM head by rows.

/** Milliseconds of the whole model from the measured subset: layers × (all / measured), head × (vocab / rows). */
export function scaledMs(timed, layers, layersTotal, headScale) {
  return timed.layersMs * (layersTotal / layers) + timed.headMs * headScale;
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
  const { demo, peaks, layers, vocabRows } = run;
  const shapes = demo.model;
  const prompt = demo.workload.prompt_tokens;
  const headScale = shapes.vocab_size / vocabRows;
  const ttft = scaledMs(run.prefill, layers, shapes.n_layers, headScale);
  const decodeMs = scaledMs(run.decode, layers, shapes.n_layers, headScale);
  // A ceiling is the best rate seen on this device: when the model's own phase beat the benchmark (a slow
  // device stops the benchmark's products early), that phase's rate is the ceiling, and the label says so.
  const prefillCost = demo.costs.prefill.total;
  const decodeCost = demo.costs.decode.total;
  const reached = { gflops: prefillCost.flops / ttft / 1e6, gbps: decodeCost.bytes / decodeMs / 1e6 };
  const ceilings = { gflops: Math.max(peaks.gflops, reached.gflops), gbps: Math.max(peaks.gbps, reached.gbps) };
  const prefill = phasePoint(prefillCost, ttft, ceilings);
  const decode = phasePoint(decodeCost, decodeMs, ceilings);
  return {
    backend: run.backend,
    adapter: run.adapter,
    software: run.software,
    mode: run.mode,
    notes: run.notes,
    peak_gflops: ceilings.gflops,
    peak_gbps: ceilings.gbps,
    peak_gflops_from: reached.gflops > peaks.gflops ? "prefill" : "matrix_product",
    peak_gbps_from: reached.gbps > peaks.gbps ? "decode" : "stream",
    gemm_n: peaks.gemmN,
    stream_bytes: peaks.streamBytes,
    ridge: ceilings.gflops / ceilings.gbps,
    prompt_tokens: prompt,
    ttft_ms: ttft,
    prefill_ms_per_token: ttft / prompt,
    decode_ms_per_token: decodeMs,
    tps: 1000 / decodeMs,
    decode_steps: run.decodeSteps,
    prefill_repeats: run.prefillRepeats,
    layers_measured: layers,
    layers_total: shapes.n_layers,
    head_rows_measured: vocabRows,
    vocab_size: shapes.vocab_size,
    prefill,
    decode,
    prefill_intensity: prefill.intensity,
    decode_intensity: decode.intensity,
    check: run.check,
    memory_bytes: run.memoryBytes,
    elapsed_s: run.elapsedS,
  };
}
