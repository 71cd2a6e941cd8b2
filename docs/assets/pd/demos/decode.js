// decode (decode chapter): one token per step. The cache grows by one; the new token's attention over
// every cached position (real weights) shows under the tokens; the top-5 candidates with their
// probabilities, the chosen one marked; a chart of ms/token with the KV cache against full recompute.
import { h, setClass, setText, tokenChip } from "../dom.js";
import { MASK, createChart } from "../charts.js";
import { playRecording, prepareStage, readout } from "../stage.js";
import { answerView, phaseBadge, phaseOf, rolesLegend } from "../tokens.js";

const CANDIDATES = 5;

/** A step's token as screen readers are told it: its text, or its bytes if they make no whole character. */
const shownToken = (step) => step.piece.bytes ?? step.token.text;

/**
 * The attention heatmap with its first `shownRows` rows showing, as a cheap update: the figure holds
 * every row (row i is decode step i, the step that produced token i+2), and an opaque mask in the
 * chart's background colour covers the rows not decoded yet.
 */
function revealRows(figure) {
  const rows = figure.data?.[0]?.z?.length || 0;
  return (shownRows, { background }) => ({
    // The figure ships the mask as shapes[0]. Each step inserts the new mask before it and removes the
    // old one: Plotly draws that alone (~1 ms), while moving the old mask's y0 recomputes the whole
    // heatmap (60-90 ms measured here, a long task per token).
    relayout: {
      "shapes[0]": {
        type: "rect", xref: "paper", yref: "y", x0: 0, x1: 1, y0: shownRows - 0.5, y1: rows - 0.5,
        fillcolor: background, line: { width: 0 }, layer: "above", visible: shownRows < rows, name: MASK,
      },
      "shapes[1]": null,
    },
  });
}

/** One row per candidate: token, probability bar, percentage. */
function candidatesView(text) {
  const rows = Array.from({ length: CANDIDATES }, () => {
    const chip = h("span", { class: "pd-token" });
    const fill = h("span", { class: "pd-meter__fill" });
    const bar = h("span", { class: "pd-meter__bar", "aria-hidden": "true" }, fill);
    const prob = h("span", { class: "pd-candidate__prob" });
    const mark = h("span", { class: "pd-visually-hidden" });
    const row = h("li", {}, h("span", {}, chip, mark), bar, prob);
    return { row, chip, fill, prob, mark };
  });
  const list = h("ol", { class: "pd-candidates", "aria-label": text("decode.candidates") }, ...rows.map((r) => r.row));
  return {
    node: h("div", {}, h("p", { class: "pd-keys", text: text("decode.candidates") }), list),
    set(step, format) {
      const top = step?.top || [];
      rows.forEach((view, i) => {
        const candidate = top[i];
        view.row.hidden = !candidate;
        if (!candidate) return;
        setText(view.chip, candidate.text === "" ? "\u00a0" : candidate.text);
        view.fill.style.setProperty("--pd-fill", candidate.prob.toFixed(4));
        setText(view.prob, format.percent(candidate.prob));
        setClass(view.row, "pd-candidate--chosen", candidate.chosen);
        setText(view.mark, candidate.chosen ? ` (${text("decode.chosen")})` : "");
      });
    },
  };
}

export function mount(demo, data, { reducedMotion }) {
  const { stage, text, format } = prepareStage(demo, data, { focusable: true });
  const steps = data.steps;

  // The cache holds the rendered prompt, then every generated token once the next step consumes it.
  const cachedTokens = [...data.prompt.tokens, ...steps.map((step) => step.token)];
  const chips = cachedTokens.map(tokenChip);
  const context = h("p", { class: "pd-context", "aria-hidden": "true" });
  const counter = h("span", { class: "pd-counter" });
  const phase = phaseBadge(text);
  const perToken = readout(text("common.ms_per_token"));
  const elapsed = h("span", { class: "pd-elapsed" });
  const answer = answerView(steps, data.answer, text);
  const candidates = candidatesView(text);

  const { attention: attentionFigure, cache_vs_recompute: compareFigure } = data.figures;
  // The heatmap's cells travel once, as the steps' attention: row i is decode step i's, padded.
  const rows = steps.filter((step) => step.attention).map((step) => step.attention);
  const width = Math.max(0, ...rows.map((row) => row.length));
  attentionFigure.data[0].z = rows.length ? rows.map((row) => [...row, ...Array(width - row.length).fill(null)]) : [[]];
  const attention = createChart(attentionFigure, text, { reveal: revealRows(attentionFigure) });

  stage.append(
    h("div", { class: "pd-status" }, counter, phase.node, elapsed, h("dl", { class: "pd-readouts" }, perToken.node)),
    h("div", { class: "pd-bubble" },
      h("span", { class: "pd-bubble__who" }, text("common.kv_cache"),
        h("span", { class: "pd-legend-attention", text: text("decode.weight") })), context,
      rolesLegend(data.prompt, text)),
    h("div", { class: "pd-bubble pd-bubble--model" },
      h("span", { class: "pd-bubble__who", text: text("common.answer") }), answer.node),
    candidates.node,
    attention.node,
  );

  const promptLength = data.prompt.tokens.length;
  let shownChips = 0;
  let weighted = [];

  function showContext(count) {
    // Count tokens produced so far: the prompt plus count-1 of them are cached; the newest is "next".
    const visible = promptLength + count;
    while (shownChips < visible) context.append(chips[shownChips++]);
    while (shownChips > visible) chips[--shownChips].remove();
    chips.forEach((chip, i) => setClass(chip, "pd-token--next", count > 0 && i === visible - 1));
    for (const chip of weighted) chip.style.removeProperty("--pd-attention");
    weighted = [];
    // The attention the step that produced token `count` gave every cached position (none at prefill).
    const weights = count > 0 ? steps[count - 1].attention : null;
    if (!weights?.length) return;
    const peak = Math.max(...weights) || 1;
    weighted = chips.slice(0, weights.length);
    weighted.forEach((chip, i) => chip.style.setProperty("--pd-attention", (weights[i] / peak).toFixed(3)));
  }

  let lastCount = -1;
  playRecording(demo, stage, steps, {
    text,
    reducedMotion,
    describe: (state) => (state.count > 0
      ? `${shownToken(steps[state.count - 1])} · ${text("common.tokens_cached", { n: steps[state.count - 1].kv_tokens })}`
      : text("common.waiting")),
    render(state) {
      phase.set(phaseOf(state));
      setText(elapsed, text("common.elapsed", { ms: format.ms(state.t) }));
      attention.show(Math.max(state.count - 1, 0)); // token 1 comes from prefill, each later one from a decode step
      if (state.count === lastCount) return;
      lastCount = state.count;
      const step = state.count > 0 ? steps[state.count - 1] : null;
      setText(counter, text("common.tokens_cached", { n: format.number(step ? step.kv_tokens : 0, 0) }));
      setText(perToken.value, step && state.count > 1 ? format.ms(step.ms) : "–");
      answer.set(state.count);
      showContext(state.count);
      candidates.set(step, format);
    },
  });
  stage.append(createChart(compareFigure, text).node);
}
