// Plotly charts: load the library from the site only when a chart is in view and the reader has
// engaged with the page, draw the build's figure JSON in small scheduled steps, keep it themed, and
// show what the page asks for — a frame (Plotly.animate) or, for a chart given `reveal`, a cheap update
// of the full figure. The page's controls are the chart's only controls: figures carry none of Plotly's.
import { h, setText } from "./dom.js";
import { NARROW_PX, narrowLayout, sourceNoteLayout } from "./chart-layout.js";
import { whenEngaged, whenNear } from "./engagement.js";
import { applyUpdate, readPalette, themeUpdate, watchPalette } from "./plotly-theme.js";
import { schedule } from "./schedule.js";

const PLOTLY_URL = new URL("../vendor/plotly.min.js", import.meta.url);
const IN_VIEW = "100px 0px";
/** Name of a shape drawn over data not revealed yet: hover shows nothing under it. */
export const MASK = "pd-mask";
const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false, scrollZoom: false };
// The player moves in whole steps: each frame is shown at once, without a transition.
const STEP = { mode: "immediate", transition: { duration: 0 }, frame: { duration: 0, redraw: true } };

let plotlyPromise = null;
// One watcher keeps every drawn chart in the page's palette.
const drawnCharts = new Set();
watchPalette(() => {
  if (!drawnCharts.size) return;
  const palette = readPalette();
  for (const drawn of drawnCharts) drawn.theme(palette);
});

/** Inject the site's own plotly.min.js once; resolves to window.Plotly. */
function loadPlotly() {
  plotlyPromise ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = PLOTLY_URL.href;
    script.async = true;
    script.addEventListener("load", () => resolve(window.Plotly));
    script.addEventListener("error", () => reject(new Error(`could not load ${PLOTLY_URL.href}`)));
    document.head.append(script);
  });
  return plotlyPromise;
}

/** The figure's data and layout as they are in frame `index` (the figure's own when null). */
function figureAt(figure, index) {
  const data = figure.data.map((trace) => ({ ...trace }));
  const layout = structuredClone(figure.layout);
  const frame = index === null ? null : figure.frames?.[index];
  if (!frame) return { data, layout };
  const targets = frame.traces || frame.data.map((_, i) => i);
  targets.forEach((target, i) => { if (data[target]) Object.assign(data[target], frame.data[i]); });
  for (const [key, value] of Object.entries(frame.layout || {})) {
    const both = value && typeof value === "object" && layout[key] && typeof layout[key] === "object";
    layout[key] = both ? { ...layout[key], ...value } : value;
  }
  return { data, layout };
}

/** The colour a chart is painted on: the first opaque background among its ancestors. */
function backgroundBehind(node) {
  for (let element = node; element; element = element.parentElement) {
    const colour = getComputedStyle(element).backgroundColor;
    if (colour && colour !== "transparent" && !/rgba\(.*,\s*0\)$/.test(colour)) return colour;
  }
  return readPalette().background;
}

/**
 * Whether Plotly may show a hover label for this pointer event: not over data a mask hides (a shape named
 * MASK, as the decode demo's `reveal` draws over rows not decoded yet). Returning false cancels the hover.
 */
function hoverNotMasked(plot, event) {
  const layout = plot._fullLayout;
  const masks = (layout?.shapes || []).filter((shape) => shape.visible && shape.name === MASK && shape.yref === "y");
  if (!masks.length || !event?.target?.getBoundingClientRect) return true;
  const y = layout.yaxis.p2d(event.clientY - event.target.getBoundingClientRect().top); // as Plotly's own hover does
  return !masks.some((shape) => y >= Math.min(shape.y0, shape.y1) && y <= Math.max(shape.y0, shape.y1));
}

/**
 * A chart for `figure` (plotly.py's to_json as an object, with `label`, its title as plain text), drawn
 * once it is in view and the reader has engaged. Returns {node, show(position)}; `text` gives the
 * demo's strings (the loading and failure messages).
 *
 * Without `reveal`, show(i) animates to frame i (frames are named by their index; the demo's data
 * says which frame draws what). With `reveal(position, {background})`, show(position) is a
 * cheap update of the full figure instead, {restyle, relayout} for Plotly.update: no redraw per
 * step of the player. Before the chart is drawn, show() only chooses what it is drawn with.
 */
export function createChart(figure, text, { reveal = null } = {}) {
  const plot = h("div", { class: "pd-chart__plot" });
  const status = h("p", { class: "pd-chart__status", text: text("common.loading_chart") });
  const node = h("div", { class: "pd-chart", role: "img", "aria-label": figure.label }, status, plot);
  const height = figure.layout.height;
  if (height) node.style.setProperty("--pd-chart-height", `${height}px`);
  let drawn = false;
  let busy = false; // an animation is running: the latest wish waits for it, the ones before are dropped
  let wanted = null;
  let shown = null;

  const revealUpdate = (position) => reveal(position, { background: backgroundBehind(node) });

  /** Bring the drawn chart to what the page wants; resolves once it shows it. */
  async function catchUp() {
    if (!drawn || busy || wanted === null || wanted === shown) return;
    shown = wanted;
    if (reveal) {
      const { restyle = {}, relayout = {} } = revealUpdate(shown);
      await window.Plotly.update(plot, restyle, relayout);
      return;
    }
    busy = true;
    await window.Plotly.animate(plot, [String(shown)], STEP).catch(() => {});
    busy = false;
    await catchUp();
  }

  const chart = {
    node,
    /** Show frame `position` (an index), or, with `reveal`, whatever position reveal() takes. */
    show(position) {
      wanted = position;
      catchUp();
    },
    theme(palette) {
      window.Plotly.relayout(plot, themeUpdate(plot.layout, palette));
      if (reveal && shown !== null) window.Plotly.relayout(plot, revealUpdate(shown).relayout || {});
    },
  };

  // Each step is a task of its own (see schedule.js): the library, then the plot, then its frames.
  async function draw() {
    try {
      const Plotly = await schedule(loadPlotly);
      await schedule(() => {
        // Drawn straight in the frame the page wants (no second redraw to get there).
        shown = reveal ? null : wanted;
        const { data, layout } = figureAt(figure, shown);
        applyUpdate(layout, themeUpdate(layout, readPalette()));
        // Plotly does not wrap titles: on a phone, a smaller font keeps a long one inside the chart; on any
        // screen, a source note wider than the chart goes on more lines.
        if (plot.clientWidth && plot.clientWidth < NARROW_PX) applyUpdate(layout, narrowLayout(layout, data, plot.clientWidth));
        else if (plot.clientWidth) applyUpdate(layout, sourceNoteLayout(layout, plot.clientWidth));
        return Plotly.react(plot, data, layout, CONFIG);
      });
      if (reveal) plot.on("plotly_beforehover", (event) => hoverNotMasked(plot, event));
      if (figure.frames?.length) await schedule(() => Plotly.addFrames(plot, figure.frames));
      drawn = true;
      await catchUp();
      status.remove();
      node.dataset.pdChart = "ready";
      drawnCharts.add(chart);
    } catch (error) {
      node.dataset.pdChart = "error";
      setText(status, text("common.chart_failed"));
      throw error;
    }
  }

  // Drawn once it is in view and the reader has engaged with the page (a load alone draws nothing).
  whenNear(node, IN_VIEW).then(whenEngaged).then(draw);
  return chart;
}
