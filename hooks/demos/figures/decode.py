"""Decode figures: attention over the cache, step by step; ms/token with the cache vs recomputing."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import animation_controls, base_layout, to_dict
from hooks.demos.strings import Strings

MASK_SHAPE = "pd-mask"  # decode.js and charts.js find the mask by this name
MAX_FRAMES = 64  # frames hold the whole matrix; beyond this, keep every k-th step (and the last)


def attention_rows(trace: dict[str, Any]) -> tuple[list[int], list[list[float]]]:
    """(step indices, attention weights over cached positions) of the steps that recorded attention."""
    steps = [s for s in trace["steps"] if s.get("attention") and s.get("phase") == "decode"]
    return [s["index"] for s in steps], [list(s["attention"]["weights"]) for s in steps]


def position_labels(trace: dict[str, Any], positions: int) -> list[str]:
    """Text of every cached position: the prompt tokens, then each generated token."""
    texts = [t["text"] for t in trace["prompt"]["tokens"]]
    texts += [s["token"]["text"] for s in trace["steps"] if s.get("token")]
    return [f"{i}: {t}" for i, t in enumerate(texts[:positions])] + \
        [str(i) for i in range(len(texts), positions)]


def kept_frames(count: int) -> list[int]:
    if count <= MAX_FRAMES:
        return list(range(count))
    stride = -(-count // MAX_FRAMES)
    return sorted(set(range(0, count, stride)) | {count - 1})


def attention(trace: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """Heatmap: row i = decode step i's attention over every cached position. Frame "empty" comes first
    (nothing decoded yet, so the chart starts blank), then frames "step-i" fill rows 0..i.

    The base trace holds every row: the page's player reveals rows by moving a mask (no heatmap redraw
    per token); Plotly's own play button and slider run the frames."""
    _, rows = attention_rows(trace)
    if not rows:  # a one-token answer has no decode step
        rows = [[]]
    width = max((len(r) for r in rows), default=0)
    matrix = [[round(w, 3) for w in r] for r in rows]
    labels = [strings.format("decode.step_label", n=i + 1) for i in range(len(rows))]

    def filled(upto: int) -> dict[str, Any]:
        """Rows 0..upto, each padded to the widest of them: a frame carries only what has been written.
        upto = -1 is the empty frame: one blank row, so the axes keep their place."""
        shown = matrix[: upto + 1] or [[]]
        cols = max(max(len(r) for r in shown), 1)
        return {"z": [r + [None] * (cols - len(r)) for r in shown], "x": list(range(cols)),
                "y": list(range(max(upto + 1, 1)))}

    # zsmooth "fast" paints one pixel per cell and lets the browser scale it: a redraw per token stays
    # cheap (the default paints the whole plot area and encodes it as a PNG on every frame).
    base = go.Heatmap(**filled(len(rows) - 1), zsmooth="fast",
                      colorscale="Viridis", zmin=0, zmax=max((max(r, default=0) for r in matrix), default=1) or 1,
                      colorbar={"title": {"text": strings["decode.weight"]}},
                      customdata=[position_labels(trace, width)] * len(rows),
                      hovertemplate=strings["decode.attention_hover"] + "<extra></extra>")

    frames = kept_frames(len(rows))
    names = ["empty", *(f"step-{i}" for i in frames)]
    figure = go.Figure(data=[base])
    figure.update_layout(**base_layout(strings["decode.attention_title"], source,
                                       height=max(340, 12 * len(rows) + 200), animated=True),
                         **animation_controls(names, [strings["decode.frame_empty"], *(str(i + 1) for i in frames)],
                                              strings, prefix=strings["decode.slider_prefix"]))
    figure.layout.sliders[0].active = 0
    # The mask the page's player keeps over the rows not decoded yet (decode.js; hidden until then).
    # Shipped with the figure so every step can swap it for the next one (insert new, remove old).
    figure.add_shape(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=-0.5, y1=len(rows) - 0.5,
                     fillcolor="rgba(0,0,0,0)", line={"width": 0}, layer="above", visible=False, name=MASK_SHAPE)
    # Fixed ranges: rows and columns appear in place as frames add them.
    figure.update_xaxes(title_text=strings["decode.axis_position"], range=[-0.5, width - 0.5])
    figure.update_yaxes(title_text=strings["decode.axis_step"], range=[len(rows) - 0.5, -0.5],
                        tickvals=list(range(len(rows))), ticktext=labels)
    # Frames carry only z, x, y (Plotly merges them into the base trace, so colours and hover stay).
    return to_dict(figure, frames=[{"name": n, "data": [{"type": "heatmap", **filled(i)}], "traces": [0]}
                                   for n, i in zip(names, [-1, *frames], strict=True)])


def cache_vs_recompute(sweep: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """ms/token with the KV cache and with full recompute, as the context grows; frames add contexts."""
    points = sweep["cache_vs_recompute"]
    contexts = [p["context"] for p in points]
    cached = [p["cached_ms_per_token"] for p in points]
    recompute = [p["recompute_ms_per_token"] for p in points]

    def lines(upto: int) -> list[go.Scatter]:
        return [go.Scatter(x=contexts[:upto], y=recompute[:upto], mode="lines+markers",
                           name=strings["decode.legend_recompute"]),
                go.Scatter(x=contexts[:upto], y=cached[:upto], mode="lines+markers",
                           name=strings["decode.legend_cached"])]

    names = [f"context-{c}" for c in contexts]
    figure = go.Figure(data=lines(len(contexts)),
                       frames=[go.Frame(name=n, data=lines(i + 1)) for i, n in enumerate(names)])
    figure.update_layout(**base_layout(strings["decode.cache_title"], source, animated=True),
                         **animation_controls(names, [f"{c:,}" for c in contexts], strings,
                                              prefix=strings["decode.context_prefix"]))
    all_y = [y for y in cached + recompute if y and y > 0]
    figure.update_xaxes(title_text=strings["decode.axis_context"], type="log", tickvals=contexts,
                        ticktext=[f"{c:,}" for c in contexts],
                        range=_log_range(contexts, pad=0.1))
    figure.update_yaxes(title_text=strings["common.axis_ms_per_token"], type="log",
                        range=_log_range(all_y, pad=0.15))
    return to_dict(figure)


def _log_range(values: list[float], pad: float) -> list[float]:
    """A fixed log-axis range covering all frames, so points do not jump while the animation runs."""


    low, high = math.log10(min(values)), math.log10(max(values))
    return [low - pad, high + pad]
