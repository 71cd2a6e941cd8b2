// batching (batching chapter): two views of the batch measurement.
// 1. A slider over the batch size B moves the measured decode step along this machine's roofline toward
//    its ridge point; read-outs give the aggregate tokens/s and each user's ms per token, and a to-scale
//    picture of one step shows one read of the weights (plus each user's KV cache) and B tokens out.
// 2. Two users, the whole prompt prefilled at once vs in chunks, played on the recorded clock by the
//    page's player (play, scrubber, keyboard). Everything drawn comes from the JSON (`data.batching`).
import { h, setAttr, setClass, setText } from "../dom.js";
import { createPlayer } from "../player.js";
import { prepareStage, readout } from "../stage.js";

const SVG = "http://www.w3.org/2000/svg";
// The roofline's drawing box (SVG user units; the SVG scales to the column's width).
const ROOF = { width: 360, height: 220, left: 46, right: 12, top: 12, bottom: 38 };
const LANES = { width: 360, left: 70, right: 8, lane: 18, gap: 6, top: 6, axis: 18 };

function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) if (child) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** A log10 scale from [low, high] onto [from, to]. */
function logScale(low, high, from, to) {
  const a = Math.log10(low);
  const span = Math.log10(high) - a || 1;
  return (value) => from + ((Math.log10(value) - a) / span) * (to - from);
}

/** Powers of ten within [low, high] (axis ticks). */
function decades(low, high) {
  const ticks = [];
  for (let e = Math.ceil(Math.log10(low)); e <= Math.floor(Math.log10(high)); e += 1) ticks.push(10 ** e);
  return ticks;
}

function rooflineView(batching, text, format) {
  const { machine, points } = batching;
  const intensities = points.map((p) => p.intensity);
  const xLow = Math.min(...intensities, machine.ridge) / 2;
  const xHigh = Math.max(...intensities, machine.ridge) * 2;
  const yLow = Math.min(...points.map((p) => p.gflops), xLow * machine.peak_gbps) / 2;
  const yHigh = machine.peak_gflops * 2;
  const x = logScale(xLow, xHigh, ROOF.left, ROOF.width - ROOF.right);
  const y = logScale(yLow, yHigh, ROOF.height - ROOF.bottom, ROOF.top);
  const roof = `M${x(xLow)},${y(xLow * machine.peak_gbps)} L${x(machine.ridge)},${y(machine.peak_gflops)} L${x(xHigh)},${y(machine.peak_gflops)}`;
  const path = points.map((p, i) => `${i ? "L" : "M"}${x(p.intensity).toFixed(1)},${y(p.gflops).toFixed(1)}`).join(" ");
  const dot = s("circle", { class: "pd-batching__point", r: 5 });
  const dotLabel = s("text", { class: "pd-batching__point-label", "text-anchor": "middle" });
  const axes = s("g", { class: "pd-batching__axes" },
    ...decades(xLow, xHigh).map((v) => s("g", {},
      s("line", { x1: x(v), x2: x(v), y1: ROOF.top, y2: ROOF.height - ROOF.bottom, class: "pd-batching__grid" }),
      s("text", { x: x(v), y: ROOF.height - ROOF.bottom + 12, "text-anchor": "middle" }, format.number(v, 0)))),
    ...decades(yLow, yHigh).map((v) => s("g", {},
      s("line", { x1: ROOF.left, x2: ROOF.width - ROOF.right, y1: y(v), y2: y(v), class: "pd-batching__grid" }),
      s("text", { x: ROOF.left - 4, y: y(v) + 3, "text-anchor": "end" }, format.number(v, 0)))),
    s("text", { x: (ROOF.left + ROOF.width - ROOF.right) / 2, y: ROOF.height - 6, "text-anchor": "middle" },
      text("batching.axis_intensity")),
    s("text", { x: 10, y: (ROOF.top + ROOF.height - ROOF.bottom) / 2, "text-anchor": "middle",
      transform: `rotate(-90 10 ${(ROOF.top + ROOF.height - ROOF.bottom) / 2})` }, text("batching.axis_gflops")));
  const svg = s("svg", { class: "pd-batching__roofline", viewBox: `0 0 ${ROOF.width} ${ROOF.height}`, role: "img",
    "aria-label": text("batching.roofline_label") },
  axes,
  s("path", { d: roof, class: "pd-batching__roof" }),
  s("line", { x1: x(machine.ridge), x2: x(machine.ridge), y1: ROOF.top, y2: ROOF.height - ROOF.bottom, class: "pd-batching__ridge" }),
  s("text", { x: x(machine.ridge) + 4, y: ROOF.top + 10, class: "pd-batching__ridge-label" }, text("batching.ridge")),
  s("path", { d: path, class: "pd-batching__path" }),
  ...points.map((p) => s("circle", { cx: x(p.intensity), cy: y(p.gflops), r: 2.5, class: "pd-batching__measured" })),
  dot, dotLabel);
  return {
    node: h("div", { class: "pd-batching__chart" }, svg),
    show(point) {
      setAttr(dot, "cx", x(point.intensity).toFixed(1));
      setAttr(dot, "cy", y(point.gflops).toFixed(1));
      setAttr(dotLabel, "x", x(point.intensity).toFixed(1));
      setAttr(dotLabel, "y", (y(point.gflops) - 9).toFixed(1));
      setText(dotLabel, text("batching.batch_label", { batch: point.batch }));
    },
  };
}

