// Material's own script runs at the reader's first gesture instead of with the page. What it drives
// (search and its keyboard shortcuts, back-to-top, the table of contents following the reader) is
// only ever used after a gesture, but starting it with the page cost a phone two long tasks. The build
// turns its <script> into a prefetch link (hooks/page_markup.py), so the file is already in the cache
// when the gesture comes.
import { whenEngaged } from "./engagement.js";

const link = document.querySelector("link[data-pd-theme-script]");

// Keys pressed before Material listens, replayed to it so that a first "/" or "s" still opens search.
// Only on window, where Material listens: the page's own key handlers do not see them twice.
const earlyKeys = [];
function rememberKey(event) {
  const { key, code, location, shiftKey, altKey, ctrlKey, metaKey, repeat } = event;
  earlyKeys.push({ key, code, location, shiftKey, altKey, ctrlKey, metaKey, repeat, cancelable: true });
}

function stopRemembering() {
  window.removeEventListener("keydown", rememberKey, true);
}

function startMaterial() {
  stopRemembering();
  // Material starts on DOMContentLoaded, which the page has passed.
  document.dispatchEvent(new Event("DOMContentLoaded"));
  for (const init of earlyKeys.splice(0)) window.dispatchEvent(new KeyboardEvent("keydown", init));
}

if (link) {
  window.addEventListener("keydown", rememberKey, true);
  whenEngaged().then(() => {
    const script = document.createElement("script");
    script.src = link.href;
    script.addEventListener("load", startMaterial, { once: true });
    script.addEventListener("error", stopRemembering, { once: true });
    document.body.append(script);
  });
}
