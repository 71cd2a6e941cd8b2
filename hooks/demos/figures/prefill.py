"""Prefill figures: the K and V heatmaps of the prompt, and measured prefill time vs prompt length."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hooks.demos.figures.common import DIVERGING, base_layout, colorbar_above, plot_height, to_dict
from hooks.demos.strings import Strings
from simulations.cost import ModelShape, prefill_cost


def prefill_flops_split(model: dict[str, Any], prompt_tokens: int) -> tuple[float, float]:
    """(linear, attention) FLOPs of prefilling `prompt_tokens` tokens, by the cost model (simulations/cost.py);
    `model` is a trace's model summary. Linear counts the LM head once: prefill needs the last position's logits."""
    cost = prefill_cost(ModelShape.from_summary(model), prompt_tokens)
    return float(cost.linear_flops + cost.lm_head_flops), float(cost.attention_flops)


def token_labels(tokens: list[dict[str, Any]]) -> list[str]:
    """Tick labels for prompt tokens: position and visible text (whitespace made visible)."""
    return [f"{i}: {t['text'].replace(' ', '·').replace(chr(10), '⏎')}" for i, t in enumerate(tokens)]


def kv_heatmap(trace: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """K and V of every prompt token (one layer, first dims) side by side.

    Prefill writes every row in the same pass, so there are two states, not one per token: the page's
    player shows the heatmaps once prefill has run (prefill.js fades them in; no frames needed).
    """
    kv = trace["kv_slice"]
    k, v = kv["k"], kv["v"]
    rows = list(range(len(k)))
    labels = token_labels(trace["prompt"]["tokens"])[: len(k)]
    dims = list(range(kv["dims"]))
    limit = max((abs(x) for row in k + v for x in row), default=1.0) or 1.0
    figure = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                           subplot_titles=(strings["prefill.k_title"], strings["prefill.v_title"]))
    for col, (name, z) in enumerate((("K", k), ("V", v)), start=1):
        # zsmooth "fast": one pixel per cell, scaled by the browser — fading in stays cheap.
        figure.add_trace(go.Heatmap(z=z, name=name, x=dims, y=rows, coloraxis="coloraxis", zsmooth="fast"),
                         row=1, col=col)
    title = strings.format("prefill.kv_heatmap_title", layer=kv["layer"], dims=kv["dims"])
    height = max(320, 18 * len(rows) + 160)
    figure.update_layout(**base_layout(title, source, height=height))
    figure.update_layout(coloraxis={"colorscale": DIVERGING, "cmid": 0, "cmin": -limit, "cmax": limit,
                                    # above K's and V's titles
                                    "colorbar": colorbar_above(strings["prefill.value"], plot_height(height), 30)})
    figure.update_yaxes(tickvals=rows, ticktext=labels, autorange="reversed", row=1, col=1)
    figure.update_yaxes(autorange="reversed", row=1, col=2)
    # Two ticks per heatmap, upright: on a phone each heatmap is about 60 px wide, and Plotly's own ticks
    # (every 5th dimension, turned sideways) collided, the last of K with the first of V. For the same
    # reason the axis is named once, under K: two titles side by side ran into each other.
    figure.update_xaxes(tickvals=sorted({0, len(dims) // 2}), tickangle=0)
    figure.update_xaxes(title_text=strings["prefill.axis_dim"], row=1, col=1)
    # K's title ends where K ends and V's starts where V starts: on a phone each heatmap is narrower than
    # its title, and centred titles ran into each other; these grow apart, whatever their length.
    k_title, v_title = figure.layout.annotations
    k_title.update(x=figure.layout.xaxis.domain[1], xanchor="right")
    v_title.update(x=figure.layout.xaxis2.domain[0], xanchor="left")
    figure.update_yaxes(title_text=strings["prefill.axis_token"], row=1, col=1)
    return to_dict(figure)


def prefill_time(sweep: dict[str, Any], model: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    """Measured prefill time (TTFT) against prompt length, over the linear and attention FLOPs."""
    points = sweep["prompt_lengths"]
    lengths = [p["prompt_tokens"] for p in points]
    split = [prefill_flops_split(model, n) for n in lengths]
    # One category per measured length: on a log axis a bar's width is in data units, so each bar came out
    # a different width (the first one wider than the chart); categories give every bar the same width.
    categories = [f"{n:,}" for n in lengths]
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(go.Bar(x=categories, y=[lin / 1e9 for lin, _ in split], name=strings["prefill.legend_linear"],
                            opacity=0.55), secondary_y=True)
    figure.add_trace(go.Bar(x=categories, y=[att / 1e9 for _, att in split], name=strings["prefill.legend_attention"],
                            opacity=0.55), secondary_y=True)
    figure.add_trace(go.Scatter(x=categories, y=[p["ttft_ms"] for p in points], mode="lines+markers",
                                name=strings["prefill.legend_measured"], line={"width": 3}), secondary_y=False)
    figure.update_layout(**base_layout(strings["prefill.time_title"], source), barmode="stack")
    figure.update_xaxes(title_text=strings["common.axis_prompt_tokens"], type="category", tickfont={"size": 11},
                        autotickangles=[0, 90])  # upright before they overlap (a phone; at 30° they still did)
    figure.update_yaxes(title_text=strings["common.axis_ttft_ms"], secondary_y=False, rangemode="tozero")
    figure.update_yaxes(title_text=strings["prefill.axis_gflop"], secondary_y=True, showgrid=False,
                        rangemode="tozero")
    return to_dict(figure)
