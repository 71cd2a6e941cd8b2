// timeline (ttft-tps): a slider over the measured prompt lengths and a switch between the build machine
// and projected model × hardware pairs; readouts for TTFT, TPS and per-token latency; the to-scale
// timeline chart follows (each point names the chart frame that draws it).
import { h, setAttr, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { prepareStage, readout } from "../stage.js";

export function mount(demo, data) {
  const { stage, text, format } = prepareStage(demo, data);
  // Every source has a point at each prompt length, in the same order; the build says where to start.
  const sources = new Map(data.sources.map((source) => [source.id, source]));
  const lengths = data.sources[0].points.map((point) => point.prompt_tokens);
  const state = { source: data.start.source, index: lengths.indexOf(data.start.prompt_tokens) };

  const id = demo.id || "pd-timeline";
  const slider = h("input", {
    type: "range", class: "pd-range", id: `${id}-length`, min: 0, max: Math.max(0, lengths.length - 1), step: 1,
    value: state.index,
  });
  const lengthText = h("output", { for: `${id}-length`, class: "pd-field__value" });
  const select = h("select", { class: "pd-select", id: `${id}-source` },
    ...data.sources.map((source) => h("option", { value: source.id }, source.label)));
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
    const values = sources.get(state.source).points[state.index];
    const lengthLabel = format.number(length, 0);
    setText(lengthText, lengthLabel);
    setAttr(slider, "aria-valuetext", lengthLabel);
    setText(ttft.value, format.ms(values.ttft_ms));
    setText(tps.value, `${format.number(values.tps)} tok/s`);
    setText(perToken.value, format.ms(values.decode_ms_per_token));
    demo.dataset.pdSource = state.source;
    demo.dataset.pdLength = String(length);
    chart?.animateTo(values.frame);
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
