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
  const prefill = phasePoint(demo.costs.prefill.total, ttft, peaks);
  const decode = phasePoint(demo.costs.decode.total, decodeMs, peaks);
  return {
    backend: run.backend,
    adapter: run.adapter,
    software: run.software,
    mode: run.mode,
    notes: run.notes,
    peak_gflops: peaks.gflops,
    peak_gbps: peaks.gbps,
    gemm_n: peaks.gemmN,
    stream_bytes: peaks.streamBytes,
    ridge: peaks.gflops / peaks.gbps,
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
