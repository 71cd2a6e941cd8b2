"""The `timeline` demo (TTFT/TPS chapter): one request to scale at each measured prompt length, on the
build machine or a projected model × hardware pair, with its TTFT, TPS and per-token latency."""

from __future__ import annotations

from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, projected_source
from hooks.demos.figures import timeline as timeline_figures
from hooks.demos.measurements import (
    DEFAULT_PROJECTION,
    DEFAULT_PROMPT_LENGTHS,
    REFERENCE_PROMPT_TOKENS,
    Measurements,
)
from hooks.demos.readouts import projection_label, projection_rows
from hooks.demos.strings import Strings


def source(source_id: str, label: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One choice of the source picker: its name and, by prompt length, TTFT, decode pace and the TPS it makes."""
    return {"id": source_id, "label": label,
            "points": [{"prompt_tokens": r["prompt_tokens"], "ttft_ms": r["ttft_ms"],
                        "decode_ms_per_token": r["decode_ms_per_token"],
                        "tps": 1000.0 / r["decode_ms_per_token"] if r["decode_ms_per_token"] else 0.0}
                       for r in sorted(rows, key=lambda r: r["prompt_tokens"])]}


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    lengths = block.options.get("prompt_lengths", list(DEFAULT_PROMPT_LENGTHS))
    sweep = m.sweep(lengths)
    projections = m.projections(lengths)
    wanted = block.options.get("projections", [DEFAULT_PROJECTION])
    rows_by_id = {pid: projection_rows(projections, pid) for pid in wanted}
    sources = [source("measured", strings["common.measured_label"], sweep["prompt_lengths"]),
               *(source(pid, f"{projection_label(projections, pid)} ({strings['common.projected_label']})", rows)
                 for pid, rows in rows_by_id.items())]
    measured = measured_source(sweep["machine"], m.simulator.model_name, strings)
    projected = projected_source([r for rows in rows_by_id.values() for r in rows], strings)
    # The chart draws each point in a frame of its own: the point carries that frame's index.
    for frame, point in enumerate(point for choice in sources for point in choice["points"]):
        point["frame"] = frame
    start = REFERENCE_PROMPT_TOKENS if REFERENCE_PROMPT_TOKENS in lengths else max(lengths)
    data = {**base(block, strings), "sources": sources, "start": {"source": "measured", "prompt_tokens": start},
            "figures": {"timeline": timeline_figures.timeline(sources, strings, measured)}}
    table = {"headers": [strings["timeline.source"], strings["common.axis_prompt_tokens"], strings["common.ttft"],
                         strings["common.ms_per_token"], strings["common.tps"]],
             "rows": [[s["label"], fmt.count(p["prompt_tokens"], lang), fmt.ms(p["ttft_ms"], lang),
                       fmt.ms(p["decode_ms_per_token"], lang), fmt.tps(p["tps"], lang)]
                      for s in sources for p in s["points"]]}
    title = strings.format("timeline.title", tokens=timeline_figures.ANSWER_TOKENS)
    return Demo(data, fallback(block, strings, measured=measured, projected=projected, table=table, title=title))
