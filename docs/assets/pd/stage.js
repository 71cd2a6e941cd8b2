// What every demo does first: take over its stage, set up strings and number formatting; and the
// player of a recorded answer, which the demos that play one share.
import { h, makeFormat, makeStrings } from "./dom.js";
import { createPlayer } from "./player.js";

/** Empty the stage, mark the demo live (CSS then hides the static fallback), return helpers. */
export function prepareStage(demo, data, { focusable = false } = {}) {
  const stage = demo.querySelector("[data-pd-stage]");
  stage.textContent = "";
  const text = makeStrings(data.strings, demo);
  const format = makeFormat();
  if (focusable) {
    // The stage takes keyboard focus so Space and the arrows drive the player.
    stage.tabIndex = 0;
    stage.setAttribute("role", "group");
    stage.setAttribute("aria-labelledby", demo.getAttribute("aria-labelledby"));
    stage.setAttribute("aria-keyshortcuts", "Space ArrowLeft ArrowRight Home End");
    stage.setAttribute("aria-describedby", `${demo.id}-keys`);
  }
  demo.classList.add("pd-demo--ready");
  return { stage, text, format };
}

/**
 * The player of a recorded answer, its controls and keyboard hint appended to the stage. Its clock is
 * the recording's: step i's token appears at its `end_ms` (ms since the prompt arrived). `options` are
 * createPlayer's text, reducedMotion, render and describe.
 */
export function playRecording(demo, stage, steps, options) {
  const player = createPlayer({ root: demo, ticks: steps.map((step) => step.end_ms), ...options });
  stage.append(player.controls, keysHint(demo, options.text));
}

/** A small hint under the controls telling keyboard users what the keys do. */
export function keysHint(demo, text) {
  return h("p", { class: "pd-keys", id: `${demo.id}-keys`, text: text("common.keyboard_help") });
}

/**
 * The <select> of the sources a demo shows (the build machine first, then projections), in its label;
 * `onChange(id)` when the reader picks one.
 */
export function sourceField(demo, sources, { label, selected, onChange }) {
  const id = `${demo.id}-source`;
  const select = h("select", { class: "pd-select", id }, ...sources.map((source) => h("option", { value: source.id }, source.label)));
  select.value = selected;
  select.addEventListener("change", () => onChange(select.value));
  return h("label", { class: "pd-field", for: id }, h("span", { text: label }), select);
}

/** A labelled readout: <div><dt>label</dt><dd>value</dd></div> inside a <dl>. */
export function readout(label) {
  const value = h("dd", { class: "pd-readout__value", text: "–" });
  const node = h("div", { class: "pd-readout" }, h("dt", { text: label }), value);
  return { node, value };
}
