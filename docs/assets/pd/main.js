// Entry point, loaded on every page: binds the palette toggle, finds the demo placeholders and, when
// one nears the viewport, imports its module and fetches its data. Each demo keeps its static fallback
// until the reader's first gesture (engagement.js): loading a page builds no demo and shifts nothing.
// Charts load later still (charts.js); Material's own script waits for the same gesture (theme.js).
import { whenEngaged, whenNear } from "./engagement.js";
import { afterPaint } from "./schedule.js";
import "./palette.js";
import "./theme.js";

const KINDS = new Set(["conversation", "prefill", "decode", "timeline", "roofline", "recap", "device", "batching", "formats"]);
const NEAR_VIEW = "600px 0px";

async function mount(demo) {
  const kind = demo.dataset.pdDemo;
  const url = demo.dataset.pdTrace;
  if (!KINDS.has(kind) || !url) return;
  demo.dataset.pdStatus = "loading";
  try {
    const [module, response] = await Promise.all([
      import(`./demos/${kind}.js`),
      fetch(new URL(url, document.baseURI), { credentials: "same-origin" }),
    ]);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const data = await response.json();
    await whenEngaged();
    await afterPaint(); // building the stage is a task of its own, not one with the fetch
    const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    module.mount(demo, data, { reducedMotion });
    demo.dataset.pdStatus = "ready";
  } catch (error) {
    // The static fallback stays visible; the error goes to the console for the author.
    demo.dataset.pdStatus = "error";
    demo.querySelector("[data-pd-stage]").textContent = "";
    console.error(`prefill-decode demo ${demo.id}:`, error);
  }
}

for (const demo of document.querySelectorAll(".pd-demo[data-pd-demo]")) whenNear(demo, NEAR_VIEW).then(() => mount(demo));
