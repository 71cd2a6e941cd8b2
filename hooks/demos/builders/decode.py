"""The `decode` demo (decode chapter): one token per step over a growing cache, the new token's attention
over every cached position, the top candidates, and ms/token with the cache against full recompute."""

from __future__ import annotations

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, fallback, measured_source, shown_steps, trace_rows, turn
from hooks.demos.figures import decode as decode_figures
from hooks.demos.figures.common import round_floats
from hooks.demos.measurements import DEFAULT_CONTEXTS, Measurements
from hooks.demos.readouts import trace_readouts
from hooks.demos.strings import Strings

ATTENTION_DECIMALS = 3  # shading steps of a chip; the heatmap rounds its cells the same way


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    sweep = m.sweep(contexts=block.options.get("contexts", DEFAULT_CONTEXTS))
    measured = measured_source(trace["machine"], trace["model"]["name"], strings)
    readouts = trace_readouts(trace)
    data, context = turn(trace, strings, cache_bytes=False)  # its cache view counts tokens
    for shown, step in zip(data["steps"], shown_steps(trace), strict=True):
        # The token (it joins the cache view), the step's own time (the prefill step's is its TTFT), its
        # candidates with the chosen one marked, and the weights its token gave every cached position.
        shown["token"] = {key: step["token"][key] for key in ("text", "partial", "bytes") if key in step["token"]}
        shown["ms"] = round(step["end_ms"] - step["start_ms"], 3)
        shown["top"] = [{"text": c["text"], "prob": c["prob"], "chosen": c["id"] == step["token"]["id"]}
                        for c in round_floats(step.get("top", []))]
        weights = (step.get("attention") or {}).get("weights") if step["phase"] == "decode" else None
        shown["attention"] = [round(w, ATTENTION_DECIMALS) for w in weights] if weights else None
    data = {**base(block, strings), **data,
            "figures": {"attention": decode_figures.attention(trace, strings, measured),
                        "cache_vs_recompute": decode_figures.cache_vs_recompute(sweep, strings, measured)}}
    rows = [(strings["decode.cached_at_start"], fmt.count(readouts["cached_tokens"], lang)),
            *trace_rows(readouts, strings)[2:]]
    table = {"headers": [strings["decode.axis_context"], strings["decode.legend_cached"],
                         strings["decode.legend_recompute"], strings["decode.speedup"]],
             "rows": [[fmt.count(p["context"], lang), fmt.ms(p["cached_ms_per_token"], lang),
                       fmt.ms(p["recompute_ms_per_token"], lang),
                       fmt.times(p["recompute_ms_per_token"] / p["cached_ms_per_token"], lang)]
                      for p in sweep["cache_vs_recompute"]]}
    return Demo(data, fallback(block, strings, measured=measured, rows=rows, table=table, **context), readouts)
