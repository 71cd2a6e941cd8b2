"""The recap figure: TTFT against prompt length above TPS against prompt length, from one sweep."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hooks.demos.figures.common import base_layout, to_dict
from hooks.demos.strings import Strings

# The two plots are stacked, not side by side: at 320 px two plots side by side are 100 px wide each, too
# narrow for their titles and for the prompt-length ticks. Each subplot title takes a row above its plot.
SUBPLOT_TITLE_PX = 44  # a subplot title's row; the legend goes above the first one (36 let a two-row legend touch it at 320 px)
PLOT_PX = 170  # each plot's own height
GAP_PX = 60  # between the plots: the second plot's title


def recap(sweep: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    points = sweep["prompt_lengths"]
    lengths = [p["prompt_tokens"] for p in points]
    plots_px = 2 * PLOT_PX + GAP_PX
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=GAP_PX / plots_px,
                           subplot_titles=(strings["recap.ttft_title"], strings["recap.tps_title"]))
    figure.add_trace(go.Scatter(x=lengths, y=[p["ttft_ms"] for p in points], mode="lines+markers",
                                name=strings["common.ttft"]), row=1, col=1)
    figure.add_trace(go.Scatter(x=lengths, y=[p["tps"] for p in points], mode="lines+markers",
                                name=strings["common.tps"]), row=2, col=1)
    layout = base_layout(strings["recap.title"], source)
    layout["margin"]["t"] += SUBPLOT_TITLE_PX
    layout["height"] = layout["margin"]["t"] + plots_px + layout["margin"]["b"]
    # The legend sits on the first subplot title's row, never on it: its bottom edge is a row above the plot
    # (in the plot's own height, which the browser keeps: a wrapped legend or title grows the top margin).
    layout["legend"]["y"] = 1 + SUBPLOT_TITLE_PX / plots_px
    figure.update_layout(**layout)
    # Each subplot title a little above its plot: a tick label at the very top of the y axis reaches half
    # its height above the plot, and a title wider than a phone's plot then ran into it.
    figure.update_annotations(yshift=10)
    # 11 px ticks: on a phone 2,048 and 4,096 are an octave (about 35 px) apart on the log axis.
    figure.update_xaxes(type="log", tickvals=lengths, ticktext=[f"{n:,}" for n in lengths], tickfont={"size": 11},
                        autotickangles=[0, 90])  # upright before they overlap (at 30° they still touched)
    figure.update_xaxes(title_text=strings["common.axis_prompt_tokens"], row=2, col=1)
    figure.update_yaxes(title_text=strings["common.axis_ttft_ms"], rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text=strings["common.axis_tps"], rangemode="tozero", row=2, col=1)
    return to_dict(figure)
