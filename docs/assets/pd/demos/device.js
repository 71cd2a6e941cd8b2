// device (bottleneck): measure prefill and decode on the reader's own device. Nothing runs until the
// reader presses the button: then a Web Worker (../device/worker.js, loaded only then) measures this
// device's compute and bandwidth ceilings and a transformer of SmolLM2-135M's exact shapes, and this module
// shows the result beside the build machine's — as read-outs, sentences chosen by the JSON's conditions,
// a roofline, a table and a text to copy. The result is kept nowhere and sent nowhere.
import { h, setText } from "../dom.js";
import { prepareStage } from "../stage.js";
import { afterPaint } from "../schedule.js";
import { chosenClaims } from "../device/claims.js";
import { rooflineSvg } from "../device/chart.js";

const WORKER_URL = new URL("../device/worker.js", import.meta.url);
const STYLE_URL = new URL("../device/device.css", import.meta.url);
const MODES = ["quick", "full"];
const KINDS = ["load", "kernel", "gpu_lost", "memory"]; // the worker's failure kinds; "timeout" is the page's own

/** The stylesheet of this demo, once per page; resolves when it applies (so nothing shows unstyled). */
function loadStyle() {
  const existing = document.querySelector(`link[href="${STYLE_URL.href}"]`);
  if (existing) return Promise.resolve();
  return new Promise((resolve) => {
    const link = h("link", { rel: "stylesheet", href: STYLE_URL.href });
    link.addEventListener("load", resolve);
    link.addEventListener("error", resolve);
    document.head.append(link);
  });
}

function backendLabel(result, text) {
  if (result.backend === "webgpu") {
    const adapter = result.adapter?.description || "WebGPU";
    return text(result.software ? "device.backend_webgpu_software" : "device.backend_webgpu", { adapter });
  }
  if (result.backend === "wasm") {
    return text(result.variant === "relaxed" ? "device.backend_wasm_relaxed" : "device.backend_wasm", { workers: result.workers });
  }
  return text("device.backend_js");
}

/** "What this page's WebAssembly reaches on N cores of this device:" — never "this device's peak". */
function reachLabel(result, text) {
  if (result.backend === "webgpu") return text("device.reach_webgpu", { adapter: result.adapter?.description || "WebGPU" });
  return result.backend === "wasm" ? text("device.reach_wasm", { workers: result.workers }) : text("device.reach_js");
}

function rangeText(range, text, format) {
  return text("device.range_value", { median: format.number(range.median), min: format.number(range.min),
    max: format.number(range.max), n: range.n });
}

/** The rows of the comparison: [label, this device, build machine]. */
function comparisonRows(result, build, text, format) {
  const ms = (v) => format.ms(v);
  const pct = (v) => format.percent(v);
  const tokens = format.number(result.prompt_tokens, 0);
  return [
    [text("device.row_backend"), backendLabel(result, text), text("device.build_backend")],
    [text("device.peak_compute"), `${format.number(result.peak_gflops)} GFLOP/s`, `${format.number(build.peak_gflops)} GFLOP/s`],
    [text("device.peak_bandwidth"), `${format.number(result.peak_gbps)} GB/s`, `${format.number(build.peak_gbps)} GB/s`],
    [text("device.pp_row", { tokens }), rangeText(result.pp_tps, text, format), format.number(1000 * build.prompt_tokens / build.ttft_ms)],
    [text("device.tg_row", { tokens }), rangeText(result.tg_tps, text, format), format.number(build.tps)],
    [text("device.ttft_at", { tokens }), ms(result.ttft_ms), ms(build.ttft_ms)],
    [text("device.prefill_per_token"), ms(result.prefill_ms_per_token), ms(build.ttft_ms / build.prompt_tokens)],
    [text("common.ms_per_token"), ms(result.decode_ms_per_token), ms(build.decode_ms_per_token)],
    ...["prefill", "decode"].flatMap((phase) => ["compute", "bandwidth"].map((ceiling) => [
      text(`device.${phase}_${ceiling}_util`), pct(result[phase][`${ceiling}_utilization`]),
      pct(build[phase][`${ceiling}_utilization`])])),
    [text("device.row_layers"), text("device.layers_value", { layers: result.layers_measured, total: result.layers_total }),
      text("device.build_layers")],
  ];
}

