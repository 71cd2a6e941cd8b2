// What every demo does first: take over its stage, set up strings and number formatting,
// and read the recorded trace into the ticks the player runs on.
import { h, isEndToken, makeFormat, makeStrings } from "./dom.js";

/** Empty the stage, mark the demo live (CSS then hides the static fallback), return helpers. */
export function prepareStage(demo, data, { focusable = false } = {}) {
  const stage = demo.querySelector("[data-pd-stage]") || demo.appendChild(h("div", { class: "pd-demo__stage" }));
  stage.textContent = "";
  const text = makeStrings(data.strings || {}, demo);
  const format = makeFormat(data.lang || demo.dataset.pdLang || document.documentElement.lang);
  if (focusable) {
    // The stage takes keyboard focus so Space and the arrows drive the player.
    stage.tabIndex = 0;
    stage.setAttribute("role", "group");
    const title = demo.getAttribute("aria-labelledby");
    if (title) stage.setAttribute("aria-labelledby", title);
    stage.setAttribute("aria-keyshortcuts", "Space ArrowLeft ArrowRight Home End");
    stage.setAttribute("aria-describedby", `${demo.id}-keys`);
  }
  demo.classList.add("pd-demo--ready");
  return { stage, text, format };
}

/** The steps that produce a shown token (the final end-of-sequence token is not shown). */
export function shownSteps(trace) {
  const steps = (trace?.steps || []).filter((step) => step.token);
  const last = steps[steps.length - 1];
  if (last && (trace.stop_reason === "eos" || isEndToken(last.token))) steps.pop();
  return steps;
}

/** Recorded clock: the time each shown token appeared (ms since the prompt arrived). */
export function ticksOf(steps) {
  return steps.map((step) => step.end_ms);
}

/** Text of the prompt as tokens: the demo's own prompt tokens if given, else the trace's. */
export function promptTokens(data) {
  return data.prompt?.tokens || data.trace?.prompt?.tokens || [];
}

/** A small hint under the controls telling keyboard users what the keys do. */
export function keysHint(demo, text) {
  return h("p", { class: "pd-keys", id: `${demo.id}-keys`, text: text("common.keyboard_help") });
}

/** A labelled readout: <div><dt>label</dt><dd>value</dd></div> inside a <dl>. */
export function readout(label) {
  const value = h("dd", { class: "pd-readout__value", text: "–" });
  const node = h("div", { class: "pd-readout" }, h("dt", { text: label }), value);
  return { node, value };
}

/** True for a token that holds bytes of a character that never completes (decoded alone: U+FFFD). */
export function isIncomplete(token) {
  return Boolean(token?.bytes) && (token.text ?? "").includes("\ufffd");
}

/**
 * What each shown token adds to the answer: its text, or `{ bytes }` for a token whose bytes never
 * make a whole character (shown as hex, not as "\ufffd"). A token that carries part of a multi-byte
 * character shows that whole character (partial: true), so a run of partial tokens would repeat it:
 * drop the overlap. If the pieces still do not spell the recorded answer, `exact` is false and the
 * demo shows the recorded answer itself once every token is out.
 */
export function answerPieces(steps, answer) {
  const pieces = [];
  let previous = null;
  for (const step of steps) {
    if (isIncomplete(step.token)) {
      pieces.push({ bytes: step.token.bytes });
      previous = null;
      continue;
    }
    let piece = step.token.text ?? "";
    if (previous?.partial && step.token.partial) {
      const before = previous.text ?? "";
      let overlap = Math.min(before.length, piece.length);
      while (overlap > 0 && !before.endsWith(piece.slice(0, overlap))) overlap -= 1;
      piece = piece.slice(overlap);
    }
    pieces.push(piece);
    previous = step.token;
  }
  const spelled = pieces.filter((piece) => typeof piece === "string").join("");
  const exact = typeof answer !== "string" || spelled.trim() === answer.replace(/\ufffd/g, "").trim();
  return { pieces, exact };
}
