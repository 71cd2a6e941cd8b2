// conversation (two-phases): the prompt as a chat bubble, prefill lighting every prompt token at once,
// the first token with its TTFT, then the answer at its recorded pace while the KV cache fills.
import { h, meter, setText } from "../dom.js";
import { playRecording, prepareStage, readout } from "../stage.js";
import { answerView, phaseBadge, promptView, renderTurn, rolesLegend } from "../tokens.js";

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const steps = data.steps;
  const fullCache = steps[steps.length - 1].kv_tokens;

  const prompt = promptView(data.prompt.tokens, data.prompt.text);
  const answer = answerView(steps, data.answer, text);
  const phase = phaseBadge(text);
  const elapsed = h("span", { class: "pd-elapsed" });
  const ttft = readout(text("common.ttft"));
  const rate = readout(text("common.tps"));
  const cache = meter(text("common.kv_cache"));

  stage.append(
    h("div", { class: "pd-chat" },
      h("div", { class: "pd-bubble pd-bubble--user" },
        h("span", { class: "pd-bubble__who", text: text("conversation.user") }), prompt.node,
        rolesLegend(data.prompt, text)),
      h("div", { class: "pd-bubble pd-bubble--model" },
        h("span", { class: "pd-bubble__who", text: text("conversation.assistant") }), answer.node)),
    h("div", { class: "pd-status" }, phase.node, elapsed,
      h("dl", { class: "pd-readouts" }, ttft.node, rate.node)),
    cache.node,
  );

  playRecording(demo, stage, steps, {
    text,
    reducedMotion,
    describe: () => answer.shownText() || text("common.waiting"),
    render(state) {
      const step = renderTurn({ phase, prompt, answer, elapsed, ttft, cache }, state,
        { text, format, steps, share: (shown) => shown.kv_tokens / fullCache });
      // TPS as the build reports it at this step (none before the first decode step).
      setText(rate.value, step?.tps ? `${format.number(step.tps)} tok/s` : "–");
    },
  });
}