/** Values the claims' conditions may name, and the figures their sentences quote. */
function claimValues(result, build) {
  return { ...Object.fromEntries(Object.entries(result).filter(([, v]) => typeof v === "number" || typeof v === "boolean")),
    build_ttft_ms: build.ttft_ms, build_decode_ms_per_token: build.decode_ms_per_token,
    build_same_shapes: Boolean(build.same_shapes) };
}

function claimVars(result, build, text, format, margin) {
  return { decode_intensity: format.number(result.decode_intensity), prefill_intensity: format.number(result.prefill_intensity),
    ridge: format.number(result.ridge), margin: format.number(margin, 0), software: text(`device.software_${result.backend}`),
    ratio: format.number(Math.max(result.ttft_ms / build.ttft_ms, build.ttft_ms / result.ttft_ms)) };
}

function labels(result, build, text, format, live) {
  const lines = result.weights === "real"
    ? [text("live.device_weights", { model: live.model, formats: result.precision, workers: result.workers })]
    : [text("device.label_weights"),
      text("device.label_subset", { layers: result.layers_measured, total: result.layers_total,
        rows: format.number(result.head_rows_measured, 0), vocab: format.number(result.vocab_size, 0) })];
  const shape = result.gemm_shape;
  lines.push(text("device.label_ceilings", { shape: `(${shape.T} × ${shape.K}) · (${shape.K} × ${shape.N})`,
    compute_runs: result.compute_runs, runs: result.ceiling_runs, megabytes: format.number(result.stream_bytes / 1e6, 0) }));
  if (result.ceiling_exceeded.length) lines.push(text("device.label_ceiling_exceeded", { which: result.ceiling_exceeded.join(", ") }));
  if (result.fixed_wait_ms > 0) lines.push(text("device.label_fixed_wait", { ms: format.ms(result.fixed_wait_ms) }));
  if (result.backend === "wasm" && result.workers > 1) lines.push(text("device.label_no_shared_memory"));
  if (result.backend === "js") lines.push(text("device.label_slow_js"));
  if (result.backend === "webgpu" && result.software) lines.push(text("device.label_slow_adapter"));
  if (result.notes.includes("webgpu_software_skipped")) lines.push(text("device.label_webgpu_software_skipped"));
  if (result.notes.includes("webgpu_failed")) lines.push(text("device.label_webgpu_failed"));
  if (result.notes.includes("low_memory")) lines.push(text("device.label_low_memory"));
  if (!build.same_shapes) lines.push(text("device.label_build_model", { model: build.model }));
  lines.push(text("device.label_memory", { megabytes: format.number(result.memory_bytes / 1e6, 0),
    stream: format.number(result.stream_bytes / 1e6, 0) }));
  const diff = result.check.max_rel_diff;
  lines.push(text("device.label_check", { diff: diff === 0 ? "0" : diff.toExponential(1) }));
  return lines;
}

