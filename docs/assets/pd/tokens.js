// Token views shared by the demos: the prompt as chips, and the answer growing token by token.
import { h, setClass, setText, tokenChip } from "./dom.js";

const ROLES = ["template", "system", "user"];

/** A chip screen readers skip (the text it shows is given to them once, elsewhere). */
function hiddenChip(token) {
  const chip = tokenChip(token);
  chip.setAttribute("aria-hidden", "true");
  return chip;
}

/**
 * The prompt's tokenizer pieces as chips; `set(phase)` lights them ("reading" during prefill, "cached"
 * after). Screen readers (and copy/find) get the prompt as one text, `promptText`, not piece by piece.
 */
export function promptView(tokens, promptText) {
  const node = h("p", { class: "pd-prompt" }, h("span", { class: "pd-visually-hidden", text: promptText }),
    ...tokens.map(hiddenChip));
  return { node, set: phaseSetter(node) };
}

function phaseSetter(node) {
  return (phase) => {
    setClass(node, "pd-prompt--reading", phase === "reading");
    setClass(node, "pd-prompt--cached", phase === "cached");
  };
}

/**
 * promptView's chips as a list a reader walks with Tab and the arrow keys, each showing its bytes on hover
 * and on focus: one focusable item per token (roving tabindex: the list is one Tab stop, arrows move inside it).
 */
