"""The timeline demo's figure: one request drawn to scale — the prefill block, then one tick per token."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import base_layout, to_dict
from hooks.demos.strings import Strings

ANSWER_TOKENS = 32  # the timeline shows a 32-token answer at every prompt length


def bars(ttft_ms: float, decode_ms: float, strings: Strings) -> list[go.Bar]:
    """Horizontal bars on one row: prefill [0, TTFT], then ANSWER_TOKENS decode ticks."""
    ticks = [ttft_ms + i * decode_ms for i in range(ANSWER_TOKENS)]
    return [
        go.Bar(y=[""], x=[ttft_ms], base=[0], orientation="h", name=strings["common.phase_prefill"],
               hovertemplate=strings["timeline.prefill_hover"] + "<extra></extra>"),
        go.Bar(y=[""] * len(ticks), x=[decode_ms * 0.85] * len(ticks), base=ticks, orientation="h",
               name=strings["common.phase_decode"],
               hovertemplate=strings["timeline.decode_hover"] + "<extra></extra>"),
    ]


def timeline(sources: list[dict[str, Any]], strings: Strings, source: str) -> dict[str, Any]:
    """`sources[i]["points"]` hold prompt_tokens, ttft_ms, decode_ms_per_token and `frame`, the index of
    the frame that draws the point (each point has its own). The figure itself shows the first point."""
    points = [point for choice in sources for point in choice["points"]]
    frames: list[go.Frame | None] = [None] * len(points)
    for point in points:
        end = point["ttft_ms"] + ANSWER_TOKENS * point["decode_ms_per_token"]
        frames[point["frame"]] = go.Frame(data=bars(point["ttft_ms"], point["decode_ms_per_token"], strings),
                                          layout={"xaxis": {"range": [0, end * 1.02]}})
    first = frames[points[0]["frame"]]
    figure = go.Figure(data=first.data, frames=frames)
    figure.update_layout(**base_layout(strings.format("timeline.title", tokens=ANSWER_TOKENS), source, height=260),
                         barmode="overlay", showlegend=True)
    figure.update_layout(first.layout)
    figure.update_xaxes(title_text=strings["timeline.axis_time"], rangemode="tozero")
    figure.update_yaxes(showticklabels=False)
    return to_dict(figure)
