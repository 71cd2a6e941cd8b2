"""The timeline demo's figure: one request drawn to scale — the prefill block, then one tick per token.

One frame per source and prompt length; `frame_keys` says which is which ({"source": "measured" or a
projection id, "prompt_tokens": n}), so the page animates to the frame of the reader's choice.
"""

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


def timeline(readouts: dict[str, dict[str, dict[str, float]]], strings: Strings, source: str) -> dict[str, Any]:
    """`readouts[source][str(prompt_tokens)]` holds ttft_ms and decode_ms_per_token for every frame; the
    figure itself shows the build machine at its shortest prompt."""
    frames, keys = [], []
    for source_id, by_length in readouts.items():
        for length, values in by_length.items():
            end = values["ttft_ms"] + ANSWER_TOKENS * values["decode_ms_per_token"]
            frames.append(go.Frame(data=bars(values["ttft_ms"], values["decode_ms_per_token"], strings),
                                   layout={"xaxis": {"range": [0, end * 1.02]}}))
            keys.append({"source": source_id, "prompt_tokens": int(length)})
    first = keys.index({"source": "measured", "prompt_tokens": min(int(n) for n in readouts["measured"])})
    figure = go.Figure(data=frames[first].data, frames=frames)
    figure.update_layout(**base_layout(strings.format("timeline.title", tokens=ANSWER_TOKENS), source, height=260),
                         barmode="overlay", showlegend=True)
    figure.update_layout(frames[first].layout)
    figure.update_xaxes(title_text=strings["timeline.axis_time"], rangemode="tozero")
    figure.update_yaxes(showticklabels=False)
    return to_dict(figure, frame_keys=keys)