/** The result in llama-bench's shape (a Markdown table, one row per test), then what was measured how. */
function benchTable(result, data, text, format) {
  const m = data.model;
  const qkv = (m.n_heads + 2 * m.n_kv_heads) * m.head_dim;
  const params = m.vocab_size * m.d_model + m.n_layers * (m.d_model * qkv + m.n_heads * m.head_dim * m.d_model
    + 3 * m.d_model * m.d_ff + 2 * m.d_model) + m.d_model;
  const backend = { wasm: `WASM SIMD${result.variant === "relaxed" ? " (relaxed)" : ""}`, js: "JS", webgpu: "WebGPU" }[result.backend];
  const device = result.adapter?.description ? ` ${result.adapter.description}` : "";
  const cell = (range) => `${range.median.toFixed(2)} (${range.min.toFixed(2)}–${range.max.toFixed(2)}, n=${range.n})`;
  const real = result.weights === "real";
  const size = real ? params * data.live.bytes_per_weight : params * 4;
  const row = (test, range) => `| ${real ? data.live.model : `${m.name} shapes, random weights`} | `
    + `${(size / 2 ** 20).toFixed(2)} MiB | ${(params / 1e6).toFixed(2)} M | ${backend}${device} | `
    + `${real ? result.phase_workers : result.workers} | ${result.precision} | ${test} | ${cell(range)} |`;
  return ["| model | size | params | backend | threads | type | test | t/s (median, min–max) |",
    "| --- | ---: | ---: | --- | ---: | --- | --- | ---: |",
    row(`pp${result.prompt_tokens}`, result.pp_tps), row(`tg @ ${result.prompt_tokens}`, result.tg_tps)];
}

