"""What every demo figure shares: a theme-neutral layout, the source note, animation controls, JSON.

No light/dark colours are fixed here: backgrounds are transparent and the font colour is left to the
browser, which re-themes figures with Plotly.relayout when Material's palette changes. The trace colours
(Material indigo and deep orange, plus mid tones) read on white, on slate and on paper.
"""

from __future__ import annotations

import json
import math
from typing import Any

import plotly.graph_objects as go

from hooks.demos.strings import Strings

COLORWAY = ["#5c6bc0", "#ff7043", "#26a69a", "#ab47bc", "#8d6e63", "#42a5f5"]
DIVERGING = "RdBu_r"  # zero in the middle; both ends stay visible on light and dark backgrounds
FRAME_MS = 500
# Under an animated plot: axis ticks and title, then a row with Plotly's play/pause buttons, then the
# slider on its own full-width row (its current-value label above the rail), then the source note.
# Stacked rows cannot overlap at any width, unlike buttons beside the slider's label.
BUTTONS_TOP = 68
SLIDER_TOP = BUTTONS_TOP + 36
CONTROLS_BOTTOM = 224
TOP = 100  # title row, then up to three rows of legend above the plot


# Keys whose string values Plotly shows as (pseudo-HTML) text: titles, names, ticks, slider and
# button labels, hover data, category names on x and y. Frame names and button args are identifiers.
TEXT_KEYS = frozenset({"text", "name", "ticktext", "label", "prefix", "suffix", "customdata", "hovertemplate", "x", "y",
                       "texttemplate"})
SKIPPED_KEYS = frozenset({"args", "meta"})
# The only markup the builders themselves put in hover templates.
OWN_MARKUP = {"&lt;br&gt;": "<br>", "&lt;extra&gt;&lt;/extra&gt;": "<extra></extra>"}
SIGNIFICANT_DIGITS = 4


def plot_text(text: str) -> str:
    """Text for Plotly labels: Plotly reads a few HTML tags in labels, so "<|im_start|>" would vanish
    (and a hostile label could inject markup); entities show the characters as they are."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _hover_text(template: str) -> str:
    """A hover template escaped like any label, keeping the line breaks and <extra></extra> it needs."""
    escaped = plot_text(template)
    for entity, tag in OWN_MARKUP.items():
        escaped = escaped.replace(entity, tag)
    return escaped


def _escaped(value: Any, key: str) -> Any:
    if isinstance(value, str):
        return _hover_text(value) if key in ("hovertemplate", "texttemplate") else plot_text(value)
    if isinstance(value, list):
        return [_escaped(item, key) for item in value]
    return value


def escape_labels(node: Any, *, frame_level: bool = False) -> Any:
    """Escape every label string in a figure dict, in place (titles, axis titles, legend names,
    annotations, hover templates, tick and slider text). Builders pass raw strings; this is the one
    place they become Plotly text."""
    if isinstance(node, list):
        for item in node:
            escape_labels(item, frame_level=frame_level)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in SKIPPED_KEYS or (frame_level and key == "name"):
                continue
            if key in TEXT_KEYS and not isinstance(value, dict):
                node[key] = _escaped(value, key)
            else:
                escape_labels(value)
    return node


def round_floats(node: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """Floats rounded to `digits` significant digits (the browser shows no more), lists and dicts walked."""
    if isinstance(node, float):
        return float(f"{node:.{digits}g}") if math.isfinite(node) else node
    if isinstance(node, list):
        return [round_floats(item, digits) for item in node]
    if isinstance(node, dict):
        return {key: round_floats(value, digits) for key, value in node.items()}
    return node


def base_layout(title: str, source: str, *, height: int = 380, animated: bool = False) -> dict[str, Any]:
    """Layout every figure starts from; `source` is printed under the plot (figures travel alone).

    Animated figures keep room under the plot for Plotly's play buttons and, on the row below, the slider.
    """
    bottom = CONTROLS_BOTTOM if animated else 88
    return {
        "template": "none",
        # The title sits at the very top; the legend (which wraps into rows on a phone) gets the rest of
        # the top margin, so the two never meet.
        "title": {"text": title, "x": 0, "xanchor": "left", "xref": "container", "y": 1, "yref": "container",
                  "yanchor": "top", "pad": {"t": 10, "l": 4}},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "colorway": COLORWAY,
        "height": height + (TOP - 56) + (CONTROLS_BOTTOM - 88 if animated else 0),
        "margin": {"l": 64, "r": 24, "t": TOP, "b": bottom},
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
            "x": 0, "xanchor": "left", "y": 0, "yanchor": "top", "pad": {"t": BUTTONS_TOP, "r": 8},
            "buttons": [
                {"label": strings["common.play"], "method": "animate", "args": [None, {**frame_args, "fromcurrent": True}]},
                {"label": strings["common.pause"], "method": "animate",
                 "args": [[None], {**frame_args, "frame": {"duration": 0, "redraw": False}}]},
            ],
        }],
        "sliders": [{
            "active": len(frame_names) - 1, "x": 0, "len": 1, "xanchor": "left", "y": 0, "yanchor": "top",
            "pad": {"t": SLIDER_TOP, "l": 0, "r": 0}, "currentvalue": {"prefix": prefix},
            "steps": [{"label": label, "method": "animate", "args": [[name], frame_args]}
                      for name, label in zip(frame_names, step_labels, strict=True)],
        }],
    }


def to_dict(figure: go.Figure, frames: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The figure as plain JSON data for the demo file (plotly's own encoder, typed arrays as bdata),
    with its source note added under the plot. `frames`, if given, are plain-data frames to ship instead
    of the figure's own (validating dozens of big frames through plotly.graph_objects is slow)."""
    meta = figure.layout.meta or {}
    if meta.get("source"):
        figure.add_annotation(text=meta["source"], showarrow=False, xref="paper", yref="paper", x=0, y=0,
                              yshift=meta["source_offset"], xanchor="left", yanchor="bottom", font={"size": 10},
                              name="pd-source")
    data = json.loads(figure.to_json())
    if frames is not None:
        data["frames"] = frames
    label = figure.layout.title.text
    # The chart's accessible name, as plain text: the page sets it as an attribute, never as Plotly markup.
    return {**finish(data), **({"label": label} if label else {})}


def finish(data: dict[str, Any]) -> dict[str, Any]:
    """Last step of every builder: labels escaped for Plotly, floats rounded (smaller JSON)."""
    data = round_floats(data)
    escape_labels(data.get("layout"))
    escape_labels(data.get("data"))
    for frame in data.get("frames") or []:
        escape_labels(frame, frame_level=True)
    return data
