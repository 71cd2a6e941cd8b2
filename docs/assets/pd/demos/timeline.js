// timeline (ttft-tps): the player steps through the measured prompt lengths (play, scrubber, keys) and a
// switch chooses between the build machine and projected model × hardware pairs; readouts for TTFT, TPS
// and per-token latency; the to-scale timeline chart follows (its frame_keys name each frame's source
// and prompt length).
import { h, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { createStepper } from "../player.js";
import { keysHint, prepareStage, readout } from "../stage.js";

/** A source's name as the build wrote it ("Llama-3.1-8B · NVIDIA H100 SXM 80GB · FP16 (projected)"). */
export function sourceLabel(source, data, text) {
  if (data.sources?.[source]) return data.sources[source];
  return source === "measured" ? text("common.measured_label") : source;
}

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const readouts = data.readouts || {};
  const sources = Object.keys(readouts).filter((key) => readouts[key] && typeof readouts[key] === "object"
    && Object.values(readouts[key]).some((entry) => entry && "ttft_ms" in entry));
  const lengths = Object.keys(readouts.measured || readouts[sources[0]] || {})
    .map(Number).filter(Number.isFinite).sort((a, b) => a - b);
  const state = { source: sources.includes("measured") ? "measured" : sources[0], index: lengths.length - 1 };
  if (lengths.includes(512)) state.index = lengths.indexOf(512);

  const id = demo.id || "pd-timeline";
  const select = h("select", { class: "pd-select", id: `${id}-source` },
    ...sources.map((source) => h("option", { value: source }, sourceLabel(source, data, text))));
  select.value = state.source;

  const ttft = readout(text("common.ttft"));
  const tps = readout(text("common.tps"));
  const perToken = readout(text("common.ms_per_token"));
  const figure = data.figures?.timeline;
  const chart = figure ? createChart(figure, text) : null;
  const frameKeys = figure?.frame_keys || [];

  function render() {
    const length = lengths[state.index];
    const values = readouts[state.source]?.[String(length)] || {};
    setText(ttft.value, format.ms(values.ttft_ms));
    setText(tps.value, `${format.number(values.tps)} tok/s`);
    setText(perToken.value, format.ms(values.decode_ms_per_token));
    demo.dataset.pdSource = state.source;
    demo.dataset.pdLength = String(length);
    chart?.show(frameKeys.findIndex((key) => key.source === state.source && key.prompt_tokens === length));
  }

  const lengthText = (index) => format.number(lengths[index], 0);
  const player = createStepper({
    root: demo,
    frames: lengths.length,
    start: state.index,
    text,
    reducedMotion,
    label: text("timeline.prompt_length"),
    valueText: (step) => lengthText(step.count - 1),
    describe: (step) => `${text("timeline.prompt_length")} ${lengthText(step.count - 1)}`,
    render(step) {
      state.index = step.count - 1;
      render();
    },
  });
  select.addEventListener("change", () => {
    state.source = select.value;
    render();
  });

  stage.append(
    h("div", { class: "pd-fields" },
      h("label", { class: "pd-field", for: `${id}-source` }, h("span", { text: text("timeline.source") }), select)),
    player.controls, keysHint(demo, text),
    h("dl", { class: "pd-readouts", "aria-live": "polite", "aria-label": text("timeline.readouts") },
      ttft.node, tps.node, perToken.node),
    chart?.node,
  );
}
