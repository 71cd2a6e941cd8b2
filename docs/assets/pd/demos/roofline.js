// roofline (bottleneck): the build machine's log–log roofline with the measured prefill and decode
// points (Plotly frames by prompt length), and utilisation bars per phase for the build machine or a
// chosen projected hardware entry (the Apple Neural Engine among them).
import { h, meter } from "../dom.js";
import { createChart } from "../charts.js";
import { prepareStage } from "../stage.js";
import { sourceLabel } from "./timeline.js";

const PHASES = ["prefill", "decode"];
const KINDS = ["compute_utilization", "bandwidth_utilization"];

export function mount(demo, data) {
  const { stage, text, format } = prepareStage(demo, data);
  const readouts = data.readouts || {};
  const sources = Object.keys(readouts).filter((key) => readouts[key]?.prefill && readouts[key]?.decode);
  const state = { source: sources.includes("measured") ? "measured" : sources[0] };

  const id = demo.id || "pd-roofline";
  const select = h("select", { class: "pd-select", id: `${id}-source` },
    ...sources.map((source) => h("option", { value: source }, sourceLabel(source, data, text))));
  select.value = state.source;
  const meters = {};
  const groups = PHASES.map((phase) => {
    const rows = KINDS.map((kind) => {
      meters[`${phase}.${kind}`] = meter(text(`roofline.cat_${kind.split("_")[0]}`));
      return meters[`${phase}.${kind}`].node;
    });
    return h("div", { class: "pd-utilization" }, h("p", { class: "pd-keys", text: text(`common.phase_${phase}`) }), ...rows);
  });

  const figures = data.figures || {};
  const roofline = figures.roofline ? createChart(figures.roofline, text, "roofline.title") : null;
  const utilization = figures.utilization ? createChart(figures.utilization, text, "roofline.util_title") : null;

  stage.append(
    roofline?.node,
    sources.length ? h("label", { class: "pd-field", for: `${id}-source` },
      h("span", { text: text("roofline.hardware") }), select) : null,
    h("div", { class: "pd-charts", "aria-live": "polite" }, ...groups),
    utilization?.node,
  );

  function render() {
    const values = readouts[state.source] || {};
    for (const phase of PHASES) {
      for (const kind of KINDS) {
        const fraction = values[phase]?.[kind];
        meters[`${phase}.${kind}`].set(fraction, Number.isFinite(fraction) ? format.percent(fraction) : "–");
      }
    }
    demo.dataset.pdSource = state.source || "";
    utilization?.animateTo(state.source);
  }
  select.addEventListener("change", () => {
    state.source = select.value;
    render();
  });
  render();
}
