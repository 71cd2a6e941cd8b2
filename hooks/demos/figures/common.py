"""What every demo figure shares: a theme-neutral layout, the source note, frames, JSON.

No light/dark colours are fixed here: backgrounds are transparent and the font colour is left to the
browser, which re-themes figures with Plotly.relayout when Material's palette changes. The trace colours
(Material indigo and deep orange, plus mid tones) read on white, on slate and on paper.

No figure carries Plotly's own play buttons or slider: the page's player is the one set of controls and
drives the frames (docs/assets/pd/charts.js). Frames are named by their index ("0", "1", …); the demo's
data carries the index of the frame that draws each of its points, so the browser never parses a name.
"""

from __future__ import annotations

import json
import math
from typing import Any

import plotly.graph_objects as go

COLORWAY = ["#5c6bc0", "#ff7043", "#26a69a", "#ab47bc", "#8d6e63", "#42a5f5"]
DIVERGING = "RdBu_r"  # zero in the middle; both ends stay visible on light and dark backgrounds
TOP = 100  # title row, then up to three rows of legend above the plot
BOTTOM = 88  # axis ticks and title under the plot, then the source note


# Keys whose string values Plotly shows as (pseudo-HTML) text: titles, names, ticks, hover data,
# category names on x and y.
TEXT_KEYS = frozenset({"text", "name", "ticktext", "prefix", "suffix", "customdata", "hovertemplate", "x", "y",
                       "texttemplate"})
# The only markup the builders themselves put in hover templates.
OWN_MARKUP = {"&lt;br&gt;": "<br>", "&lt;extra&gt;&lt;/extra&gt;": "<extra></extra>"}
SIGNIFICANT_DIGITS = 4


def plot_text(text: str) -> str:
    """Text for Plotly labels: Plotly reads a few HTML tags in labels, so "<|im_start|>" would vanish
    (and a hostile label could inject markup); entities show the characters as they are."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def colorbar_above(title: str, plot_height_px: float, gap_px: float = 6) -> dict[str, Any]:
    """A colour bar lying across the top of the plot, where a legend would be, `gap_px` above it (a
    heatmap's plot is `plot_height_px` tall): standing at a heatmap's side it took a third of a phone's
    width from the heatmap, and pushed the margin the source note is placed by."""
    return {"orientation": "h", "x": 0, "xanchor": "left", "y": 1 + gap_px / plot_height_px, "yanchor": "bottom",
            "len": 1, "thickness": 10, "title": {"text": title, "side": "top"}}


def plot_height(height: int) -> int:
    """Pixels between the top and bottom margins of a figure laid out with base_layout(height=height)."""
    return base_layout("", "", height=height)["height"] - TOP - BOTTOM


def escape_labels(node: Any, key: str | None = None) -> Any:
    """A figure's JSON with every label string escaped (titles, axis titles, legend names, annotations,
    hover templates, tick text; `key`: the text key the node is under). Builders pass raw strings; this is
    the one place they become Plotly text. A template keeps the line breaks and <extra></extra> it needs."""
    if isinstance(node, list):
        return [escape_labels(item, key) for item in node]
    if isinstance(node, dict):
        return {name: escape_labels(value, name if name in TEXT_KEYS else None) for name, value in node.items()}
    if not isinstance(node, str) or key is None:
        return node
    escaped = plot_text(node)
    if key in ("hovertemplate", "texttemplate"):
        for entity, tag in OWN_MARKUP.items():
            escaped = escaped.replace(entity, tag)
    return escaped


def round_floats(node: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """Floats rounded to `digits` significant digits (the browser shows no more), lists and dicts walked."""
    if isinstance(node, float):
        return float(f"{node:.{digits}g}") if math.isfinite(node) else node
    if isinstance(node, list):
        return [round_floats(item, digits) for item in node]
    if isinstance(node, dict):
        return {key: round_floats(value, digits) for key, value in node.items()}
    return node


def log_range(values: list[float], pad: float) -> list[float]:
    """A log-axis range covering every value, with `pad` decades either side."""
    return [math.log10(min(values)) - pad, math.log10(max(values)) + pad]


# Mantissas of a log axis's labelled ticks, finest first. Plotly picks its own from the axis's length in
# pixels and, on a phone's short axis spanning two decades, labelled every digit (5, 6, … 10), one over the
# next. The labels are chosen here from the range alone, so they are the same on every screen.
LOG_TICK_MANTISSAS = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 5), (1, 3), (1,))
MAX_LOG_TICKS = 6


def log_ticks(log_range_: list[float]) -> dict[str, Any]:
    """Labelled ticks for a log axis over `log_range_` (decades): the finest 1-2-5 style set giving at most
    MAX_LOG_TICKS labels, or every power of ten when even those are too many. A range too narrow for two
    labels even at every digit is left to Plotly (its labels are then few and far apart)."""
    low, high = log_range_
    for mantissas in LOG_TICK_MANTISSAS:
        values = [round(m * 10.0 ** e, 12) for e in range(math.floor(low), math.ceil(high) + 1) for m in mantissas
                  if low <= math.log10(m) + e <= high]
        if len(values) < 2 and mantissas == LOG_TICK_MANTISSAS[0]:
            return {}
        if len(values) <= MAX_LOG_TICKS or mantissas == (1,):
            break
    if len(values) > MAX_LOG_TICKS:  # many decades: every few powers of ten
        values = values[::math.ceil(len(values) / MAX_LOG_TICKS)]
    return {"tickvals": values, "ticktext": [f"{v:,.{max(0, -math.floor(math.log10(v)))}f}" for v in values]}


def base_layout(title: str, source: str, *, height: int = 380) -> dict[str, Any]:
    """Layout every figure starts from; `source` is printed under the plot (figures travel alone)."""
    return {
        "template": "none",
        # The title sits at the very top; the legend (which wraps into rows on a phone) gets the rest of
        # the top margin, so the two never meet.
        "title": {"text": title, "x": 0, "xanchor": "left", "xref": "container", "y": 1, "yref": "container",
                  "yanchor": "top", "pad": {"t": 10, "l": 4}},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "colorway": COLORWAY,
        "height": height + (TOP - 56),
        "margin": {"l": 64, "r": 24, "t": TOP, "b": BOTTOM},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1},
        "font": {"family": "system-ui, -apple-system, 'Segoe UI', 'Noto Sans CJK SC', 'PingFang SC', sans-serif",
                 "size": 13},
        # to_dict() prints the source under the plot (after subplot titles, which are annotations too).
        "meta": {"source": source},
    }


def to_dict(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON data for the demo file (plotly's own encoder, typed arrays as bdata),
    with its source note added under the plot, its frames named by index, and its title as plain text in
    `label` (the chart's accessible name: the browser sets it as an attribute, never as markup)."""
    meta = figure.layout.meta or {}
    if meta.get("source"):
        figure.add_annotation(text=meta["source"], showarrow=False, xref="paper", yref="paper", x=0, y=0,
                              yshift=8 - BOTTOM, xanchor="left", yanchor="bottom", font={"size": 10}, name="pd-source")
    data = json.loads(figure.to_json())
    data["layout"].pop("meta", None)
    for index, frame in enumerate(data.get("frames") or []):
        frame["name"] = str(index)
    # Labels escaped for Plotly, floats rounded (smaller JSON); the accessible name stays plain text.
    return {**escape_labels(round_floats(data)), "label": data["layout"]["title"]["text"]}
