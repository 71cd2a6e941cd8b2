// Plotly charts: load the library from the site only when a chart is in view and the reader has
// engaged with the page, draw the build's figure JSON in small scheduled steps, keep it themed, and
// let the player step through its frames.
import { h, setText } from "./dom.js";
import { whenEngaged } from "./engagement.js";
import { applyUpdate, currentScheme, readPalette, themeUpdate, watchPalette } from "./plotly-theme.js";
import { schedule } from "./schedule.js";

const PLOTLY_URL = new URL("../vendor/plotly.min.js", import.meta.url);
const IN_VIEW = "100px 0px";
const NARROW_PX = 560;
const NARROW_TITLE_PX = 13;
const TITLE_LINE_PX = 18; // the extra top margin a second title line takes
/** Name of a shape drawn over data not revealed yet: hover shows nothing under it. */
export const MASK = "pd-mask";
const SOURCE = "pd-source"; // the build's source note under every figure
const SOURCE_LINE_PX = 13;
const LEGEND_SYMBOL_PX = 56; // a legend entry's symbol and padding
const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false, scrollZoom: false };
// A frame change that keeps the main thread longer than this would stutter playback (and count as a
// long task): such a chart is then brought in step whenever playback pauses, not on every token.
const LIVE_BUDGET_MS = 50;
const ONE_FRAME_MS = 17;

let plotlyPromise = null;
const charts = new Set();

/** Inject the site's own plotly.min.js once; resolves to window.Plotly. */
function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
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

function retheme() {
  const palette = readPalette(currentScheme());
  for (const chart of charts) chart.theme(palette);
}

let watching = false;
function watchOnce() {
  if (watching) return;
  watching = true;
  watchPalette(retheme);
}

/** The accessible name of a chart: the plain title its figure carries, else the strings key `fallbackKey`. */
function chartLabel(figure, text, fallbackKey) {
  return figure?.label || text(fallbackKey);
}

/** The figure's data and layout as they are in frame `name` (the figure itself when name is null). */
function figureAt(figure, name) {
  const data = (figure.data || []).map((trace) => ({ ...trace }));
  const layout = structuredClone(figure.layout || {});
  const frame = name === null ? null : (figure.frames || []).find((candidate) => candidate.name === name);
  if (!frame) return { data, layout };
  const targets = frame.traces || frame.data.map((_, i) => i);
  targets.forEach((index, i) => { if (data[index]) Object.assign(data[index], frame.data[i]); });
  for (const [key, value] of Object.entries(frame.layout || {})) {
    const both = value && typeof value === "object" && layout[key] && typeof layout[key] === "object";
    layout[key] = both ? { ...layout[key], ...value } : value;
  }
  // Plotly's own slider shows the frame drawn.
  for (const slider of layout.sliders || []) {
    const index = (slider.steps || []).findIndex((step) => step.args?.[0]?.[0] === name);
    if (index >= 0) slider.active = index;
  }
  return { data, layout };
}

/** The colour a chart is painted on: the first opaque background among its ancestors. */
function backgroundBehind(node) {
  for (let element = node; element; element = element.parentElement) {
    const colour = getComputedStyle(element).backgroundColor;
    if (colour && colour !== "transparent" && !/rgba\(.*,\s*0\)$/.test(colour)) return colour;
  }
  return readPalette(currentScheme()).background;
}

/** The slider step (index) that shows frame `name`, or -1. */
export function sliderIndex(figure, name) {
  const steps = figure?.layout?.sliders?.[0]?.steps || [];
  return steps.findIndex((step) => step.args?.[0]?.[0] === name);
}

/**
 * `title` on two lines when it would not fit `widthPx` at `fontPx` (Plotly never wraps a title): broken
 * after a punctuation mark if both lines then fit, else at the space or mark nearest its middle. Han
 * characters are one em wide, others about half an em.
 */
