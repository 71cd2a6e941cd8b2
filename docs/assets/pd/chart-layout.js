// A chart's layout on a narrow screen: Plotly wraps no text, so a long title, legend entry or source
// note is set on two lines (a source note on up to four) here before the chart is drawn.

const NARROW_TITLE_PX = 13;
const TITLE_LINE_PX = 18; // the extra top margin a second title line takes
const SOURCE = "pd-source"; // the build's source note under every figure
const SOURCE_LINE_PX = 13;
const LEGEND_SYMBOL_PX = 56; // a legend entry's symbol and padding
/** Charts narrower than this get narrowLayout(). */
export const NARROW_PX = 560;

/**
 * `title` on two lines when it would not fit `widthPx` at `fontPx` (Plotly never wraps a title): broken
 * after a punctuation mark (or a "·") if both lines then fit, else at the space or mark nearest its middle. Han
 * characters are one em wide, others about half an em.
 */
export function wrapTitle(title, widthPx, fontPx) {
  const chars = [...(title || "")];
  const width = (part) => part.reduce((sum, ch) => sum + (/[\u2e80-\uffff]/.test(ch) ? 1 : 0.56), 0) * fontPx;
  if (width(chars) <= widthPx || title.includes("<br>")) return title;
  const middle = chars.length / 2;
  const nearest = (cuts) => cuts.reduce((best, i) => (best < 0 || Math.abs(i - middle) < Math.abs(best - middle) ? i : best), -1);
  const marks = chars.flatMap((ch, i) => (/[：，、；:,;·]/.test(ch) ? [i] : []));
  const fitting = marks.filter((i) => width(chars.slice(0, i + 1)) <= widthPx && width(chars.slice(i + 1)) <= widthPx);
  let cut = nearest(fitting);
  // Not at the space before a "·" (a source note's separator): no line starts with one.
  if (cut < 0) cut = nearest(chars.flatMap((ch, i) => (/[：，、；:,;·\s]/.test(ch) && chars[i + 1] !== "·" ? [i] : [])));
  if (cut < 0) cut = Math.floor(middle) - 1;
  return `${chars.slice(0, cut + 1).join("").trimEnd()}<br>${chars.slice(cut + 1).join("").trimStart()}`;
}

/** `text` as lines that fit `widthPx`: two, and each of them on two again if it still does not fit. */
function wrapLines(text, widthPx, fontPx) {
  return wrapTitle(text, widthPx, fontPx).split("<br>").flatMap((line) => wrapTitle(line, widthPx, fontPx).split("<br>"));
}

/**
 * Layout changes for a chart `widthPx` wide, narrower than NARROW_PX: a smaller title, on two lines if
 * it needs them, and axis titles no bigger; the legend from the left edge, where its rows wrap inside
 * the chart, and a legend entry too long for a row on two or three lines (renamed in `data`); the
 * source note under the plot from the chart's left edge, on as many lines as it needs, up to four.
 * Returns a flat Plotly.relayout update.
 */
export function narrowLayout(layout, data, widthPx) {
  const update = { "title.font.size": NARROW_TITLE_PX, "legend.x": 0, "legend.xanchor": "left" };
  for (const axis of Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key) && layout[key].title?.text)) {
    update[`${axis}.title.font.size`] = NARROW_TITLE_PX; // an axis title is no bigger than the chart's
  }
  const margin = { t: 80, l: 80, r: 80, b: 80, ...layout.margin }; // Plotly's defaults where unset
  let top = margin.t;
  const title = layout.title?.text || "";
  const wrapped = wrapTitle(title, widthPx - 16, NARROW_TITLE_PX);
  if (wrapped !== title) {
    update["title.text"] = wrapped;
    top += TITLE_LINE_PX;
  }
  // A legend entry wider than the chart goes on two lines, or three (the legend grows up, towards the title).
  const fontPx = layout.legend?.font?.size || layout.font?.size || 13;
  data.forEach((trace) => {
    if (trace.showlegend === false || !trace.name) return;
    const lines = wrapLines(trace.name, widthPx - LEGEND_SYMBOL_PX, fontPx);
    if (lines.length === 1) return;
    trace.name = lines.join("<br>");
    top += TITLE_LINE_PX * (lines.length - 1);
  });
  if (top !== margin.t) update["margin.t"] = top;
  return { ...update, ...sourceNoteLayout(layout, widthPx, { fromTheEdge: true }) };
}

/**
 * The source note under the plot, on a chart of any width: when it is wider than the chart (a desktop chart's
 * note grows with the projections it names), from the chart's left edge on as many lines as it needs, up to
 * four, the bottom margin grown to hold them. `fromTheEdge`: from the left edge even when it fits (a phone).
 * Returns a flat Plotly.relayout update (empty when the note fits as it is).
 */
export function sourceNoteLayout(layout, widthPx, { fromTheEdge = false } = {}) {
  const update = {};
  const margin = { l: 80, r: 80, b: 80, ...layout.margin }; // Plotly's defaults where unset
  const plotWidth = widthPx - margin.l - margin.r;
  (layout.annotations || []).forEach((note, i) => {
    if (note.name !== SOURCE || plotWidth <= 0) return;
    const lines = wrapLines(note.text, widthPx - 8, note.font?.size || 10);
    if (lines.length === 1 && !fromTheEdge) return;
    update[`annotations[${i}].x`] = -margin.l / plotWidth;
    update[`annotations[${i}].xanchor`] = "left";
    update[`annotations[${i}].align`] = "left";
    if (lines.length === 1) return;
    update[`annotations[${i}].text`] = lines.join("<br>");
    update[`annotations[${i}].yshift`] = (note.yshift || 0) - SOURCE_LINE_PX * (lines.length - 1); // lines go below
    update["margin.b"] = margin.b + SOURCE_LINE_PX * (lines.length - 1);
  });
  return update;
}
