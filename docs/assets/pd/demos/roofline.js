// roofline (bottleneck): the build machine's log–log roofline with the measured prefill and decode
// points (Plotly frames by prompt length), and utilisation bars per phase for the build machine or a
// chosen projected hardware entry (the Apple Neural Engine among them).
import { h, meter } from "../dom.js";
import { createChart } from "../charts.js";
import { prepareStage } from "../stage.js";

const PHASES = ["prefill", "decode"];
const KINDS = ["compute_utilization", "bandwidth_utilization"];

export function mount(demo, data) {
  const { stage, text, format } = prepareStage(demo, data);
  const sources = new Map(data.sources.map((source) => [source.id, source]));
  const state = { source: data.sources[0].id };  // the build machine's measurement comes first

  const id = demo.id || "pd-roofline";
  const select = h("select", { class: "pd-select", id: `${id}-source` },
    ...data.sources.map((source) => h("option", { value: source.id }, source.label)));
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
    h("label", { class: "pd-field", for: `${id}-source` },
      h("span", { text: text("roofline.hardware") }), select),
    h("div", { class: "pd-charts", "aria-live": "polite" }, ...groups),
    utilization?.node,
  );

  function render() {
    const values = sources.get(state.source);
    for (const phase of PHASES) {
      for (const kind of KINDS) {
        const fraction = values[phase]?.[kind];
        meters[`${phase}.${kind}`].set(fraction, Number.isFinite(fraction) ? format.percent(fraction) : "–");
      }
    }
    demo.dataset.pdSource = state.source;
    utilization?.animateTo(values.frame);
  }
  select.addEventListener("change", () => {
    state.source = select.value;
    render();
  });
  render();
}
