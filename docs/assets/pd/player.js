// The shared player: plays a recorded trace on its own clock (real milliseconds × a speed factor), or
// steps through a chart's frames (createStepper). It is the only set of controls a demo has: charts
// carry none of Plotly's. State lives in one object; every change goes through update(), which calls
// render(state). `ticks[i]` is the time (ms) at which item i+1 appears; `count` items are shown at `t`.
import { h, icon, setAttr, setClass, setText } from "./dom.js";
import { setPlaying } from "./schedule.js";

const SPEEDS = [0.25, 0.5, 1, 2, 4];
// A token shown for less than this is a blur; below it the default becomes "slow motion".
const VISIBLE_TOKEN_MS = 180;
// ...but slow motion never stretches a whole recording beyond this.
const LONGEST_PLAYBACK_MS = 20000;
// Cap one animation frame's step so a backgrounded tab does not jump to the end.
const MAX_FRAME_MS = 100;
// A stepper shows each of its frames this long at 1×: long enough to read what changed.
const STEP_MS = 800;

/**
 * How many items are visible at time t: those whose tick (ascending) is at most t. Called every
 * animation frame, so a binary search rather than a scan of every tick.
 */
export function countAt(ticks, t) {
  let low = 0;
  let high = ticks.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (ticks[mid] <= t) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Time at which exactly `count` tokens are visible (the moment the last of them appeared). */
export function timeOf(ticks, count) {
  return count <= 0 ? 0 : ticks[Math.min(count, ticks.length) - 1];
}

/** Speed factor that shows a typical token for about VISIBLE_TOKEN_MS, or null if 1× is slow enough. */
export function slowMotionFactor(ticks) {
  const gaps = ticks.map((tick, i) => tick - (i ? ticks[i - 1] : 0)).filter((gap) => gap > 0).sort((a, b) => a - b);
  if (!gaps.length) return null;
  const median = gaps[gaps.length >> 1];
  if (median >= VISIBLE_TOKEN_MS * 0.6) return null;
  const factor = Math.max(median / VISIBLE_TOKEN_MS, ticks[ticks.length - 1] / LONGEST_PLAYBACK_MS);
  if (factor >= 1) return null;
  const digits = Math.max(0, 1 - Math.floor(Math.log10(factor)));
  return Number(factor.toFixed(Math.min(digits, 6)));
}


/** Speed forced by the page URL (?pd-speed=64), used by tests; null when absent or invalid. */
export function speedFromUrl() {
  const raw = new URLSearchParams(window.location.search).get("pd-speed");
  const value = raw === null ? NaN : Number(raw);
  return Number.isFinite(value) && value > 0 && value <= 10000 ? value : null;
}

/**
 * Build a player for `ticks` and wire it to `root` (the demo element, which gets keyboard handling).
 * render(state) is called after every change; describe(state) gives the text announced to screen readers.
 * The scrubber runs from the count shown at t = 0 (0 on a recorded clock) to ticks.length. Optional:
 * `start`, the count shown first (default: the end under reduced motion, else the start); `label`, a
 * visible name for the scrubber with `valueText(state)` shown beside it (default: a hidden "progress"
 * and "count / total"); `recorded` false when the clock is not a recording: no speed choice then (it
 * offers real time and slow motion of a recording; a stepper's pace is its own).
 */
export function createPlayer({
  root, ticks, text, reducedMotion, render, describe, start = null, label = null, valueText = null, recorded = true,
}) {
  const total = ticks.length;
  const first = countAt(ticks, 0);
  const duration = total ? ticks[total - 1] : 0;
  const slow = recorded ? slowMotionFactor(ticks) : null;
  const forced = speedFromUrl();
  const initial = Math.max(first, Math.min(total, start ?? (reducedMotion ? total : first)));
  const state = {
    t: timeOf(ticks, initial),
    count: initial,
    total,
    playing: false,
    speed: forced ?? slow ?? 1,
  };
  const shownValue = valueText || ((current) => `${current.count} / ${total}`);

  const playIcon = icon("play");
  const pauseIcon = icon("pause");
  const playLabel = h("span");
  const playButton = h("button", { type: "button", class: "pd-button pd-button--play" }, playIcon, pauseIcon, playLabel);
  const backButton = h("button", { type: "button", class: "pd-button", "aria-label": text("common.step_back"), title: text("common.step_back") }, icon("back"));
  const forwardButton = h("button", { type: "button", class: "pd-button", "aria-label": text("common.step_forward"), title: text("common.step_forward") }, icon("forward"));
  const restartButton = h("button", { type: "button", class: "pd-button", "aria-label": text("common.restart"), title: text("common.restart") }, icon("restart"));
  const scrubberId = `${root.id}-scrubber`;
  const scrubber = h("input", {
    type: "range", class: "pd-scrubber", id: scrubberId, min: first, max: total, step: 1, value: state.count,
  });
  const valueOutput = label ? h("output", { class: "pd-controls__value", for: scrubberId }) : null;
  const speedId = `${root.id}-speed`;
  const speedSelect = h("select", { class: "pd-select", id: speedId });
  const factors = new Set(SPEEDS);
  if (slow) factors.add(slow);
  if (forced) factors.add(forced);
  for (const factor of [...factors].sort((a, b) => a - b)) {
    const factorText = text("common.speed_value", { factor });
    const name = factor === slow ? `${text("common.slow_motion")} (${factorText})`
      : factor === 1 ? `${factorText} ${text("common.real_time")}` : factorText;
    speedSelect.append(h("option", { value: factor, selected: factor === state.speed }, name));
  }
  const live = h("p", { class: "pd-visually-hidden", "aria-live": "polite", "aria-atomic": "true" });

  const controls = h("div", { class: "pd-controls", role: "group", "aria-label": text("common.controls") },
    reducedMotion ? null : playButton,
    backButton, forwardButton, restartButton,
    h("label", { class: "pd-controls__scrub", for: scrubberId },
      h("span", label ? { class: "pd-controls__label", text: label } : { class: "pd-visually-hidden", text: text("common.scrubber") }),
      scrubber, valueOutput),
    reducedMotion || !recorded ? null : h("label", { class: "pd-controls__speed", for: speedId },
      h("span", { text: text("common.speed") }), speedSelect),
    live);

  let frame = 0;
  let lastNow = 0;

  const announce = () => setText(live, describe(state));

  function update(changes) {
    Object.assign(state, changes);
    setPlaying(root.id, state.playing); // heavy chart work waits while this plays
    state.count = countAt(ticks, state.t);
    setText(playLabel, state.playing ? text("common.pause") : text("common.play"));
    setClass(playIcon, "pd-icon--off", state.playing);
    setClass(pauseIcon, "pd-icon--off", !state.playing);
    if (scrubber.value !== String(state.count)) scrubber.value = String(state.count);
    setAttr(scrubber, "aria-valuetext", shownValue(state));
    if (valueOutput) setText(valueOutput, shownValue(state));
    backButton.disabled = state.count === first;
    forwardButton.disabled = state.count === total;
    root.dataset.pdState = state.playing ? "playing" : state.count === total ? "ended" : "paused";
    root.dataset.pdCount = String(state.count);
    render(state);
  }

  function tick(now) {
    // A frame's timestamp can precede the performance.now() that play() read: never step backwards
    // (before the first frame a stepper has nothing to show).
    const elapsed = Math.max(0, Math.min(MAX_FRAME_MS, now - lastNow));
    lastNow = now;
    const t = Math.min(duration, state.t + elapsed * state.speed);
    if (t >= duration) {
      update({ t: duration, playing: false });
      announce();
      return;
    }
    update({ t });
    frame = requestAnimationFrame(tick);
  }

  function play() {
    if (reducedMotion || state.playing || !total) return;
    const from = state.count === total ? timeOf(ticks, first) : state.t;
    lastNow = performance.now();
    update({ t: from, playing: true });
    frame = requestAnimationFrame(tick);
  }

  function pause() {
    cancelAnimationFrame(frame);
    update({ playing: false });
    announce();
  }

  function seek(count) {
    cancelAnimationFrame(frame);
    const clamped = Math.max(first, Math.min(total, count));
    update({ t: timeOf(ticks, clamped), playing: false });
    announce();
  }

  const step = (delta) => seek(state.count + delta);
  playButton.addEventListener("click", () => (state.playing ? pause() : play()));
  backButton.addEventListener("click", () => step(-1));
  forwardButton.addEventListener("click", () => step(1));
  restartButton.addEventListener("click", () => {
    seek(0);
    play();
  });
  scrubber.addEventListener("input", () => seek(Number(scrubber.value)));
  speedSelect.addEventListener("change", () => update({ speed: Number(speedSelect.value) }));

  // Keyboard on the demo: Space play/pause, ←/→ one token (or frame), Home/End. Form controls keep their own keys.
  root.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (target instanceof HTMLSelectElement || target instanceof HTMLInputElement) return;
    const onButton = target instanceof HTMLButtonElement;
    const actions = {
      " ": onButton ? null : () => (state.playing ? pause() : reducedMotion ? step(1) : play()),
      ArrowLeft: () => step(-1),
      ArrowRight: () => step(1),
      Home: () => seek(0),
      End: () => seek(total),
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  update({});
  return { controls };
}

/**
 * A player over a chart's frames instead of a recording: one frame per entry of `values` (what the scrubber
 * shows for it), each shown STEP_MS at 1×, frame `start` first; render(index) draws frame `index`. Takes
 * createPlayer's root, text, reducedMotion and label; screen readers are told the label and the value.
 */
export function createStepper({ values, start, render, ...options }) {
  const valueText = (state) => values[state.count - 1];
  return createPlayer({
    ...options, ticks: values.map((_, i) => i * STEP_MS), start: start + 1, recorded: false, valueText,
    render: (state) => render(state.count - 1),
    describe: (state) => `${options.label} ${valueText(state)}`,
  });
}