export function wrapTitle(title, widthPx, fontPx) {
  const chars = [...(title || "")];
  const width = (part) => part.reduce((sum, ch) => sum + (/[\u2e80-\uffff]/.test(ch) ? 1 : 0.56), 0) * fontPx;
  if (width(chars) <= widthPx || title.includes("<br>")) return title;
  const middle = chars.length / 2;
  const nearest = (cuts) => cuts.reduce((best, i) => (best < 0 || Math.abs(i - middle) < Math.abs(best - middle) ? i : best), -1);
  const marks = chars.flatMap((ch, i) => (/[：，、；:,;]/.test(ch) ? [i] : []));
  const fitting = marks.filter((i) => width(chars.slice(0, i + 1)) <= widthPx && width(chars.slice(i + 1)) <= widthPx);
  let cut = nearest(fitting);
  if (cut < 0) cut = nearest(chars.flatMap((ch, i) => (/[：，、；:,;\s]/.test(ch) ? [i] : [])));
  if (cut < 0) cut = Math.floor(middle) - 1;
  return `${chars.slice(0, cut + 1).join("").trimEnd()}<br>${chars.slice(cut + 1).join("").trimStart()}`;
}

/**
 * Layout changes for a chart narrower than NARROW_PX (Plotly wraps no text): a smaller title, on two
 * lines if it needs them; the legend from the left edge, where its rows wrap inside the chart, and a
 * legend entry too long for a row on two lines (renamed in `data`); the source note under the plot from
 * the chart's left edge, on two lines if it needs them.
 */
