"""The recap figure: TTFT against prompt length beside TPS against prompt length, from one sweep."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from hooks.demos.figures.common import base_layout, to_dict
from hooks.demos.strings import Strings


def recap(sweep: dict[str, Any], strings: Strings, source: str) -> dict[str, Any]:
    points = sweep["prompt_lengths"]
    lengths = [p["prompt_tokens"] for p in points]
    figure = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                           subplot_titles=(strings["recap.ttft_title"], strings["recap.tps_title"]))
    figure.add_trace(go.Scatter(x=lengths, y=[p["ttft_ms"] for p in points], mode="lines+markers",
                                name=strings["common.ttft"]), row=1, col=1)
    figure.add_trace(go.Scatter(x=lengths, y=[p["tps"] for p in points], mode="lines+markers",
                                name=strings["common.tps"]), row=1, col=2)
    figure.update_layout(**base_layout(strings["recap.title"], source))
    figure.update_xaxes(title_text=strings["common.axis_prompt_tokens"], type="log", tickvals=lengths,
                        ticktext=[f"{n:,}" for n in lengths])
    figure.update_yaxes(title_text=strings["common.axis_ttft_ms"], rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text=strings["common.axis_tps"], rangemode="tozero", row=1, col=2)
    return to_dict(figure)
