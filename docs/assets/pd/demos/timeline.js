// timeline (ttft-tps): the player steps through the measured prompt lengths (play, scrubber, keys) and a
// switch chooses between the build machine and projected model × hardware pairs; readouts for TTFT, TPS
// and per-token latency; the to-scale timeline chart follows (each point names the index of the chart
// frame that draws it).
import { h, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { createStepper } from "../player.js";
import { keysHint, prepareStage, readout, sourceField } from "../stage.js";

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  // Every source has a point at each prompt length, in the same order; the build says where to start.
  const sources = new Map(data.sources.map((source) => [source.id, source]));
  const lengths = data.sources[0].points.map((point) => point.prompt_tokens);
  const state = { source: data.start.source, index: lengths.indexOf(data.start.prompt_tokens) };

  const ttft = readout(text("common.ttft"));
  const tps = readout(text("common.tps"));
  const perToken = readout(text("common.ms_per_token"));
  const chart = createChart(data.figures.timeline, text);

  function render() {
    const values = sources.get(state.source).points[state.index];
    setText(ttft.value, format.ms(values.ttft_ms));
    setText(tps.value, `${format.number(values.tps)} tok/s`);
    setText(perToken.value, format.ms(values.decode_ms_per_token));
    demo.dataset.pdLength = String(lengths[state.index]);
    chart.show(values.frame);
  }
  function choose(source) {
    state.source = source;
    render();
  }

  const player = createStepper({
    root: demo,
    text,
    reducedMotion,
    label: text("timeline.prompt_length"),
    values: lengths.map((length) => format.number(length, 0)),
    start: state.index,
    render(index) {
      state.index = index;
      render();
    },
  });
  stage.append(
    h("div", { class: "pd-fields" },
      sourceField(demo, data.sources, { label: text("timeline.source"), selected: state.source, onChange: choose })),
    player.controls, keysHint(demo, text),
    h("dl", { class: "pd-readouts", "aria-live": "polite", "aria-label": text("timeline.readouts") },
      ttft.node, tps.node, perToken.node),
    chart.node,
  );
}
