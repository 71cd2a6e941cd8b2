// timeline (ttft-tps): a slider over the measured prompt lengths and a switch between the build machine
// and projected model × hardware pairs; readouts for TTFT, TPS and per-token latency; the to-scale
// timeline chart follows (frames named "<source>|<prompt_tokens>").
import { h, setAttr, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { prepareStage, readout } from "../stage.js";

/** A source's name as the build wrote it ("Llama-3.1-8B · NVIDIA H100 SXM 80GB · FP16 (projected)"). */
export function sourceLabel(source, data, text) {
  if (data.sources?.[source]) return data.sources[source];
  return source === "measured" ? text("common.measured_label") : source;
}

export function mount(demo, data) {
  const { stage, text, format } = prepareStage(demo, data);
  const readouts = data.readouts || {};
  const sources = Object.keys(readouts).filter((key) => readouts[key] && typeof readouts[key] === "object"
    && Object.values(readouts[key]).some((entry) => entry && "ttft_ms" in entry));
  const lengths = Object.keys(readouts.measured || readouts[sources[0]] || {})
    .map(Number).filter(Number.isFinite).sort((a, b) => a - b);
  const state = { source: sources.includes("measured") ? "measured" : sources[0], index: lengths.length - 1 };
  if (lengths.includes(512)) state.index = lengths.indexOf(512);

  const id = demo.id || "pd-timeline";
  const slider = h("input", {
    type: "range", class: "pd-range", id: `${id}-length`, min: 0, max: Math.max(0, lengths.length - 1), step: 1,
    value: state.index,
  });
  const lengthText = h("output", { for: `${id}-length`, class: "pd-field__value" });
  const select = h("select", { class: "pd-select", id: `${id}-source` },
    ...sources.map((source) => h("option", { value: source }, sourceLabel(source, data, text))));
  select.value = state.source;

  const ttft = readout(text("common.ttft"));
  const tps = readout(text("common.tps"));
  const perToken = readout(text("common.ms_per_token"));
  const chart = data.figures?.timeline ? createChart(data.figures.timeline, text, "timeline.title") : null;

  stage.append(
    h("div", { class: "pd-fields" },
      h("label", { class: "pd-field pd-field--wide", for: `${id}-length` },
        h("span", { text: text("timeline.prompt_length") }), slider, lengthText),
      h("label", { class: "pd-field", for: `${id}-source` }, h("span", { text: text("timeline.source") }), select)),
    h("dl", { class: "pd-readouts", "aria-live": "polite", "aria-label": text("timeline.readouts") },
      ttft.node, tps.node, perToken.node),
    chart?.node,
  );

  function render() {
    const length = lengths[state.index];
    const values = readouts[state.source]?.[String(length)] || {};
    const lengthLabel = format.number(length, 0);
    setText(lengthText, lengthLabel);
    setAttr(slider, "aria-valuetext", lengthLabel);
    setText(ttft.value, format.ms(values.ttft_ms));
    setText(tps.value, `${format.number(values.tps)} tok/s`);
    setText(perToken.value, format.ms(values.decode_ms_per_token));
    demo.dataset.pdSource = state.source;
    demo.dataset.pdLength = String(length);
    chart?.animateTo(`${state.source}|${length}`);
  }

  slider.addEventListener("input", () => {
    state.index = Number(slider.value);
    render();
  });
  select.addEventListener("change", () => {
    state.source = select.value;
    render();
  });
  render();
}
