"""Roofline figures: the build machine's roofline with prefill and decode on it (frames by prompt
length), and the compute / bandwidth utilisation of each phase, measured and projected."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import base_layout, log_range, log_ticks, to_dict
from hooks.demos.strings import Strings


def roof(peak_gflops: float, peak_gbps: float, low: float = 0.05, high: float = 1e4) -> tuple[list[float], list[float]]:
    """The roof: bandwidth-limited slope up to the ridge point, then the compute ceiling."""
    ridge = peak_gflops / peak_gbps
    xs = [low, ridge, high]
    return xs, [min(peak_gflops, x * peak_gbps) for x in xs]


def roofline(peaks: dict[str, float], points: list[dict[str, Any]], strings: Strings, source: str) -> dict[str, Any]:
    """`points`: the roofline measurement's, by increasing prompt length ({"prompt_tokens", "prefill",
    "decode"}, each phase with intensity and gflops); frame i draws points[i], the figure itself the last."""
    xs, ys = roof(peaks["peak_gflops"], peaks["peak_gbps"])

    # Each point's name reads towards the middle of the chart, under the roof: centred on the point, the
    # names of prefill (far right) and decode (far left) ran off a phone's chart.
    def markers(point: dict[str, Any]) -> list[go.Scatter]:
        return [go.Scatter(x=[point[phase]["intensity"]], y=[point[phase]["gflops"]],
                           mode="markers+text", text=[strings[f"common.phase_{phase}"]],
                           textposition=side, marker={"size": 14, "symbol": symbol},
                           name=strings[f"common.phase_{phase}"])
                for phase, symbol, side in (("prefill", "circle", "bottom left"), ("decode", "diamond", "bottom right"))]

    roof_trace = go.Scatter(x=xs, y=ys, mode="lines", name=strings["roofline.legend_roof"],
                            line={"width": 3}, hoverinfo="skip")
    figure = go.Figure(data=[roof_trace, *markers(points[-1])],
                       frames=[go.Frame(data=markers(point), traces=[1, 2]) for point in points])
    figure.update_layout(**base_layout(strings["roofline.title"], source, height=420))
    all_x = xs + [p[ph]["intensity"] for p in points for ph in ("prefill", "decode")]
    all_y = ys + [p[ph]["gflops"] for p in points for ph in ("prefill", "decode")]
    x_range, y_range = log_range(all_x, 0.2), log_range(all_y, 0.3)
    figure.update_xaxes(title_text=strings["roofline.axis_intensity"], type="log", range=x_range, **log_ticks(x_range))
    figure.update_yaxes(title_text=strings["roofline.axis_gflops"], type="log", range=y_range, **log_ticks(y_range))
    return to_dict(figure)


def utilization(rows: list[dict[str, Any]], strings: Strings, source: str) -> dict[str, Any]:
    """Bars of compute and bandwidth utilisation of prefill and of decode, in percent, for ONE source at
    a time, switched by the demo's hardware picker. `rows`: [{"label", "prefill", "decode", "frame"}], `frame`
    the index of the frame that draws the row; the figure itself shows rows[0]."""
    categories = [strings["roofline.cat_prefill_compute"], strings["roofline.cat_prefill_bandwidth"],
                  strings["roofline.cat_decode_compute"], strings["roofline.cat_decode_bandwidth"]]

    def bars(row: dict[str, Any]) -> go.Bar:
        values = [row["prefill"]["compute_utilization"], row["prefill"]["bandwidth_utilization"],
                  row["decode"]["compute_utilization"], row["decode"]["bandwidth_utilization"]]
        return go.Bar(y=[i + 0.25 for i in range(len(values))], x=[100 * v for v in values], orientation="h",
                      width=0.4, name=row["label"], showlegend=True, text=[f"{100 * v:.0f}%" for v in values],
                      textposition="outside", customdata=categories, hovertemplate="%{customdata}: %{x:.0f}%")

    frames: list[go.Frame | None] = [None] * len(rows)
    for row in rows:
        frames[row["frame"]] = go.Frame(data=[bars(row)], traces=[0])
    figure = go.Figure(data=[bars(rows[0])], frames=frames)
    figure.update_layout(**base_layout(strings["roofline.util_title"], source, height=400), margin_l=24)
    # The bars lie down, each one's name on its own line above it, so that names read across the whole
    # width: under upright bars they turned on end on a phone and ran into the source note.
    for index, category in enumerate(categories):
        figure.add_annotation(text=category, x=0, y=index, xanchor="left", yanchor="bottom", showarrow=False)
    figure.update_yaxes(visible=False, range=[len(categories) - 0.4, -0.6])  # the first bar on top
    figure.update_xaxes(title_text=strings["roofline.axis_util"], range=[0, 115], ticksuffix="%")
    return to_dict(figure)
