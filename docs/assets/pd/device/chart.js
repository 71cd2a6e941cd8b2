// The reader's own roofline beside the build machine's, as a small inline SVG (log–log): no chart library
// to load, colours from the page's theme through CSS (device.css), text escaped by textContent.
const NS = "http://www.w3.org/2000/svg";
// Laid out at the width it is shown at (between these), so its 11 px text stays 11 px on a phone.
const WIDTH = { min: 280, max: 640 };
const MARGIN = { left: 52, right: 12, top: 16, bottom: 44 };

function el(name, attrs = {}, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

const log10 = Math.log10;

/** Powers of ten between two values (axis ticks). */
function decades(low, high) {
  const ticks = [];
  for (let e = Math.floor(log10(low)); e <= Math.ceil(log10(high)); e += 1) ticks.push(10 ** e);
  return ticks;
}

/**
 * machines: [{id, label, peak_gflops, peak_gbps, points: [{phase, label, intensity, gflops}]}];
 * labels: {title, x, y}; width: the pixels it will be shown at. Returns the <svg>.
 */
export function rooflineSvg(machines, labels, format, width = WIDTH.max) {
  const SIZE = { ...MARGIN, width: Math.round(Math.max(WIDTH.min, Math.min(WIDTH.max, width))) };
  SIZE.height = Math.round(Math.max(240, Math.min(300, SIZE.width * 0.55)));
  const xs = machines.flatMap((m) => [m.peak_gflops / m.peak_gbps, ...m.points.map((p) => p.intensity)]);
  const ys = machines.flatMap((m) => [m.peak_gflops, ...m.points.map((p) => p.gflops)]);
  const xLow = 10 ** Math.floor(log10(Math.min(...xs) / 2));
  const xHigh = 10 ** Math.ceil(log10(Math.max(...xs) * 2));
  const yLow = 10 ** Math.floor(log10(Math.min(...ys) / 2));
  const yHigh = 10 ** Math.ceil(log10(Math.max(...ys) * 1.5));
  const w = SIZE.width - SIZE.left - SIZE.right;
  const h = SIZE.height - SIZE.top - SIZE.bottom;
  const x = (v) => SIZE.left + ((log10(v) - log10(xLow)) / (log10(xHigh) - log10(xLow))) * w;
  const y = (v) => SIZE.top + (1 - (log10(v) - log10(yLow)) / (log10(yHigh) - log10(yLow))) * h;

  const svg = el("svg", { viewBox: `0 0 ${SIZE.width} ${SIZE.height}`, class: "pd-device__roofline", role: "img" });
  svg.append(el("title", {}, labels.title));
  const grid = el("g", { class: "pd-device__grid" });
  for (const v of decades(xLow, xHigh)) {
    grid.append(el("line", { x1: x(v), x2: x(v), y1: SIZE.top, y2: SIZE.top + h }));
    grid.append(el("text", { x: x(v), y: SIZE.top + h + 14, "text-anchor": "middle" }, format.number(v, v < 1 ? 1 : 0)));
  }
  for (const v of decades(yLow, yHigh)) {
    grid.append(el("line", { x1: SIZE.left, x2: SIZE.left + w, y1: y(v), y2: y(v) }));
    grid.append(el("text", { x: SIZE.left - 6, y: y(v) + 4, "text-anchor": "end" }, format.number(v, v < 1 ? 2 : 0)));
  }
  grid.append(el("text", { x: SIZE.left + w / 2, y: SIZE.height - 6, "text-anchor": "middle", class: "pd-device__axis" }, labels.x));
  grid.append(el("text", { x: 12, y: SIZE.top + h / 2, "text-anchor": "middle", class: "pd-device__axis",
    transform: `rotate(-90 12 ${SIZE.top + h / 2})` }, labels.y));
  svg.append(grid);

  for (const machine of machines) {
    const ridge = machine.peak_gflops / machine.peak_gbps;
    const group = el("g", { class: `pd-device__machine pd-device__machine--${machine.id}` });
    const roof = [[xLow, xLow * machine.peak_gbps], [ridge, machine.peak_gflops], [xHigh, machine.peak_gflops]]
      .map(([a, b]) => `${x(a).toFixed(1)},${y(Math.max(b, yLow)).toFixed(1)}`).join(" ");
    group.append(el("polyline", { points: roof, class: "pd-device__roof" }));
    for (const point of machine.points) {
      const cx = x(point.intensity), cy = y(point.gflops);
      group.append(point.phase === "prefill"
        ? el("circle", { cx, cy, r: 6, class: "pd-device__point" })
        : el("path", { d: `M${cx} ${cy - 7}L${cx + 7} ${cy}L${cx} ${cy + 7}L${cx - 7} ${cy}Z`, class: "pd-device__point" }));
      const nearRight = cx > SIZE.width * 0.7; // keep the label inside the plot
      const below = machine.id !== "device"; // the two machines' labels on opposite sides: no overlap
      group.append(el("text", { x: nearRight ? cx - 9 : cx + 9, y: below ? cy + 17 : cy - 8, class: "pd-device__label",
        "text-anchor": nearRight ? "end" : "start" }, point.label));
    }
    svg.append(group);
  }
  return svg;
}
