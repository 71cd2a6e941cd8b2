"""The `conversation` demo (two-phases chapter): a prompt, prefill, then the answer at its recorded pace."""

from __future__ import annotations

from typing import Any

from hooks.demos import model_chunks
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, shown_steps, trace_rows, turn
from hooks.demos.measurements import Measurements
from hooks.demos.readouts import trace_readouts
from hooks.demos.strings import Strings


def running_tps(steps: list[dict[str, Any]]) -> list[float | None]:
    """TPS as the build reports it, at each shown step: 1000 / the mean time of the decode steps so far
    (None at the prefill step, before any decode step)."""
    rates: list[float | None] = []
    decoded, decode_ms = 0, 0.0
    for step in steps:
        if step["phase"] == "decode":
            decoded, decode_ms = decoded + 1, decode_ms + step["end_ms"] - step["start_ms"]
        rates.append(round(1000.0 * decoded / decode_ms, 3) if decoded else None)
    return rates


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    readouts = trace_readouts(trace)
    data, context = turn(trace, strings)
    for step, tps in zip(data["steps"], running_tps(shown_steps(trace)), strict=True):
        step["tps"] = tps
    measured = measured_source(trace["machine"], trace["model"]["name"], strings)
    # The real model on the reader's device, offered beside the recording (nothing fetched before a press).
    live = {"model": trace["model"]["name"], **model_chunks.descriptor(m.simulator.model),
            "prompt": block.prompt, "chat": block.options["chat"], "max_new_tokens": block.options["max_new_tokens"]}
    data = {**data, "live": live}
    common = base(block, strings)
    common["strings"] = {**common["strings"], **strings.section("live")}
    return Demo({**common, **data},
                fallback(block, strings, measured=measured, rows=trace_rows(readouts, strings), **context), readouts)
