// Plotly charts: load the library from the site only when a chart is about to scroll into view,
// draw the build's figure JSON, keep it themed, and let the player step through its frames.
import { h, setText } from "./dom.js";
import { applyUpdate, currentScheme, readPalette, themeUpdate, watchPalette } from "./plotly-theme.js";

const PLOTLY_URL = new URL("../vendor/plotly.min.js", import.meta.url);
const NEAR_VIEW = "300px 0px";
const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false, scrollZoom: false };
// A frame change that keeps the main thread longer than this would stutter playback (and count as a
// long task): such a chart is then brought in step whenever playback pauses, not on every token.
const LIVE_BUDGET_MS = 50;
const ONE_FRAME_MS = 17;

let plotlyPromise = null;
const charts = new Set();

/** Inject the site's own plotly.min.js once; resolves to window.Plotly. */
export function loadPlotly() {
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

/** The accessible name of a chart: the title its figure carries, else the strings key `fallbackKey`. */
function chartLabel(figure, text, fallbackKey) {
  const title = figure?.layout?.title;
  const value = typeof title === "string" ? title : title?.text;
  return value || text(fallbackKey);
}

/**
 * A chart for `figure` (plotly.py's to_json as an object), drawn once it nears the viewport.
 * Returns {node, frameNames, animateTo(name)}; labels come from the demo's strings via `text`.
 */
export function createChart(figure, text, fallbackKey) {
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

  const chart = {
    node,
    frameNames,
    theme(palette) {
      if (drawn) window.Plotly.relayout(plot, themeUpdate(plot.layout, palette, plot.data));
    },
    /**
     * Show frame `name`; calls made while a transition runs collapse into the latest. While `playing`,
     * a chart too slow to redraw per token only records the frame and catches up at the next pause.
     */
    animateTo(name, { playing = false, now = false } = {}) {
      if (!frameNames.has(name)) return;
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

  async function draw() {
    try {
      const Plotly = await loadPlotly();
      const layout = structuredClone(figure.layout || {});
      applyUpdate(layout, themeUpdate(layout, readPalette(currentScheme()), figure.data || []));
      await Plotly.react(plot, figure.data || [], layout, CONFIG);
      if (figure.frames?.length) await Plotly.addFrames(plot, figure.frames);
      drawn = true;
      status.remove();
      node.dataset.pdChart = "ready";
      charts.add(chart);
      watchOnce();
      if (wanted !== null) {
        const target = wanted;
        wanted = null;
        chart.animateTo(target);
      }
    } catch (error) {
      node.dataset.pdChart = "error";
      setText(status, text("common.chart_failed"));
      throw error;
    }
  }

  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    draw();
  }, { rootMargin: NEAR_VIEW });
  observer.observe(node);
  return chart;
}
