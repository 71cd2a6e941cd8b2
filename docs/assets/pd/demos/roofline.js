// roofline (bottleneck): the build machine's log–log roofline with the measured prefill and decode
// points, one frame per prompt length stepped by the player (play, scrubber, keys), and utilisation bars
// per phase for the build machine or a chosen projected hardware entry (the Apple Neural Engine among
// them), one frame per source.
import { h, meter } from "../dom.js";
import { createChart } from "../charts.js";
import { createStepper } from "../player.js";
import { keysHint, prepareStage, sourceField } from "../stage.js";

const PHASES = ["prefill", "decode"];
const KINDS = ["compute_utilization", "bandwidth_utilization"];

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const sources = new Map(data.sources.map((source) => [source.id, source]));
  const state = { source: data.sources[0].id };  // the build machine's measurement comes first

  const meters = {};
  const groups = PHASES.map((phase) => {
    const rows = KINDS.map((kind) => {
      meters[`${phase}.${kind}`] = meter(text(`roofline.cat_${kind.split("_")[0]}`));
      return meters[`${phase}.${kind}`].node;
    });
    return h("div", { class: "pd-utilization" }, h("p", { class: "pd-keys", text: text(`common.phase_${phase}`) }), ...rows);
  });

  const roofline = createChart(data.figures.roofline, text);
  const utilization = createChart(data.figures.utilization, text);
  // The player steps through the prompt lengths the roofline shows, shortest first; the longest shows first.
  const lengths = data.prompt_lengths;
  const lengthText = (index) => format.number(lengths[index].prompt_tokens, 0);
  const player = createStepper({
    root: demo,
    frames: lengths.length,
    start: lengths.length - 1,
    text,
    reducedMotion,
    label: text("roofline.prompt_length"),
    valueText: (step) => lengthText(step.count - 1),
    render(step) {
      const length = lengths[step.count - 1];
      demo.dataset.pdLength = String(length.prompt_tokens);
      roofline.show(length.frame);
    },
  });

  stage.append(
    roofline.node,
    player.controls,
    keysHint(demo, text),
    sourceField(demo, data.sources, { label: text("roofline.hardware"), selected: state.source, onChange: choose }),
    h("div", { class: "pd-charts", "aria-live": "polite" }, ...groups),
    utilization.node,
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
    utilization.show(values.frame);
  }
  function choose(source) {
    state.source = source;
    render();
  }
  render();
}