export async function mount(demo, data) {
  await loadStyle();
  const { stage, text, format } = prepareStage(demo, data);
  const plan = data.plan;
  const build = data.build;
  const id = demo.id || "pd-device";
  const query = new URLSearchParams(window.location.search);
  // Tests pin a backend (auto, wasm, js, webgpu), a number of workers, a shorter silence limit, or the small plan
  // of their own (`test`: one layer, see hooks/demos/builders/device.py); readers never need to.
  const testPlan = query.get("pd-device-plan") === "test" ? "test" : null;
  const wantedBackend = query.get("pd-device-backend") || "auto";
  const wantedWorkers = Number(query.get("pd-device-workers")) || null;
  const silenceLimitS = Number(query.get("pd-device-silence")) || plan.silence_limit_s;

  const modeSelect = h("select", { class: "pd-select", id: `${id}-mode` },
    ...MODES.map((mode) => h("option", { value: mode },
      text(`device.mode_${mode}`, { seconds: plan.modes[mode].estimate_s }))));
  const intro = h("p", { class: "pd-device__intro", id: `${id}-intro` });
  const startButton = h("button", { type: "button", class: "pd-button pd-button--play", "aria-describedby": `${id}-intro` },
    text("device.start"));
  const stopButton = h("button", { type: "button", class: "pd-button", disabled: true }, text("device.stop"));
  const bar = h("progress", { class: "pd-device__progress", max: 100, value: 0, "aria-label": text("device.progress") });
  const status = h("p", { class: "pd-device__status", role: "status", "aria-live": "polite" });
  const panel = h("div", { class: "pd-device__result", hidden: true, tabindex: -1 });

  function describeMode() {
    const seconds = plan.modes[modeSelect.value].estimate_s;
    setText(intro, data.live && !testPlan ? text("live.device_intro", { model: data.live.model, seconds,
      megabytes: format.number(data.live.download_bytes / 1e6, 0) }) : text("device.intro", { seconds }));
  }
  describeMode();
  modeSelect.addEventListener("change", describeMode);

  stage.append(
    intro,
    h("div", { class: "pd-fields" },
      h("label", { class: "pd-field", for: `${id}-mode` }, h("span", { text: text("device.mode") }), modeSelect),
      startButton, stopButton),
    bar, status, panel,
  );

  const state = { worker: null, width: 0, run: 0 }; // run: which press a late message or render belongs to
  demo.dataset.pdDeviceState = "idle";

  function setRunning(running) {
    startButton.disabled = running;
    modeSelect.disabled = running;
    stopButton.disabled = !running;
    bar.hidden = !running;
  }
  setRunning(false);

  function finishRun(next) {
    clearTimeout(state.watchdog);
    state.worker?.terminate(); // frees everything it allocated, its workers and GPU buffers included
    state.worker = null;
    if (next) demo.dataset.pdDeviceState = next;
    setRunning(false);
  }

  /** A failed run: its reason in the page's language, the button (now "Retry") focused and ready. */
  function fail(kind, message) {
    finishRun("error");
    demo.dataset.pdDeviceFailure = kind;
    setText(status, kind === "timeout" ? text("device.failed_timeout", { seconds: silenceLimitS })
      : text(`device.failed_${kind}`, { message }));
    setText(startButton, text("device.retry"));
    startButton.focus();
  }

  /** No word from the worker for the silence limit (a worker that hangs, or never starts): the run failed. */
  function keepWatch() {
    clearTimeout(state.watchdog);
    state.watchdog = setTimeout(() => fail("timeout", ""), silenceLimitS * 1000);
  }

  // The result arrives as one message; it is shown in two tasks (read-outs first, then the chart and the
  // table), and the stage's width is read at the press, so no task forces a layout of the whole page.
  async function showResult(result) {
    panel.textContent = "";
    delete panel.dataset.pdResult;
    const rows = comparisonRows(result, build, text, format);
    const vars = claimVars(result, build, text, format, data.verdict_margin);
    const claims = chosenClaims(data.claims, claimValues(result, build)).map((key) => text(key, vars));
    const machines = [
      { id: "device", label: text("device.this_device"), peak_gflops: result.peak_gflops, peak_gbps: result.peak_gbps,
        points: ["prefill", "decode"].map((phase) => ({ phase, label: text(`device.point_${phase}`), ...result[phase] })) },
      { id: "build", label: text("device.build_machine"), peak_gflops: build.peak_gflops, peak_gbps: build.peak_gbps,
        points: ["prefill", "decode"].map((phase) => ({ phase, label: text(`device.point_build_${phase}`), ...build[phase] })) },
    ];
    const chart = rooflineSvg(machines, { title: text("device.chart_title"), x: text("device.axis_intensity"),
      y: text("device.axis_gflops") }, format, state.width);
    const table = h("table", { class: "pd-demo__table pd-device__table", tabindex: 0 },
      h("caption", { text: text("device.table_caption") }),
      h("thead", {}, h("tr", {}, ...[text("device.col_figure"), text("device.this_device"), text("device.build_machine")]
        .map((label) => h("th", { scope: "col", text: label })))),
      h("tbody", {}, ...rows.map(([label, mine, theirs]) => h("tr", {}, h("th", { scope: "row", text: label }),
        h("td", { text: mine }), h("td", { text: theirs })))));
    const copyText = [result.weights === "real" ? text("live.device_copy_heading", { model: data.live.model })
      : text("device.copy_heading"), "", ...benchTable(result, data, text, format), "",
      ...rows.map(([label, mine, theirs]) => `${label}: ${mine} | ${text("device.build_machine")}: ${theirs}`), "",
      ...labels(result, build, text, format, data.live)].join("\n");
    const copied = h("span", { class: "pd-device__copied", role: "status" });
    const copyButton = h("button", { type: "button", class: "pd-button" }, text("device.copy"));
    const copyBox = h("textarea", { class: "pd-device__copytext", readonly: true, rows: 8, "aria-label": text("device.copy_box") });
    copyBox.value = copyText;
    copyButton.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(copyText);
        setText(copied, text("device.copied"));
      } catch {
        copyBox.select(); // no clipboard permission: the text is selected for the reader to copy
        setText(copied, text("device.copy_manually"));
      }
    });
    const chartParts = () => [
      h("figure", { class: "pd-device__chart", "aria-hidden": "true" }, chart,
        h("figcaption", { class: "pd-keys", text: text("device.chart_legend") })),
      table,
      h("ul", { class: "pd-device__labels" }, ...labels(result, build, text, format, data.live).map((line) => h("li", { text: line }))),
      h("div", { class: "pd-fields" }, copyButton, copied),
      copyBox,
    ];
    const tokens = format.number(result.prompt_tokens, 0);
    panel.append(
      h("p", { class: "pd-device__backend", text: backendLabel(result, text) }),
      h("p", { class: "pd-device__reach", text: reachLabel(result, text) }),
      h("dl", { class: "pd-readouts" }, ...[
        [text("device.pp_row", { tokens }), rangeText(result.pp_tps, text, format)],
        [text("device.tg_row", { tokens }), rangeText(result.tg_tps, text, format)],
        [text("device.ttft_at", { tokens }), format.ms(result.ttft_ms)],
        [text("common.ms_per_token"), format.ms(result.decode_ms_per_token)],
        [text("device.peak_compute"), `${format.number(result.peak_gflops)} GFLOP/s`],
        [text("device.peak_bandwidth"), `${format.number(result.peak_gbps)} GB/s`],
      ].map(([label, value]) => h("div", { class: "pd-readout" }, h("dt", { text: label }), h("dd", { text: value })))),
      h("ul", { class: "pd-device__claims" }, ...claims.map((claim) => h("li", { text: claim }))),
    );
    panel.hidden = false;
    const run = state.run;
    await afterPaint();
    if (run !== state.run) return false; // the reader pressed again meanwhile
    panel.append(...chartParts());
    panel.dataset.pdResult = JSON.stringify(result); // last: tests and tools read a complete panel
    return true;
  }

  startButton.addEventListener("click", () => {
    if (state.worker) return;
    const mode = testPlan || modeSelect.value;
    state.run += 1;
    panel.hidden = true; // a new measurement replaces the last one
    delete demo.dataset.pdDeviceFailure;
    delete panel.dataset.pdResult;
    state.width = stage.clientWidth; // for the chart, read now while layout is clean
    let worker;
    try {
      worker = new Worker(WORKER_URL, { type: "module", name: "pd-device" });
    } catch (error) { // a policy or browser that refuses the worker outright
      fail("load", String(error?.message || error));
      return;
    }
    state.worker = worker;
    demo.dataset.pdDeviceState = "running";
    setRunning(true);
    bar.value = 0;
    setText(status, text("device.stage_backend"));
    stopButton.focus();
    let heard = false; // a worker that fails before its first message did not load
    keepWatch();
    worker.addEventListener("message", ({ data: message }) => {
      if (worker !== state.worker) return;
      heard = true;
      keepWatch();
      if (message.type === "progress") {
        bar.value = Math.round(100 * message.fraction);
        if (message.stage === "weights") {
          setText(status, text("live.stage_download", { loaded: format.number(message.loaded / 1e6, 0),
            total: format.number(message.total / 1e6, 0) }));
          return;
        }
        setText(status, text(`device.stage_${message.stage}`, { layers: message.layers ?? "", tokens: message.tokens ?? data.workload.prompt_tokens,
          repeat: message.repeat ?? "", repeats: message.repeats ?? "" }));
      } else if (message.type === "result") {
        finishRun(null); // "done" once the result is on the page
        setText(status, text("device.done", { seconds: format.number(message.result.elapsed_s) }));
        setText(startButton, text("device.start"));
        startButton.focus();
        showResult(message.result).then((shown) => { if (shown) demo.dataset.pdDeviceState = "done"; });
      } else if (message.type === "error") {
        fail(KINDS.includes(message.kind) ? message.kind : "kernel", message.message);
      }
    });
    worker.addEventListener("error", (event) => {
      if (worker !== state.worker) return;
      event.preventDefault();
      fail(heard ? "kernel" : "load", event.message || WORKER_URL.pathname);
    });
    // Only what the worker needs: shapes, costs, plan; nothing about the reader is read or sent.
    worker.postMessage({ type: "measure", mode, backend: wantedBackend,
      demo: { model: data.model, costs: data.costs, plan: data.plan, workload: data.workload, live: data.live },
      deviceMemory: navigator.deviceMemory, workers: wantedWorkers });
  });

  stopButton.addEventListener("click", () => {
    if (!state.worker) return;
    finishRun("stopped");
    setText(status, text("device.stopped"));
    setText(startButton, text("device.start"));
    startButton.focus();
  });
}
