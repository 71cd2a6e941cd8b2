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

  // meters[phase][kind]: one bar per ceiling, grouped by phase.
  const meters = PHASES.map(() => KINDS.map((kind) => meter(text(`roofline.cat_${kind.split("_")[0]}`))));
  const groups = PHASES.map((phase, p) => h("div", { class: "pd-utilization" },
    h("p", { class: "pd-keys", text: text(`common.phase_${phase}`) }), ...meters[p].map((bar) => bar.node)));

  const roofline = createChart(data.figures.roofline, text);
  const utilization = createChart(data.figures.utilization, text);
  // The player steps through the prompt lengths the roofline shows, shortest first; the longest shows first.
  const lengths = data.prompt_lengths;
  const player = createStepper({
    root: demo,
    text,
    reducedMotion,
    label: text("roofline.prompt_length"),
    values: lengths.map((length) => format.number(length.prompt_tokens, 0)),
    start: lengths.length - 1,
    render(index) {
      demo.dataset.pdLength = String(lengths[index].prompt_tokens);
      roofline.show(lengths[index].frame);
    },
  });

  stage.append(
    roofline.node,
    player.controls,
    keysHint(demo, text),
    sourceField(demo, data.sources, { label: text("roofline.hardware"), selected: data.sources[0].id, onChange: showSource }),
    h("div", { class: "pd-charts", "aria-live": "polite" }, ...groups),
    utilization.node,
  );

  function showSource(id) {
    const values = sources.get(id);
    PHASES.forEach((phase, p) => KINDS.forEach((kind, k) => {
      meters[p][k].set(values[phase][kind], format.percent(values[phase][kind]));
    }));
    utilization.show(values.frame);
  }
  showSource(data.sources[0].id); // the build machine's measurement comes first
}
