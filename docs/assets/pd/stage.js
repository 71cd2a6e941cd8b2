// What every demo does first: take over its stage, set up strings and number formatting,
// and read the recorded steps into the ticks the player runs on.
import { h, makeFormat, makeStrings } from "./dom.js";

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

/** Recorded clock: the time each shown token appeared (ms since the prompt arrived). */
export function ticksOf(steps) {
  return steps.map((step) => step.end_ms);
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
