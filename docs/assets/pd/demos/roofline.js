// roofline (bottleneck): the build machine's log–log roofline with the measured prefill and decode
// points, one frame per prompt length stepped by the player (play, scrubber, keys), and utilisation bars
// per phase for the build machine or a chosen projected hardware entry (the Apple Neural Engine among
// them), one frame per source.
import { h, meter } from "../dom.js";
import { createChart } from "../charts.js";
import { createStepper } from "../player.js";
import { keysHint, prepareStage } from "../stage.js";
import { sourceLabel } from "./timeline.js";

const PHASES = ["prefill", "decode"];
const KINDS = ["compute_utilization", "bandwidth_utilization"];

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
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
  const roofline = figures.roofline ? createChart(figures.roofline, text) : null;
  const utilization = figures.utilization ? createChart(figures.utilization, text) : null;
  // The roofline's frames are its prompt lengths, shortest first; the longest shows first.
  const lengths = figures.roofline?.frame_keys || [];
  const lengthText = (index) => format.number(lengths[index], 0);
  const player = lengths.length ? createStepper({
    root: demo,
    frames: lengths.length,
    start: lengths.length - 1,
    text,
    reducedMotion,
    label: text("roofline.prompt_length"),
    valueText: (step) => lengthText(step.count - 1),
    describe: (step) => `${text("roofline.prompt_length")} ${lengthText(step.count - 1)}`,
    render(step) {
      demo.dataset.pdLength = String(lengths[step.count - 1]);
      roofline.show(step.count - 1);
    },
  }) : null;

  stage.append(
    roofline?.node,
    player?.controls,
    player ? keysHint(demo, text) : null,
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
    utilization?.show(figures.utilization.frame_keys.indexOf(state.source));
  }
  select.addEventListener("change", () => {
    state.source = select.value;
    render();
  });
  render();
}
