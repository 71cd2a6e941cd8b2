// Token views shared by the demos: the prompt as chips, and the answer growing token by token.
import { h, setClass, setText, tokenChip } from "./dom.js";
import { answerPieces } from "./stage.js";

/**
 * The prompt's tokenizer pieces as chips; `set(phase)` lights them ("reading" during prefill, "cached"
 * after). Screen readers (and copy/find) get the prompt as one text, not piece by piece.
 */
export function promptView(tokens, partialLabel = null, text = null) {
  const chips = tokens.map((token) => {
    const chip = tokenChip(token);
    chip.setAttribute("aria-hidden", "true");
    if (token.partial && partialLabel) chip.title = partialLabel;
    return chip;
  });
  const whole = text ?? tokens.map((token) => token.text ?? "").join("");
  const node = h("p", { class: "pd-prompt" }, h("span", { class: "pd-visually-hidden", text: whole }), ...chips);
  return {
    node,
    set(phase) {
      setClass(node, "pd-prompt--reading", phase === "reading");
      setClass(node, "pd-prompt--cached", phase === "cached");
    },
  };
}

/**
 * The answer: one span per shown token, appended and removed so textContent is exactly the text
 * shown. `waiting` is shown before the first token.
 */
export function answerView(steps, answer, waiting) {
  const { pieces, exact } = answerPieces(steps, answer);
  const spans = pieces.map((piece) => h("span", { class: "pd-answer__token", text: piece }));
  const text = h("span", { class: "pd-answer__text", "data-pd-answer": "" });
  const placeholder = h("span", { class: "pd-answer__waiting", text: waiting });
  const node = h("p", { class: "pd-answer" }, placeholder, text);
  let shown = 0;
  let whole = false;
  return {
    node,
    set(count) {
      const complete = count === spans.length && spans.length > 0;
      if (!exact && complete !== whole) {
        // The pieces do not spell the recorded answer (byte-level tokens): show the answer itself.
        whole = complete;
        text.textContent = "";
        shown = 0;
        if (whole) text.append(h("span", { class: "pd-answer__token", text: answer }));
      }
      if (!whole) {
        while (shown < count) text.append(spans[shown++]);
        while (shown > count) spans[--shown].remove();
        spans.forEach((span, i) => setClass(span, "pd-answer__token--newest", i === count - 1));
      }
      placeholder.hidden = count > 0;
    },
    /** The text shown so far (what screen readers are told). */
    shownText() {
      return text.textContent;
    },
  };
}

/** A phase badge: prefill, decode or done (hidden before Play), with the label from strings. */
export function phaseBadge(text) {
  const name = h("span");
  const node = h("span", { class: "pd-phase" }, h("span", { class: "pd-visually-hidden", text: `${text("common.phase")}: ` }), name);
  return {
    node,
    set(phase) {
      node.hidden = phase === "ready";
      if (phase !== "ready") setText(name, text(`common.phase_${phase}`));
      node.dataset.pdPhase = phase;
    },
  };
}

/** Phase from the player state: nothing yet, prefill running, decoding, or all tokens out. */
export function phaseOf(state) {
  if (state.count === state.total && state.total > 0) return "done";
  if (state.count === 0) return state.t > 0 || state.playing ? "prefill" : "ready";
  return "decode";
}

/**
 * One frame of a prompt-and-answer stage, the same in every demo that has one: the phase badge, the
 * prompt chips (lit while prefill reads them, then cached), the answer so far, the clock and the TTFT.
 */
export function renderTurn({ phase, prompt, answer, elapsed, ttft }, state, { text, format, ticks }) {
  const current = phaseOf(state);
  phase.set(current);
  prompt.set(current === "prefill" ? "reading" : state.count > 0 ? "cached" : "idle");
  answer.set(state.count);
  setText(elapsed, text("common.elapsed", { ms: format.ms(state.t) }));
  setText(ttft.value, state.count > 0 ? format.ms(ticks[0]) : "–");
}