/** One step to scale: a bar of the bytes read (weights once, then each user's KV cache), B tokens out. */
function stepView(batching, text, format) {
  const largest = Math.max(...batching.points.map((p) => p.weight_bytes + p.kv_bytes));
  const weights = h("span", { class: "pd-batching__bytes pd-batching__bytes--weights" });
  const kv = h("span", { class: "pd-batching__bytes pd-batching__bytes--kv" });
  const bar = h("div", { class: "pd-batching__bar", "aria-hidden": "true" }, weights, kv);
  const tokens = h("div", { class: "pd-batching__tokens", "aria-hidden": "true" });
  const caption = h("p", { class: "pd-batching__caption" });
  const legend = h("p", { class: "pd-keys" },
    h("span", { class: "pd-batching__swatch pd-batching__swatch--weights" }), ` ${text("batching.legend_weights")}  `,
    h("span", { class: "pd-batching__swatch pd-batching__swatch--kv" }), ` ${text("batching.legend_kv")}  `,
    h("span", { class: "pd-batching__swatch pd-batching__swatch--token" }), ` ${text("batching.legend_token")}`);
  return {
    node: h("div", { class: "pd-batching__step" }, h("p", { class: "pd-keys", text: text("batching.step_title") }),
      bar, tokens, legend, caption),
    show(point) {
      weights.style.setProperty("--pd-share", (point.weight_bytes / largest).toFixed(4));
      kv.style.setProperty("--pd-share", (point.kv_bytes / largest).toFixed(4));
      if (tokens.childElementCount !== point.batch) {
        tokens.replaceChildren(...Array.from({ length: point.batch }, () => h("span", { class: "pd-batching__token" })));
      }
      setText(caption, text("batching.step_caption", {
        weights: format.bytes(point.weight_bytes), kv: format.bytes(point.kv_bytes), batch: point.batch,
        ms: format.ms(point.step_ms),
      }));
    },
  };
}

