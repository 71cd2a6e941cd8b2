"""The timeline demo's figure: one request drawn to scale — the prefill block, then one tick per token.

One frame per source and prompt length, named by `frame_name`; the demo JSON carries each point's frame
name as data (the browser never composes or parses one).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from hooks.demos.figures.common import animation_controls, base_layout, to_dict
from hooks.demos.strings import Strings

ANSWER_TOKENS = 32  # the timeline shows a 32-token answer at every prompt length


def frame_name(source: str, prompt_tokens: int) -> str:
    return f"{source}|{prompt_tokens}"


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
    """`sources[i]["points"]` hold prompt_tokens, ttft_ms and decode_ms_per_token: one frame each."""
    frames, frame_layouts = [], {}
    for choice in sources:
        for point in choice["points"]:
            name = frame_name(choice["id"], point["prompt_tokens"])
            end = point["ttft_ms"] + ANSWER_TOKENS * point["decode_ms_per_token"]
            frame_layouts[name] = {"xaxis": {"range": [0, end * 1.02]}}
            frames.append(go.Frame(name=name, data=bars(point["ttft_ms"], point["decode_ms_per_token"], strings),
                                   layout=frame_layouts[name]))
    measured = sorted(sources[0]["points"], key=lambda point: point["prompt_tokens"])  # the build machine's
    lengths = [point["prompt_tokens"] for point in measured]
    first = measured[0]
    names = [frame_name("measured", n) for n in lengths]
    figure = go.Figure(data=bars(first["ttft_ms"], first["decode_ms_per_token"], strings), frames=frames)
    figure.update_layout(**base_layout(strings.format("timeline.title", tokens=ANSWER_TOKENS), source,
                                       height=260, animated=True),
                         barmode="overlay", showlegend=True,
                         **animation_controls(names, [f"{n:,}" for n in lengths], strings,
                                              prefix=strings["timeline.slider_prefix"]))
    figure.layout.sliders[0].active = 0
    figure.update_layout(frame_layouts[names[0]])
    figure.update_xaxes(title_text=strings["timeline.axis_time"], rangemode="tozero")
    figure.update_yaxes(showticklabels=False)
    return to_dict(figure)
