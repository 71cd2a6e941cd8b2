// prefill (prefill chapter): the prompt's real tokenizer pieces light up at once, the K and V heatmaps
// fill together, the KV cache of this prompt is set beside a real 8B model's at 4k tokens, and a chart
// shows measured prefill time against prompt length.
import { h, meter, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { playRecording, prepareStage, readout } from "../stage.js";
import { answerView, inspectablePromptView, partialLegend, phaseBadge, renderTurn, rolesLegend } from "../tokens.js";

/** The K and V heatmaps as a cheap update: every trace fades in once prefill has written them (no redraw). */
function revealHeatmaps(written) {
  return { restyle: { opacity: written ? 1 : 0 } };
}

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const steps = data.steps;

  const promptTokenList = data.prompt.tokens;
  const prompt = inspectablePromptView(promptTokenList, text);
  const answer = answerView(steps, data.answer, text);
  const phase = phaseBadge(text);
  const tokens = readout(text("common.prompt_tokens"));
  const ttft = readout(text("common.ttft"));
  const elapsed = h("span", { class: "pd-elapsed" });
  const cache = meter(text("prefill.memory_meter"));
  // The KV cache of the projection the build chose (an 8B model on a real GPU).
  const projection = data.projection;
  const projected = meter(text("prefill.memory_meter_projected", {
    model: projection.model, device: projection.device,
    tokens: format.number(projection.prompt_tokens, 0), share: format.percent(projection.share),
  }));

  const { kv_heatmap: heatmapFigure, prefill_time: timingFigure } = data.figures;
  const heatmap = createChart(heatmapFigure, text, { reveal: revealHeatmaps });

  stage.append(
    h("div", { class: "pd-bubble pd-bubble--user" },
      // The sentence as typed, then the pieces the model reads it as.
      h("span", { class: "pd-bubble__who", text: text("common.prompt") }),
      h("p", { class: "pd-prompt-text", text: data.prompt.text }),
      h("span", { class: "pd-bubble__who", text: text("prefill.tokens_label") }), prompt.node,
      partialLegend(promptTokenList, text),
      rolesLegend(data.prompt, text)),
    h("div", { class: "pd-status" }, phase.node, elapsed,
      h("dl", { class: "pd-readouts" }, tokens.node, ttft.node)),
    h("div", { class: "pd-bubble pd-bubble--model" },
      h("span", { class: "pd-bubble__who", text: text("common.answer") }), answer.node),
    cache.node,
    projected.node,
    heatmap.node,
  );

  setText(tokens.value, format.number(promptTokenList.length, 0));
  projected.set(projection.share, format.bytes(projection.kv_bytes));

  playRecording(demo, stage, steps, {
    text,
    reducedMotion,
    describe: (state) => (state.count > 0
      ? `${text("common.first_token_at", { ms: format.ms(steps[0].end_ms) })} ${answer.shownText()}` : text("common.waiting")),
    render(state) {
      // This prompt's cache is drawn to the scale of the model's weights, which sit in the same memory.
      renderTurn({ phase, prompt, answer, elapsed, ttft, cache }, state,
        { text, format, steps, share: (step) => step.kv_bytes / data.weight_bytes });
      heatmap.show(state.count > 0); // prefill writes every row at once, with the first token
    },
  });
  stage.append(createChart(timingFigure, text).node);
}