export function inspectablePromptView(tokens, text) {
  const items = tokens.map((token, i) => {
    const bytes = token.bytes ? h("span", { class: "pd-token__bytes", text: `${text("common.bytes_label")} ${token.bytes}` }) : null;
    const partial = token.partial ? h("span", { class: "pd-visually-hidden", text: ` (${text("prefill.partial_token")})` }) : null;
    return h("li", { class: "pd-token-item", tabindex: i === 0 ? 0 : -1 }, tokenChip(token), partial, bytes);
  });
  const node = h("ol", { class: "pd-prompt pd-prompt--inspect", "aria-label": text("prefill.tokens_list") }, ...items);
  const moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
  node.addEventListener("keydown", (event) => {
    const from = items.indexOf(event.target);
    if (from < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
    const to = event.key === "Home" ? 0 : event.key === "End" ? items.length - 1
      : event.key in moves ? Math.max(0, Math.min(items.length - 1, from + moves[event.key])) : null;
    if (to === null) return;
    // Inside the list the arrows move between tokens; they do not step the player.
    event.preventDefault();
    event.stopPropagation();
    items[from].tabIndex = -1;
    items[to].tabIndex = 0;
    items[to].focus();
  });
  return { node, set: phaseSetter(node) };
}

/**
 * What the reader needs to read the chips: a legend of the roles present (chat template, system
 * prompt, the prompt itself) with the build's sentence counting them; null if every token is the
 * prompt's own. `prompt`: the JSON's prompt ({ tokens, summary, system_is_default }).
 */
export function rolesLegend({ tokens, summary, system_is_default: systemDefault }, text) {
  const present = ROLES.filter((role) => tokens.some((token) => token.role === role));
  if (!present.some((role) => role !== "user")) return null;
  const name = (role) => text(role === "system" && systemDefault ? "common.role_system_default" : `common.role_${role}`);
  const entries = present.map((role) => {
    const sample = hiddenChip({ ...tokens.find((token) => token.role === role), partial: false });
    return h("li", { "data-pd-role": role }, sample, h("span", { text: name(role) }));
  });
  return h("div", { class: "pd-roles" },
    h("ul", { class: "pd-legend", "aria-label": text("common.roles_legend") }, ...entries),
    summary ? h("p", { class: "pd-roles__summary", text: summary }) : null);
}

/** The legend of split characters: a sample partial chip and a whole one, then what they mean. */
export function partialLegend(tokens, text) {
  const partial = tokens.find((token) => token.partial);
  if (!partial) return null;
  const whole = tokens.find((token) => !token.partial && token.text);
  const sample = (token) => hiddenChip({ text: token.text, partial: token.partial });
  return h("div", { class: "pd-roles" },
    h("ul", { class: "pd-legend", "aria-hidden": "true" },
      h("li", {}, sample(partial), h("span", { text: text("prefill.partial_legend_short") })),
      whole ? h("li", {}, sample(whole), h("span", { text: text("prefill.whole_legend_short") })) : null),
    h("p", { class: "pd-roles__summary", text: text("prefill.partial_legend") }));
}

/**
 * The answer: one span per shown token, appended and removed so textContent is exactly the text
 * shown. Each step carries the piece it adds (the build worked it out): its text, or `{ bytes }` for a
 * token whose bytes make no whole character, with a sentence saying why. If the pieces do not spell
 * the recorded answer (`answer.exact` false), the answer itself is shown once every token is out.
 * Under it, the build's notes: why the answer stops (once it has), and the small-model caveat.
 */
export function answerView(steps, answer, text) {
  const spans = steps.map(({ piece }) => ("bytes" in piece
    ? h("span", { class: "pd-answer__token pd-token pd-token--partial pd-answer__bytes", text: piece.bytes })
    : h("span", { class: "pd-answer__token", text: piece.text })));
  const { exact, notes } = answer;
  const shown = h("span", { class: "pd-answer__text", "data-pd-answer": "" });
  const placeholder = h("span", { class: "pd-answer__waiting", text: text("common.waiting") });
  const why = h("p", { class: "pd-answer__note", hidden: true, text: text("common.incomplete_token") });
  const stopped = notes.stopped ? h("p", { class: "pd-answer__note", hidden: true, text: notes.stopped }) : null;
  const caveat = notes.caveat ? h("p", { class: "pd-answer__note", text: notes.caveat }) : null;
  const node = h("div", { class: "pd-answer-block" }, h("p", { class: "pd-answer" }, placeholder, shown), why, stopped,
    caveat);
  let appended = 0;
  let whole = false;
  return {
    node,
    set(count) {
      const complete = count === spans.length && spans.length > 0;
      if (!exact && complete !== whole) {
        // The pieces do not spell the recorded answer (byte-level tokens): show the answer itself.
        whole = complete;
        shown.textContent = "";
        appended = 0;
        if (whole) shown.append(h("span", { class: "pd-answer__token", text: answer.text }));
      }
      if (!whole) {
        while (appended < count) shown.append(spans[appended++]);
        while (appended > count) spans[--appended].remove();
        spans.forEach((span, i) => setClass(span, "pd-answer__token--newest", i === count - 1));
      }
      placeholder.hidden = count > 0;
      why.hidden = !shown.querySelector(".pd-answer__bytes");
      if (stopped) stopped.hidden = !complete;
    },
    /** The text shown so far (what screen readers are told). */
    shownText() {
      return shown.textContent;
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
 * prompt chips (lit while prefill reads them, then cached), the answer so far, the clock, the TTFT and
 * the KV cache meter, filled to `share(step)`. Returns the step shown last (null before the first token).
 */
export function renderTurn({ phase, prompt, answer, elapsed, ttft, cache }, state, { text, format, steps, share }) {
  const current = phaseOf(state);
  phase.set(current);
  prompt.set(current === "prefill" ? "reading" : state.count > 0 ? "cached" : "idle");
  answer.set(state.count);
  setText(elapsed, text("common.elapsed", { ms: format.ms(state.t) }));
  setText(ttft.value, state.count > 0 ? format.ms(steps[0].end_ms) : "–");
  const step = state.count > 0 ? steps[state.count - 1] : null;
  cache.set(step ? share(step) : 0, text("common.kv_meter", {
    tokens: format.number(step ? step.kv_tokens : 0, 0), bytes: format.bytes(step ? step.kv_bytes : 0),
  }));
  return step;
}
