// Plotly charts: load the library from the site only when a chart is about to scroll into view,
// draw the build's figure JSON, keep it themed, and let the player step through its frames.
import { h, setText } from "./dom.js";
import { applyUpdate, currentScheme, readPalette, themeUpdate, watchPalette } from "./plotly-theme.js";

const PLOTLY_URL = new URL("../vendor/plotly.min.js", import.meta.url);
const NEAR_VIEW = "300px 0px";
const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false, scrollZoom: false };

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

  const chart = {
    node,
    frameNames,
    theme(palette) {
      if (drawn) window.Plotly.relayout(plot, themeUpdate(plot.layout, palette, plot.data));
    },
    /** Show frame `name`; calls made while a transition runs collapse into the latest. */
    animateTo(name) {
      if (!frameNames.has(name)) return;
      wanted = name;
      if (!drawn || busy || wanted === shown) return;
      busy = true;
      shown = name;
      window.Plotly.animate(plot, [name], {
        mode: "immediate", transition: { duration: 0 }, frame: { duration: 0, redraw: true },
      }).catch(() => {}).finally(() => {
        busy = false;
        if (wanted !== shown) chart.animateTo(wanted);
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
