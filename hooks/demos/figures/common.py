"""What every demo figure shares: a theme-neutral layout, the source note, animation controls, JSON.

No light/dark colours are fixed here: backgrounds are transparent and the font colour is left to the
browser, which re-themes figures with Plotly.relayout when Material's palette changes. The trace colours
(Material indigo and deep orange, plus mid tones) read on white, on slate and on paper.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from hooks.demos.strings import Strings

COLORWAY = ["#5c6bc0", "#ff7043", "#26a69a", "#ab47bc", "#8d6e63", "#42a5f5"]
DIVERGING = "RdBu_r"  # zero in the middle; both ends stay visible on light and dark backgrounds
FRAME_MS = 500


def plot_text(text: str) -> str:
    """Text for Plotly labels: Plotly reads a few HTML tags in labels, so "<|im_start|>" would vanish
    (and a hostile label could inject markup); entities show the characters as they are."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def base_layout(title: str, source: str, *, height: int = 380, animated: bool = False) -> dict[str, Any]:
    """Layout every figure starts from; `source` is printed under the plot (figures travel alone).

    Animated figures keep room under the plot for Plotly's play button and slider.
    """
    bottom = 160 if animated else 88
    return {
        "template": "none",
        "title": {"text": plot_text(title), "x": 0, "xanchor": "left"},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "colorway": COLORWAY,
        "height": height + (72 if animated else 0),
        "margin": {"l": 64, "r": 24, "t": 56, "b": bottom},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1},
        "font": {"family": "system-ui, -apple-system, 'Segoe UI', 'Noto Sans CJK SC', 'PingFang SC', sans-serif",
                 "size": 13},
        # to_dict() prints the source under the plot (after subplot titles, which are annotations too).
        "meta": {"source": source, "source_offset": 8 - bottom},
    }


def animation_controls(frame_names: list[str], step_labels: list[str], strings: Strings,
                       *, prefix: str = "") -> dict[str, Any]:
    """Plotly's own play/pause buttons and a slider over the named frames (labels from strings)."""
    frame_args = {"frame": {"duration": FRAME_MS, "redraw": True}, "mode": "immediate",
                  "transition": {"duration": 0}}
    return {
        "updatemenus": [{
            "type": "buttons", "direction": "left", "showactive": False,
            "x": 0, "xanchor": "left", "y": 0, "yanchor": "top", "pad": {"t": 48, "r": 8},
            "buttons": [
                {"label": strings["common.play"], "method": "animate", "args": [None, {**frame_args, "fromcurrent": True}]},
                {"label": strings["common.pause"], "method": "animate",
                 "args": [[None], {**frame_args, "frame": {"duration": 0, "redraw": False}}]},
            ],
        }],
        "sliders": [{
            "active": len(frame_names) - 1, "x": 0.16, "len": 0.84, "y": 0, "yanchor": "top",
            "pad": {"t": 40}, "currentvalue": {"prefix": prefix},
            "steps": [{"label": label, "method": "animate", "args": [[name], frame_args]}
                      for name, label in zip(frame_names, step_labels, strict=True)],
        }],
    }


def to_dict(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON data for the demo file (plotly's own encoder, typed arrays as bdata),
    with its source note added under the plot."""
    meta = figure.layout.meta or {}
    if meta.get("source"):
        figure.add_annotation(text=plot_text(meta["source"]), showarrow=False, xref="paper", yref="paper", x=0, y=0,
                              yshift=meta["source_offset"], xanchor="left", yanchor="bottom", font={"size": 10},
                              name="pd-source")
    return json.loads(figure.to_json())
