// formats (bottleneck): the same model in F32, F16, Q8_0 and 4 bits. The page's player steps through the
// formats (play, scrubber, keys); each step marks that format's decode and prefill points on this machine's
// roofline (the other formats stay as grey points) and shows its read-outs: bits per weight, decode speed,
// TTFT and accuracy against F32, side by side. Under it, labelled projected, the same formats on GPUs: their
// bounds beside published llama.cpp runs. Everything shown comes from the JSON (`data.formats`).
import { h, setText } from "../dom.js";
import { createChart } from "../charts.js";
import { createStepper } from "../player.js";
import { keysHint, prepareStage, readout } from "../stage.js";

function table({ caption, headers, rows }, className) {
  return h("table", { class: `pd-demo__table ${className}`, tabindex: 0 },
    h("caption", { text: caption }),
    h("thead", {}, h("tr", {}, ...headers.map((header) => h("th", { scope: "col", text: header })))),
    h("tbody", {}, ...rows.map((row) => h("tr", {}, ...row.map((cell, i) => h(i ? "td" : "th", i ? { text: cell } : { scope: "row", text: cell }))))));
}

export function mount(demo, data, { reducedMotion }) {
  const { stage, text } = prepareStage(demo, data, { focusable: true });
  const { rows, published } = data.formats;

  const chart = createChart(data.figures.roofline, text);
  chart.node.setAttribute("aria-label", text("formats.chart_label"));
  const readouts = rows[0].readouts.map(([label]) => readout(label));
  const name = h("p", { class: "pd-formats__name", "aria-live": "polite" });
  const panel = h("div", { class: "pd-formats__readouts", role: "group", "aria-label": text("formats.readouts") },
    name, h("dl", { class: "pd-readouts" }, ...readouts.map((r) => r.node)));

  const player = createStepper({
    root: demo,
    text,
    reducedMotion,
    label: text("formats.picker"),
    values: rows.map((row) => row.name),
    start: 0,
    render(index) {
      const row = rows[index];
      demo.dataset.pdFormat = row.id;
      chart.show(row.frame);
      setText(name, text("formats.chosen", { name: row.name }));
      row.readouts.forEach(([, value], i) => setText(readouts[i].value, value));
    },
  });

  stage.append(
    chart.node,
    player.controls,
    keysHint(demo, text),
    panel,
    table(published, "pd-formats__published"),
  );
}
