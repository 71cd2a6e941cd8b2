// conversation (two-phases): the prompt as a chat bubble, prefill lighting every prompt token at once,
// the first token with its TTFT, then the answer at its recorded pace while the KV cache fills.
import { h, meter, setText } from "../dom.js";
import { createPlayer } from "../player.js";
import { keysHint, prepareStage, promptTokens, readout, shownSteps, ticksOf } from "../stage.js";
import { answerView, phaseBadge, promptView, renderTurn, rolesLegend } from "../tokens.js";

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const trace = data.trace;
  const steps = shownSteps(trace);
  const ticks = ticksOf(steps);
  const finalCache = trace.steps[trace.steps.length - 1];
  // decodeMs[i]: summed duration of the decode steps among the first i+1 shown steps.
  const decodeMs = steps.map((step) => (step.phase === "decode" ? step.end_ms - step.start_ms : 0));
  decodeMs.forEach((ms, i) => { if (i) decodeMs[i] += decodeMs[i - 1]; });

  const tokens = promptTokens(data);
  const prompt = promptView(tokens, { text: data.prompt?.text });
  const answer = answerView(steps, trace.answer, {
    waiting: text("common.waiting"), incomplete: text("common.incomplete_token"), notes: data.answer_notes,
  });
  const phase = phaseBadge(text);
  const elapsed = h("span", { class: "pd-elapsed" });
  const ttft = readout(text("common.ttft"));
  const rate = readout(text("common.tps"));
  const cache = meter(text("common.kv_cache"));

  stage.append(
    h("div", { class: "pd-chat" },
      h("div", { class: "pd-bubble pd-bubble--user" },
        h("span", { class: "pd-bubble__who", text: text("conversation.user") }), prompt.node,
        rolesLegend(tokens, data.prompt?.summary, text, trace.settings?.system_prompt_is_default)),
      h("div", { class: "pd-bubble pd-bubble--model" },
        h("span", { class: "pd-bubble__who", text: text("conversation.assistant") }), answer.node)),
    h("div", { class: "pd-status" }, phase.node, elapsed,
      h("dl", { class: "pd-readouts" }, ttft.node, rate.node)),
    cache.node,
  );

  const player = createPlayer({
    root: demo,
    ticks,
    text,
    reducedMotion,
    describe: () => answer.shownText() || text("common.waiting"),
    render(state) {
      renderTurn({ phase, prompt, answer, elapsed, ttft }, state, { text, format, ticks });
      // TPS as the build reports it: 1000 / mean decode-step time of the steps shown so far.
      const decoded = state.count - 1;
      setText(rate.value, decoded > 0 ? `${format.number((decoded * 1000) / decodeMs[state.count - 1])} tok/s` : "–");
      const step = state.count > 0 ? steps[state.count - 1] : null;
      const tokens = step ? step.kv_tokens : 0;
      cache.set(tokens / finalCache.kv_tokens,
        text("common.kv_meter", { tokens: format.number(tokens, 0), bytes: format.bytes(step ? step.kv_bytes : 0) }));
    },
  });
  stage.append(player.controls, keysHint(demo, text));
}
