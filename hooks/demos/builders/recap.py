"""The `recap` demo (summary chapter): TTFT and TPS against prompt length, side by side."""

from __future__ import annotations

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source
from hooks.demos.figures import recap as recap_figures
from hooks.demos.measurements import DEFAULT_PROMPT_LENGTHS, Measurements
from hooks.demos.strings import Strings


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    sweep = m.sweep(block.options.get("prompt_lengths", DEFAULT_PROMPT_LENGTHS))
    measured = measured_source(sweep["machine"], m.simulator.model_name, strings)
    data = {**base(block, strings), "figures": {"recap": recap_figures.recap(sweep, strings, measured)}}
    table = {"headers": [strings["common.axis_prompt_tokens"], strings["common.ttft"], strings["common.tps"]],
             "rows": [[fmt.count(p["prompt_tokens"], lang), fmt.ms(p["ttft_ms"], lang), fmt.tps(p["tps"], lang)]
                      for p in sweep["prompt_lengths"]]}
    return Demo(data, fallback(block, strings, measured=measured, table=table))
