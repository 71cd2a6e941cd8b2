"""Decode figures: attention over the cache, step by step; ms/token with the cache vs recomputing."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import base_layout, colorbar_above, log_range, log_ticks, plot_height, to_dict
from hooks.demos.strings import Strings

MASK_SHAPE = "pd-mask"  # charts.js finds the mask by this name (decode.js takes it as shapes[0])


def position_labels(trace: dict[str, Any], positions: int) -> list[str]:
    """Text of every cached position: the prompt tokens, then each generated token."""
    texts = [t["text"] for t in trace["prompt"]["tokens"]]
    texts += [s["token"]["text"] for s in trace["steps"] if s.get("token")]
    return [f"{i}: {t}" for i, t in enumerate(texts[:positions])] + \
        [str(i) for i in range(len(texts), positions)]


def attention(trace: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """Heatmap: row i = decode step i's attention over every cached position (shorter rows padded).

    Its cells travel once, as the decode demo's steps' `attention`: decode.js fills z from them. It has
    no frames: the page's player shows the rows decoded so far by moving a mask over the rest, which
    redraws no heatmap per token."""
    rows = [list(s["attention"]["weights"]) for s in trace["steps"] if s.get("attention") and s["phase"] == "decode"]
    rows = rows or [[]]  # a one-token answer has no decode step
    width = max((len(r) for r in rows), default=0)
    height = max(340, 12 * len(rows) + 200)
    # zsmooth "fast" paints one pixel per cell and lets the browser scale it (the default paints the
    # whole plot area and encodes it as a PNG on every draw).
    base = go.Heatmap(z=[], x=list(range(max(width, 1))), y=list(range(len(rows))), zsmooth="fast",
                      colorscale="Viridis", zmin=0, zmax=max((max(r, default=0) for r in rows), default=1) or 1,
                      colorbar=colorbar_above(strings["decode.weight"], plot_height(height)),
                      customdata=[position_labels(trace, width)] * len(rows),
                      hovertemplate=strings["decode.attention_hover"] + "<extra></extra>")
    figure = go.Figure(data=[base])
    figure.update_layout(**base_layout(strings["decode.attention_title"], source, height=height))
    # The mask the page's player keeps over the rows not decoded yet (decode.js; hidden until then).
    # Shipped with the figure so every step can swap it for the next one (insert new, remove old).
    figure.add_shape(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=-0.5, y1=len(rows) - 0.5,
                     fillcolor="rgba(0,0,0,0)", line={"width": 0}, layer="above", visible=False, name=MASK_SHAPE)
    # Fixed ranges: the axes do not move as the mask uncovers rows.
    figure.update_xaxes(title_text=strings["decode.axis_position"], range=[-0.5, width - 0.5])
    # Rows are numbered from 1, every fifth one: a label on each row overlapped its neighbours.
    numbered = [row for row in range(len(rows)) if row == 0 or (row + 1) % 5 == 0]
    figure.update_yaxes(title_text=strings["decode.axis_step"], range=[len(rows) - 0.5, -0.5],
                        tickvals=numbered, ticktext=[str(row + 1) for row in numbered])
    return to_dict(figure)


def cache_vs_recompute(sweep: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """ms/token with the KV cache and with full recompute, as the context grows."""
    points = sweep["cache_vs_recompute"]
    contexts = [p["context"] for p in points]
    cached = [p["cached_ms_per_token"] for p in points]
    recompute = [p["recompute_ms_per_token"] for p in points]
    figure = go.Figure(data=[
        go.Scatter(x=contexts, y=recompute, mode="lines+markers", name=strings["decode.legend_recompute"]),
        go.Scatter(x=contexts, y=cached, mode="lines+markers", name=strings["decode.legend_cached"])])
    figure.update_layout(**base_layout(strings["decode.cache_title"], source))
    all_y = [y for y in cached + recompute if y and y > 0]
    figure.update_xaxes(title_text=strings["decode.axis_context"], type="log", tickvals=contexts,
                        ticktext=[f"{c:,}" for c in contexts], range=log_range(contexts, pad=0.1))
    y_range = log_range(all_y, pad=0.15)
    figure.update_yaxes(title_text=strings["common.axis_ms_per_token"], type="log", range=y_range,
                        **log_ticks(y_range))
    return to_dict(figure)
