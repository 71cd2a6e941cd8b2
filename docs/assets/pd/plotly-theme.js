// Material's light/dark palette applied to Plotly figures, and a watcher for palette changes.
// Figures are built in Python without page colours; the page decides them here. They carry no Plotly
// buttons or sliders (the page's player is their only control), so text, axes and hover labels are all
// there is to theme.

const SCHEME_ATTRIBUTES = ["data-md-color-scheme", "data-md-color-media"];
let printing = false;

/**
 * Material's CSS variables resolved to plain rgb()/rgba() strings Plotly can parse: the page's palette,
 * or the light one ("default") while printing.
 */
export function readPalette() {
  const host = document.createElement("div");
  host.hidden = true;
  if (printing) host.setAttribute("data-md-color-scheme", "default");
  const probe = document.createElement("span");
  host.append(probe);
  document.body.append(host);
  const resolve = (variable) => {
    probe.style.color = `var(${variable})`;
    return getComputedStyle(probe).color;
  };
  const palette = {
    text: resolve("--md-default-fg-color"),
    line: resolve("--md-default-fg-color--lighter"),
    grid: resolve("--md-default-fg-color--lightest"),
    background: resolve("--md-default-bg-color"),
    font: getComputedStyle(document.body).fontFamily,
  };
  host.remove();
  return palette;
}

/** The Plotly.relayout update (flat attribute paths) that themes a figure with `palette`. */
export function themeUpdate(layout, palette) {
  const update = {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    "font.color": palette.text,
    "font.family": palette.font,
    "title.font.color": palette.text,
    "legend.bgcolor": "rgba(0,0,0,0)",
    "legend.font.color": palette.text,
    "hoverlabel.bgcolor": palette.background,
    "hoverlabel.bordercolor": palette.line,
    "hoverlabel.font.color": palette.text,
  };
  // Every axis is named in the layout (plotly.py writes each subplot's); xaxis and yaxis may be left out.
  const axes = new Set(["xaxis", "yaxis", ...Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key))]);
  for (const key of axes) {
    update[`${key}.gridcolor`] = palette.grid;
    update[`${key}.linecolor`] = palette.line;
    update[`${key}.zerolinecolor`] = palette.line;
    update[`${key}.tickcolor`] = palette.line;
    // Chinese tick labels run wider than the figure's margins assume: let Plotly make room.
    update[`${key}.automargin`] = true;
  }
  (layout.annotations || []).forEach((_, i) => {
    update[`annotations[${i}].font.color`] = palette.text;
  });
  return update;
}

/** Apply a flat relayout update to a layout object (for the first draw, to avoid drawing twice). */
export function applyUpdate(layout, update) {
  for (const [path, value] of Object.entries(update)) {
    const parts = path.split(/\.|\[(\d+)\]/).filter((part) => part !== undefined && part !== "");
    let node = layout;
    for (const part of parts.slice(0, -1)) {
      if (node[part] === null || typeof node[part] !== "object") node[part] = {};
      node = node[part];
    }
    node[parts[parts.length - 1]] = value;
  }
  return layout;
}

/** Call `callback()` whenever Material's palette changes or the page is printed. */
export function watchPalette(callback) {
  new MutationObserver(callback).observe(document.body, { attributes: true, attributeFilter: SCHEME_ATTRIBUTES });
  window.addEventListener("beforeprint", () => {
    printing = true;
    callback();
  });
  window.addEventListener("afterprint", () => {
    printing = false;
    callback();
  });
}
