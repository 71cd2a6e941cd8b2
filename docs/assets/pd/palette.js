// The palette toggle's behaviour (the page's palette is already applied by the inline script in
// overrides/partials/palette-apply.html, which this reuses as window.__pdPalette). A click on the
// button, the arrow keys or Enter choose the next palette; the choice is stored under Material's
// key, so every page applies it before it is painted; "follow the system" follows it live.
const palette = window.__pdPalette;
let current = palette ? palette.index : 0;

// The browser's toolbar takes the header's colour (read once the new colours are in effect).
function updateThemeColor() {
  const header = document.querySelector(".md-header");
  if (!header) return;
  let meta = document.querySelector("meta[name=theme-color]");
  if (!meta) {
    meta = document.createElement("meta");
    meta.name = "theme-color";
    document.head.appendChild(meta);
  }
  meta.content = getComputedStyle(header).backgroundColor;
}

function choose(index) {
  current = index;
  // Material's rule `[data-md-color-switching] * {transition-duration: 0s}`: colours change at once,
  // not in a quarter-second fade of every element.
  document.body.setAttribute("data-md-color-switching", "");
  // Same key and shape as Material's own palette component: {index, color}.
  __md_set("__palette", { index, color: palette.apply(index) });
  requestAnimationFrame(() => requestAnimationFrame(() => document.body.removeAttribute("data-md-color-switching")));
  requestAnimationFrame(updateThemeColor);
}

function bind() {
  const { inputs } = palette;
  const form = inputs[0].form;
  form.addEventListener("change", (event) => {
    const index = inputs.indexOf(event.target);
    if (index >= 0) choose(index);
  });
  // A radio group answers the arrow keys by itself; Enter moves on too, as Material's toggle did.
  form.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    const next = inputs[(current + 1) % inputs.length];
    next.click();
    next.focus();
  });
  palette.systemLight.addEventListener("change", () => {
    if (inputs[current].getAttribute("data-md-color-media") === palette.FOLLOW_SYSTEM) choose(current);
  });
  // At load the page's style is already computed by now: reading the header's colour costs nothing.
  const whenIdle = window.requestIdleCallback || ((callback) => setTimeout(callback, 200));
  whenIdle(updateThemeColor);
}

if (palette && palette.inputs.length) bind();