function batchView(demo, batching, text, format) {
  const { points } = batching;
  const id = demo.id || "pd-batching";
  const state = { index: 0 };
  const slider = h("input", { type: "range", class: "pd-range", id: `${id}-batch`, min: 0, max: points.length - 1,
    step: 1, value: 0 });
  const batchText = h("output", { for: `${id}-batch`, class: "pd-field__value" });
  const tps = readout(text("batching.throughput"));
  const perUser = readout(text("batching.per_user"));
  const step = readout(text("batching.step_ms"));
  const util = readout(text("batching.bandwidth_util"));
  const compute = readout(text("batching.compute_util"));
  const roof = rooflineView(batching, text, format);
  const picture = stepView(batching, text, format);
  // The knee, measured beside predicted, and each projected device's (a bound): labels from the build.
  const knees = h("dl", { class: "pd-readouts pd-batching__knees" },
    h("div", { class: "pd-readout" }, h("dt", { text: text("batching.knee_measured") }), h("dd", { text: batching.knee.label })),
    h("div", { class: "pd-readout" }, h("dt", { text: text("batching.knee_predicted") }),
      h("dd", { text: batching.knee.predicted })),
    ...batching.projected_knees.map((knee) => h("div", { class: "pd-readout" },
      h("dt", { text: knee.name }),
      h("dd", { text: knee.label }))));
  const node = h("section", { class: "pd-batching__batch", "aria-label": text("batching.batch_view") },
    h("div", { class: "pd-fields" },
      h("label", { class: "pd-field pd-field--wide", for: `${id}-batch` },
        h("span", { text: text("batching.slider") }), slider, batchText)),
    h("dl", { class: "pd-readouts", "aria-live": "polite", "aria-label": text("batching.readouts") },
      tps.node, perUser.node, step.node, util.node, compute.node),
    roof.node, knees, picture.node);

  function render() {
    const point = points[state.index];
    const label = format.number(point.batch, 0);
    setText(batchText, label);
    setAttr(slider, "aria-valuetext", text("batching.batch_label", { batch: label }));
    setText(tps.value, `${format.number(point.tokens_per_s)} tok/s`);
    setText(perUser.value, format.ms(point.ms_per_token));
    setText(step.value, format.ms(point.step_ms));
    setText(util.value, format.percent(point.bandwidth_utilization));
    setText(compute.value, format.percent(point.compute_utilization));
    demo.dataset.pdBatch = String(point.batch);
    roof.show(point);
    picture.show(point);
  }
  slider.addEventListener("input", () => {
    state.index = Number(slider.value);
    render();
  });
  render();
  return node;
}