function narrowLayout(layout, data, widthPx) {
  const update = { "title.font.size": NARROW_TITLE_PX, "legend.x": 0, "legend.xanchor": "left" };
  let top = layout.margin?.t ?? 80;
  const title = layout.title?.text || "";
  const wrapped = wrapTitle(title, widthPx - 16, NARROW_TITLE_PX);
  if (wrapped !== title) {
    update["title.text"] = wrapped;
    top += TITLE_LINE_PX;
  }
  // A legend entry wider than the chart goes on two lines (the legend grows up, towards the title).
  const fontPx = layout.legend?.font?.size || layout.font?.size || 13;
  data.forEach((trace) => {
    if (trace.showlegend === false || !trace.name) return;
    const name = wrapTitle(trace.name, widthPx - LEGEND_SYMBOL_PX, fontPx);
    if (name === trace.name) return;
    trace.name = name;
    top += TITLE_LINE_PX;
  });
  if (top !== (layout.margin?.t ?? 80)) update["margin.t"] = top;
  const margin = { l: 80, r: 80, b: 80, ...layout.margin };
  const plotWidth = widthPx - margin.l - margin.r;
  (layout.annotations || []).forEach((note, i) => {
    if (note.name !== SOURCE || plotWidth <= 0) return;
    const text = wrapTitle(note.text, widthPx - 8, note.font?.size || 10);
    update[`annotations[${i}].x`] = -margin.l / plotWidth;
    update[`annotations[${i}].align`] = "left";
    if (text === note.text) return;
    update[`annotations[${i}].text`] = text;
    update[`annotations[${i}].yshift`] = (note.yshift || 0) - SOURCE_LINE_PX; // the second line goes below
    update["margin.b"] = margin.b + SOURCE_LINE_PX;
  });
  return update;
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
 * A chart for `figure` (plotly.py's to_json as an object), drawn once it is in view and the reader has
 * engaged. Returns {node, frameNames, animateTo(name)}; labels come from the demo's strings via `text`.
 *
 * `reveal(name, {background})`, if given, shows frame `name` as a cheap update of the full figure
 * instead of a redraw: {restyle, relayout, traces} for Plotly.update (name null: show everything).
 * Plotly's own play button and slider still run the frames; after them the full figure is restored.
 */
export function createChart(figure, text, fallbackKey, { reveal = null } = {}) {
  const label = chartLabel(figure, text, fallbackKey);
  const plot = h("div", { class: "pd-chart__plot" });
  const status = h("p", { class: "pd-chart__status", text: text("common.loading_chart") });
  const node = h("div", { class: "pd-chart", role: "img", "aria-label": label }, status, plot);
  const height = figure?.layout?.height;
  if (height) node.style.setProperty("--pd-chart-height", `${height}px`);
  const frameNames = new Set((figure?.frames || []).map((frame) => frame.name));
  let drawn = false;
  let busy = false;
  let wanted = null;
  let shown = null;
  let tooSlowForLive = false;
  let catchUpQueued = false;
  let lastPlaying = false;
  let ownControlsUsed = false; // Plotly's own play/slider replaced the data with a frame's

  function revealUpdate(name) {
    return reveal(name, { background: backgroundBehind(node) });
  }

  /** Show `name` through `reveal`: a restyle/relayout that draws no heatmap again. */
  function revealTo(name, playing) {
    wanted = name;
    lastPlaying = playing;
    if (!drawn || name === shown) return;
    if (ownControlsUsed) {
      if (playing) return; // restoring the full data is a redraw: at the next pause
      ownControlsUsed = false;
      window.Plotly.react(plot, (figure.data || []).map((trace) => ({ ...trace })), plot.layout);
    }
    const { restyle = {}, relayout = {}, traces } = revealUpdate(name);
    shown = name;
    window.Plotly.update(plot, restyle, relayout, traces);
  }

  const chart = {
    node,
    frameNames,
    theme(palette) {
      if (!drawn) return;
      window.Plotly.relayout(plot, themeUpdate(plot.layout, palette, plot.data));
      if (reveal && shown !== null && !ownControlsUsed) {
        const { relayout = {} } = revealUpdate(shown);
        window.Plotly.relayout(plot, relayout);
      }
    },
    /**
     * Show frame `name`; calls made while a transition runs collapse into the latest. While `playing`,
     * a chart too slow to redraw per token only records the frame and catches up at the next pause.
     */
    animateTo(name, { playing = false, now = false } = {}) {
      if (!frameNames.has(name)) return;
      if (reveal) {
        revealTo(name, playing);
        return;
      }
      wanted = name;
      lastPlaying = playing;
      if (!drawn || busy || wanted === shown || (playing && tooSlowForLive)) return;
      if (tooSlowForLive && !now) {
        // A slow chart catches up once the main thread is idle, after the playback's last frame.
        if (catchUpQueued) return;
        catchUpQueued = true;
        const idle = window.requestIdleCallback || ((callback) => setTimeout(callback, 50));
        idle(() => {
          catchUpQueued = false;
          if (!lastPlaying) chart.animateTo(wanted, { now: true });
        }, { timeout: 500 });
        return;
      }
      busy = true;
      shown = name;
      const started = performance.now();
      window.Plotly.animate(plot, [name], {
        mode: "immediate", transition: { duration: 0 }, frame: { duration: 0, redraw: true },
      }).catch(() => {}).finally(() => {
        if (performance.now() - started - ONE_FRAME_MS > LIVE_BUDGET_MS) tooSlowForLive = true;
        node.dataset.pdChartLive = tooSlowForLive ? "paused-only" : "live";
        busy = false;
        if (wanted !== shown) chart.animateTo(wanted, { playing });
      });
    },
  };

  // Each step is a task of its own (see schedule.js): the library, then the plot, then its frames.
  async function draw() {
    try {
      const Plotly = await schedule(loadPlotly);
      await schedule(() => {
        // Drawn straight in the frame the demo wants (no second redraw to get there).
        shown = wanted;
        const { data, layout } = reveal ? figureAt(figure, null) : figureAt(figure, shown);
        applyUpdate(layout, themeUpdate(layout, readPalette(currentScheme()), data));
        // Plotly does not wrap titles: on a phone, a smaller font keeps a long one inside the chart.
        if (plot.clientWidth && plot.clientWidth < NARROW_PX) applyUpdate(layout, narrowLayout(layout, data, plot.clientWidth));
        return Plotly.react(plot, data, layout, CONFIG);
      });
      if (reveal) {
        const { restyle = {}, relayout = {}, traces } = revealUpdate(shown);
        await Plotly.update(plot, restyle, relayout, traces);
        plot.on("plotly_beforehover", (event) => hoverNotMasked(plot, event));
        plot.on("plotly_animatingframe", () => {
          if (ownControlsUsed) return;
          ownControlsUsed = true;
          const everything = revealUpdate(null);
          window.Plotly.update(plot, everything.restyle || {}, everything.relayout || {}, everything.traces);
        });
      }
      if (figure.frames?.length) await schedule(() => Plotly.addFrames(plot, figure.frames));
      drawn = true;
      status.remove();
      node.dataset.pdChart = "ready";
      charts.add(chart);
      watchOnce();
      if (wanted !== null && wanted !== shown) chart.animateTo(wanted, { playing: lastPlaying });
    } catch (error) {
      node.dataset.pdChart = "error";
      setText(status, text("common.chart_failed"));
      throw error;
    }
  }

  // Drawn once it is in view and the reader has engaged with the page (a load alone draws nothing).
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    whenEngaged().then(draw);
  }, { rootMargin: IN_VIEW });
  observer.observe(node);
  return chart;
}
