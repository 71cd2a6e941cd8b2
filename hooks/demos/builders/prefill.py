"""The `prefill` demo (prefill chapter): the prompt's tokens read at once, the K and V the pass writes,
this prompt's KV cache beside a real 8B model's at 4k tokens, and prefill time against prompt length."""

from __future__ import annotations

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, projected_source, turn
from hooks.demos.figures import prefill as prefill_figures
from hooks.demos.measurements import DEFAULT_PROJECTION, DEFAULT_PROMPT_LENGTHS, Measurements
from hooks.demos.readouts import projection_at, projection_label, trace_readouts
from hooks.demos.strings import Strings
from simulations.projections import KV_REFERENCE_TOKENS  # "the KV cache at 4k tokens": the row carries it


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    sweep = m.sweep(block.options.get("prompt_lengths", DEFAULT_PROMPT_LENGTHS))
    wanted = block.options.get("projection", DEFAULT_PROJECTION)
    projections = m.projections()
    # The chosen projection's KV cache at 4k tokens, named for readers: always there (every default prompt
    # length is projected, KV_REFERENCE_TOKENS among them, and blocks.validate checks the id).
    row = projection_at(projections, wanted, KV_REFERENCE_TOKENS)
    reference = {"model": projections["models"][row["model"]]["name"],
                 "device": projections["devices"][row["device"]]["name"], "prompt_tokens": row["prompt_tokens"],
                 "kv_bytes": row["kv_bytes"], "share": row["kv_share_of_memory"]}
    measured = measured_source(trace["machine"], trace["model"]["name"], strings)
    readouts = trace_readouts(trace)
    data, context = turn(trace, strings, caveat=False)
    data = {**base(block, strings), **data, "weight_bytes": trace["model"]["weight_bytes"],
            "projection": reference,
            "figures": {"kv_heatmap": prefill_figures.kv_heatmap(trace, strings, measured),
                        "prefill_time": prefill_figures.prefill_time(sweep, trace["model"], strings, measured)}}
    rows = [(strings["common.prompt_chars"], fmt.count(readouts["prompt_chars"], lang)),
            (strings["common.prompt_tokens"], fmt.count(readouts["prompt_tokens"], lang)),
            (strings["common.ttft"], fmt.ms(readouts["ttft_ms"], lang)),
            (strings["common.kv_cache"], fmt.nbytes(readouts["kv_bytes"], lang)),
            (strings["prefill.kv_per_token"], fmt.nbytes(readouts["kv_bytes_per_token"], lang)),
            (strings.format("prefill.projected_kv", id=projection_label(projections, wanted),
                            tokens=fmt.count(reference["prompt_tokens"], lang)),
             f"{fmt.nbytes(reference['kv_bytes'], lang)} · {fmt.percent(reference['share'], lang)}")]
    table = {"headers": [strings["common.axis_prompt_tokens"], strings["common.ttft"]],
             "rows": [[fmt.count(p["prompt_tokens"], lang), fmt.ms(p["ttft_ms"], lang)] for p in sweep["prompt_lengths"]]}
    projected = projected_source([row], strings)
    return Demo(data, fallback(block, strings, measured=measured, projected=projected, rows=rows, table=table,
                               tokens=data["prompt"]["tokens"], **context), readouts)