/** One case's two lanes (streaming, arriving) on the shared clock; events appear as the clock reaches them. */
function laneView(twoUsers, kase, text, format) {
  const span = twoUsers.duration_ms || 1;
  const inner = LANES.width - LANES.left - LANES.right;
  const x = (ms) => LANES.left + (ms / span) * inner;
  const rowY = (row) => LANES.top + row * (LANES.lane + LANES.gap);
  const height = rowY(2) + LANES.axis;
  const marks = kase.events.map((event) => {
    const row = event.user === "streaming" ? 0 : 1;
    const mark = event.what === "token"
      ? s("rect", { x: x(event.at_ms) - 1.5, y: rowY(row) + 2, width: 3, height: LANES.lane - 4, class: `pd-batching__event pd-batching__event--token` })
      : s("rect", { x: x(event.at_ms) - 1, y: rowY(row) + 5, width: 2, height: LANES.lane - 10, class: "pd-batching__event pd-batching__event--prefill" });
    return { event, mark };
  });
  const stall = kase.stall ? s("rect", { x: x(kase.stall.from_ms), y: rowY(0), width: 0, height: LANES.lane, class: "pd-batching__stall" }) : null;
  const cursor = s("line", { y1: LANES.top - 2, y2: rowY(2) - LANES.gap + 2, class: "pd-batching__cursor" });
  const svg = s("svg", { class: "pd-batching__lanes", viewBox: `0 0 ${LANES.width} ${height}`, "aria-hidden": "true" },
    s("text", { x: LANES.left - 4, y: rowY(0) + LANES.lane * 0.7, "text-anchor": "end" }, twoUsers.users.streaming),
    s("text", { x: LANES.left - 4, y: rowY(1) + LANES.lane * 0.7, "text-anchor": "end" }, twoUsers.users.arriving),
    s("line", { x1: LANES.left, x2: LANES.width - LANES.right, y1: rowY(2) - 2, y2: rowY(2) - 2, class: "pd-batching__grid" }),
    s("line", { x1: x(twoUsers.arrival_ms), x2: x(twoUsers.arrival_ms), y1: LANES.top, y2: rowY(2) - 2, class: "pd-batching__arrival" }),
    s("text", { x: x(twoUsers.arrival_ms), y: height - 4, "text-anchor": "middle" }, text("batching.arrival")),
    stall, ...marks.map((m) => m.mark), cursor);
  const stallOut = readout(text("batching.stall"));
  const ttftOut = readout(text("batching.ttft"));
  const node = h("div", { class: "pd-batching__case", "data-pd-case": kase.id },
    h("p", { class: "pd-batching__case-title", text: kase.label }), svg,
    h("dl", { class: "pd-readouts" }, stallOut.node, ttftOut.node));
  const firstToken = kase.events.find((e) => e.user === "arriving" && e.what === "token");
  return {
    node,
    show(t) {
      for (const { event, mark } of marks) setClass(mark, "pd-batching__event--off", event.at_ms > t);
      setAttr(cursor, "x1", x(Math.min(t, span)).toFixed(1));
      setAttr(cursor, "x2", x(Math.min(t, span)).toFixed(1));
      if (stall) {
        const shown = Math.max(0, Math.min(t, kase.stall.to_ms) - kase.stall.from_ms);
        setAttr(stall, "width", ((shown / span) * inner).toFixed(1));
      }
      const stallDone = !kase.stall || t >= kase.stall.to_ms;
      setText(stallOut.value, stallDone ? format.ms(kase.stall_ms) : "–");
      setText(ttftOut.value, firstToken && t >= firstToken.at_ms ? format.ms(kase.ttft_ms) : "–");
    },
  };
}

function usersView(demo, twoUsers, text, format, reducedMotion) {
  const root = h("section", { class: "pd-batching__users", id: `${demo.id || "pd-batching"}-users`, tabindex: 0,
    role: "group", "aria-label": text("batching.users_title"), "aria-keyshortcuts": "Space ArrowLeft ArrowRight Home End" });
  const lanes = twoUsers.cases.map((kase) => laneView(twoUsers, kase, text, format));
  const clock = h("p", { class: "pd-keys pd-batching__clock" });
  // Time to the new user's arrival, then since it: never a negative time.
  const clockText = (t) => (t < twoUsers.arrival_ms
    ? text("batching.clock_before", { ms: format.ms(twoUsers.arrival_ms - t) })
    : text("batching.clock", { ms: format.ms(t - twoUsers.arrival_ms) }));
  const player = createPlayer({
    root, ticks: twoUsers.ticks, text, reducedMotion,
    render(state) {
      for (const lane of lanes) lane.show(state.t);
      setText(clock, clockText(state.t));
    },
    describe: (state) => clockText(state.t),
  });
  root.append(h("p", { class: "pd-batching__users-title", text: text("batching.users_title") }),
    h("p", { class: "pd-keys", text: text("batching.users_caption", {
      prompt: format.number(twoUsers.prompt_tokens, 0), chunk: format.number(twoUsers.chunk_tokens, 0) }) }),
    player.controls, clock, ...lanes.map((lane) => lane.node),
    h("p", { class: "pd-keys", text: text("common.keyboard_help") }));
  return root;
}

export function mount(demo, data, { reducedMotion = false } = {}) {
  const { stage, text, format } = prepareStage(demo, data);
  const batching = data.batching;
  if (!batching?.points?.length) throw new Error("batching demo: the JSON has no measured batch sizes");
  stage.append(batchView(demo, batching, text, format),
    usersView(demo, batching.two_users, text, format, reducedMotion));
}
