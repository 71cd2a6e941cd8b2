"""The weight formats on this machine's roofline: every format's decode and prefill point (faint), the chosen
format's two points marked (one frame per format, stepped by the page's player)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import base_layout, log_range, log_ticks, to_dict
from hooks.demos.figures.roofline import roof
from hooks.demos.strings import Strings

PHASES = (("decode", "diamond", "bottom right"), ("prefill", "circle", "bottom left"))


def roofline(peaks: dict[str, float], rows: list[dict[str, Any]], strings: Strings, source: str) -> dict[str, Any]:
    """`rows`: the demo's formats ({"name", "decode", "prefill"}, each phase with intensity and gflops), F32
    first; frame i marks rows[i]'s two points, the figure itself the first row's."""
    xs, ys = roof(peaks["peak_gflops"], peaks["peak_gbps"])

    # A chosen point's label is its phase over its format, two lines: on one line ("Prefill (reading) · F32")
    # the labels ran past a 320 px phone's chart on both sides. The words travel as customdata, escaped like
    # every label; the template's own line break is the builder's.
    def chosen(row: dict[str, Any]) -> list[go.Scatter]:
        return [go.Scatter(x=[row[phase]["intensity"]], y=[row[phase]["gflops"]], mode="markers+text",
                           customdata=[[strings[f"common.phase_{phase}"], row["name"]]],
                           texttemplate="%{customdata[0]}<br>%{customdata[1]}", textposition=side,
                           marker={"size": 14, "symbol": symbol}, name=strings[f"common.phase_{phase}"],
                           showlegend=False, hovertemplate="%{customdata[0]} · %{customdata[1]}<extra></extra>")
                for phase, symbol, side in PHASES]

    # Every format's two points stay on the chart, small and grey, so the chosen one is seen moving among them.
    # The chosen points are named by their own labels: a legend entry each took a second row on a phone.
    others = [go.Scatter(x=[row[phase]["intensity"] for row in rows], y=[row[phase]["gflops"] for row in rows],
                         mode="markers", marker={"size": 8, "symbol": symbol, "color": "rgba(128,128,128,0.55)"},
                         name=strings["formats.legend_all"] if phase == "decode" else None,
                         showlegend=phase == "decode", legendgroup="all",
                         customdata=[f"{strings[f'common.phase_{phase}']} · {row['name']}" for row in rows],
                         hovertemplate="%{customdata}<extra></extra>")
              for phase, symbol, _ in PHASES]
    roof_trace = go.Scatter(x=xs, y=ys, mode="lines", name=strings["roofline.legend_roof"], line={"width": 3},
                            hoverinfo="skip")
    figure = go.Figure(data=[roof_trace, *others, *chosen(rows[0])],
                       frames=[go.Frame(data=chosen(row), traces=[3, 4]) for row in rows])
    figure.update_layout(**base_layout(strings["formats.chart_title"], source, height=420))
    all_x = xs + [row[phase]["intensity"] for row in rows for phase, _, _ in PHASES]
    all_y = ys + [row[phase]["gflops"] for row in rows for phase, _, _ in PHASES]
    x_range, y_range = log_range(all_x, 0.2), log_range(all_y, 0.3)
    figure.update_xaxes(title_text=strings["roofline.axis_intensity"], type="log", range=x_range, **log_ticks(x_range))
    figure.update_yaxes(title_text=strings["roofline.axis_gflops"], type="log", range=y_range, **log_ticks(y_range))
    return to_dict(figure)
