// prefill (prefill chapter): the prompt's real tokenizer pieces light up at once, the K and V heatmaps
// fill together, the KV cache of this prompt is set beside a real 8B model's at 4k tokens, and a chart
// shows measured prefill time against prompt length.
import { h, meter, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { createPlayer } from "../player.js";
import { keysHint, prepareStage, promptTokens, readout, shownSteps, ticksOf } from "../stage.js";
import { answerView, phaseBadge, phaseOf, promptView } from "../tokens.js";

/** The heatmap frame for a token count: "empty"/"full" if the figure has them, else one per token. */
function heatmapFrame(chart, count) {
  if (chart.frameNames.has("full")) return count > 0 ? "full" : "empty";
  const names = [...chart.frameNames];
  return names[Math.min(count, names.length - 1)];
}

/** The projected entry (8B model on a real GPU) the build chose for this demo, if any. */
function projectionOf(data) {
  const projection = data.readouts?.projection;
  if (projection) return projection;
  return Array.isArray(data.projections) ? data.projections[0] : null;
}

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const trace = data.trace;
  const steps = shownSteps(trace);
  const ticks = ticksOf(steps);
  const prefillStep = trace.steps[0];

  const prompt = promptView(promptTokens(data), text("prefill.prompt"));
  const answer = answerView(steps, trace.answer, text("common.waiting"));
  const phase = phaseBadge(text);
  const tokens = readout(text("prefill.prompt_tokens"));
  const ttft = readout(text("common.ttft"));
  const clock = readout(text("common.clock"));
  const cache = meter(text("prefill.kv_this_prompt"));
  const projection = projectionOf(data);
  const projected = projection ? meter(text("prefill.kv_projected", {
    model: projection.model_name || projection.model, device: projection.device_name || projection.device,
    tokens: format.number(4096, 0),
  })) : null;

  const figures = data.figures || {};
  const heatmap = figures.kv_heatmap ? createChart(figures.kv_heatmap, {
    label: text("prefill.kv_heatmap"), loadingText: text("common.loading_chart"),
  }) : null;
  const timing = figures.prefill_time ? createChart(figures.prefill_time, {
    label: text("prefill.prefill_time"), loadingText: text("common.loading_chart"),
  }) : null;

  stage.append(
    h("div", { class: "pd-bubble pd-bubble--user" }, prompt.node),
    h("div", { class: "pd-status" }, phase.node,
      h("dl", { class: "pd-readouts" }, tokens.node, clock.node, ttft.node)),
    h("div", { class: "pd-bubble pd-bubble--model" },
      h("span", { class: "pd-bubble__who", text: text("prefill.first_token") }), answer.node),
    cache.node,
    projected?.node,
    heatmap?.node,
  );

  setText(tokens.value, format.number(prefillStep.kv_tokens ?? promptTokens(data).length, 0));
  if (projected) {
    projected.set(projection.kv_share_of_memory_at_4k, text("prefill.kv_share", {
      bytes: format.bytes(projection.kv_bytes_at_4k), share: format.percent(projection.kv_share_of_memory_at_4k),
    }));
  }
  const weights = trace.model?.weight_bytes;

  const player = createPlayer({
    root: demo,
    ticks,
    text,
    reducedMotion,
    describe: (state) => (state.count > 0
      ? `${text("common.ttft")}: ${format.ms(ticks[0])}. ${answer.shownText()}` : text("common.waiting")),
    render(state) {
      const current = phaseOf(state);
      phase.set(current);
      prompt.set(current === "prefill" ? "reading" : state.count > 0 ? "cached" : "idle");
      answer.set(state.count);
      setText(clock.value, format.ms(state.t));
      setText(ttft.value, state.count > 0 ? format.ms(ticks[0]) : "–");
      const step = state.count > 0 ? steps[state.count - 1] : null;
      const bytes = step ? step.kv_bytes : 0;
      cache.set(weights ? bytes / weights : state.count > 0 ? 1 : 0, text("prefill.kv_value", {
        tokens: format.number(step ? step.kv_tokens : 0, 0), bytes: format.bytes(bytes),
        share: weights ? format.percent(bytes / weights) : "–",
      }));
      if (heatmap) heatmap.animateTo(heatmapFrame(heatmap, state.count));
    },
  });
  stage.append(player.controls, keysHint(demo, text));
  if (timing) stage.append(timing.node);
}
