"""One builder per demo kind: block + measurements + strings → demo JSON data and fallback context.

The JSON follows schema "prefill-decode-demo/1" (see notes in docs/zh/demo-strings.yml and the team
contract); the fallback context feeds the kind's template in overrides/pd/.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hooks.demos import device as device_demo
from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.figures import decode as decode_figures
from hooks.demos.figures import prefill as prefill_figures
from hooks.demos.figures import recap as recap_figures
from hooks.demos.figures import roofline as roofline_figures
from hooks.demos.figures import timeline as timeline_figures
from hooks.demos.figures.common import round_floats
from hooks.demos.measurements import DEFAULT_CONTEXTS, DEFAULT_PROMPT_LENGTHS, Measurements
from hooks.demos.readouts import (
    projection_at,
    projection_id,
    projection_label,
    projection_rows,
    source_names,
    trace_readouts,
)
from hooks.demos.strings import Strings

SCHEMA = "prefill-decode-demo/1"
DEFAULT_PROJECTION = "llama-3.1-8b/h100-sxm/fp16"
KV_REFERENCE_TOKENS = 4096


@dataclass
class Demo:
    """What a kind builder returns: the JSON for the browser and the context of the static fallback."""

    data: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)


def measured_source(machine: dict[str, Any], model_name: str, strings: Strings) -> str:
    return strings.format("common.measured_on", cpu=machine.get("cpu", "?"), cores=machine.get("cores", "?"),
                          date=machine.get("date", "?"), model=model_name)


def projected_source(rows: list[dict[str, Any]], strings: Strings) -> str | None:
    names = source_names([s for row in rows for s in row.get("sources", [])])
    return strings.format("common.projected_from", sources="; ".join(names)) if names else None


def _base(block: DemoBlock, strings: Strings, measured: str, projected: str | None) -> dict[str, Any]:
    return {"schema": SCHEMA, "kind": block.kind, "lang": strings.lang,
            "strings": strings.section("common", block.kind), "note": block.note,
            "source": {"measured": measured, "projected": projected}, "readouts": {}, "figures": {}}


# Per-step fields the browser reads, by kind: the rest (FLOP and byte counters, token ids, the KV slice
# that the prefill heatmap already carries) stays in the build's cache, not in the page's download.
STEP_FIELDS = ("index", "phase", "start_ms", "end_ms", "kv_tokens", "kv_bytes", "token")
# The decode demo's attention weights travel once, as the rows of its attention figure.
BROWSER_STEP_FIELDS = {"conversation": STEP_FIELDS, "prefill": STEP_FIELDS, "decode": (*STEP_FIELDS, "top")}
CLOCK_DECIMALS = 3  # recorded times keep their order exactly (4 significant digits could tie two tokens)


def browser_trace(trace: dict[str, Any], kind: str) -> dict[str, Any]:
    """The recorded trace as the browser gets it: what the kind's player shows, floats rounded."""
    fields = BROWSER_STEP_FIELDS[kind]
    steps = []
    for step in trace["steps"]:
        kept = {key: step[key] for key in fields if key in step}
        for clock in ("start_ms", "end_ms"):
            if clock in kept:
                kept[clock] = round(kept[clock], CLOCK_DECIMALS)
        if "top" in kept:
            kept["top"] = round_floats(kept["top"])
        steps.append(kept)
    return {**{key: value for key, value in trace.items() if key not in ("steps", "kv_slice")}, "steps": steps}


def prompt_summary(trace: dict[str, Any], strings: Strings) -> str | None:
    """One sentence saying how many of the prompt's tokens the chat template and system prompt add
    (None when the model read the prompt alone)."""
    r, lang = trace_readouts(trace), strings.lang
    if r["template_tokens"] + r["system_tokens"] == 0:
        return None
    counts = {"total": fmt.count(r["prompt_tokens"], lang), "template": fmt.count(r["template_tokens"], lang),
              "user": fmt.count(r["user_tokens"], lang)}
    if not r["system_tokens"]:
        return strings.format("common.roles_summary_no_system", **counts)
    default = trace["settings"].get("system_prompt_is_default")
    return strings.format("common.roles_summary", **counts, system=fmt.count(r["system_tokens"], lang),
                          system_name=strings["common.system_name_default" if default else "common.system_name"])


def answer_notes(trace: dict[str, Any], strings: Strings, *, caveat: bool = True) -> dict[str, str | None]:
    """What the reader is told under the answer: why it stops (a cut-off answer is not finished), and
    that a small model's answer may be wrong."""
    stopped = None
    if trace["stop_reason"] == "max_new_tokens":
        limit = trace["settings"]["max_new_tokens"]
        stopped = (strings["common.first_token_only"] if limit == 1
                   else strings.format("common.stopped_at_limit", n=fmt.count(limit, strings.lang)))
    return {"stopped": stopped,
            "caveat": strings.format("common.small_model", model=trace["model"]["name"]) if caveat else None}


def answer_parts(trace: dict[str, Any]) -> list[dict[str, str]]:
    """The recorded answer as the fallback shows it: [{"text"}] runs, and [{"bytes"}] in place of each
    run of tokens that hold an incomplete UTF-8 character (which decoding turns into U+FFFD)."""
    shown = [step["token"] for step in trace["steps"] if step.get("token")][: trace["answer_tokens"]]
    groups, run = [], []
    for token in [*shown, None]:
        if token is not None and "\ufffd" in token["text"] and token.get("bytes"):
            run.append(token["bytes"])
        elif run:
            groups.append(" ".join(run))
            run = []
    parts: list[dict[str, str]] = []
    for n, text in enumerate(re.split(r"\ufffd+", trace["answer"])):
        if n:
            parts.append({"bytes": groups[n - 1]} if n - 1 < len(groups) else {"text": "\ufffd"})
        if text:
            parts.append({"text": text})
    return parts


def _prompt(trace: dict[str, Any], strings: Strings) -> dict[str, Any]:
    return {"text": trace["prompt"]["text"], "tokens": trace["prompt"]["tokens"],
            "summary": prompt_summary(trace, strings)}


def _turn_context(trace: dict[str, Any], strings: Strings, *, caveat: bool = True) -> dict[str, Any]:
    """What every fallback with a prompt and an answer shows besides the readouts."""
    return {"prompt": trace["prompt"]["text"], "answer": trace["answer"], "answer_parts": answer_parts(trace),
            "prompt_summary": prompt_summary(trace, strings), "notes": answer_notes(trace, strings, caveat=caveat)}


def _title(kind: str, strings: Strings) -> str:
    """The demo's caption, placeholders filled (the timeline's names its answer length)."""
    if kind == "timeline":
        return strings.format("timeline.title", tokens=timeline_figures.ANSWER_TOKENS)
    return strings[f"{kind}.title"]


def _context(block: DemoBlock, data: dict[str, Any], strings: Strings, rows: list[tuple[str, str]],
             **extra: Any) -> dict[str, Any]:
    return {"title": _title(block.kind, strings), "note": block.note, "rows": rows, "table": None,
            "source_measured": data["source"]["measured"], "source_projected": data["source"]["projected"],
            "strings": strings, **extra}


def _trace_rows(r: dict[str, float], strings: Strings, lang: str) -> list[tuple[str, str]]:
    return [(strings["common.prompt_tokens"], fmt.count(r["prompt_tokens"], lang)),
            (strings["common.ttft"], fmt.ms(r["ttft_ms"], lang)),
            (strings["common.answer_tokens"], fmt.count(r["answer_tokens"], lang)),
            (strings["common.ms_per_token"], fmt.ms(r["decode_ms_per_token"], lang)),
            (strings["common.tps"], fmt.tps(r["tps"], lang)),
            (strings["common.kv_cache"], fmt.nbytes(r["kv_bytes_final"], lang))]


def conversation(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    data = _base(block, strings, measured_source(trace["machine"], trace["model"]["name"], strings), None)
    readouts = trace_readouts(trace)
    data.update(prompt=_prompt(trace, strings), trace=browser_trace(trace, "conversation"), readouts=readouts,
                answer_notes=answer_notes(trace, strings))
    rows = _trace_rows(readouts, strings, strings.lang)
    return Demo(data, _context(block, data, strings, rows, **_turn_context(trace, strings)))


def prefill(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    sweep = m.sweep(block.options.get("prompt_lengths", DEFAULT_PROMPT_LENGTHS))
    wanted = block.options.get("projection", DEFAULT_PROJECTION)
    projections = m.projections()
    reference = projection_at(projections, wanted, KV_REFERENCE_TOKENS)
    measured = measured_source(trace["machine"], trace["model"]["name"], strings)
    data = _base(block, strings, measured, projected_source([reference] if reference else [], strings))
    readouts = trace_readouts(trace)
    if reference:
        readouts["projection"] = {**reference, "id": wanted, "label": projection_label(projections, wanted),
                                  "model_name": projections["models"][reference["model"]]["name"],
                                  "device_name": projections["devices"][reference["device"]]["name"]}
    # The sweep reaches the browser as the prefill_time figure; the projection as readouts.projection.
    data.update(prompt=_prompt(trace, strings), trace=browser_trace(trace, "prefill"), readouts=readouts,
                answer_notes=answer_notes(trace, strings, caveat=False))
    data["figures"] = {"kv_heatmap": prefill_figures.kv_heatmap(trace, strings, measured),
                       "prefill_time": prefill_figures.prefill_time(sweep, trace["model"], strings, measured)}
    rows = [(strings["common.prompt_chars"], fmt.count(readouts["prompt_chars"], lang)),
            (strings["common.prompt_tokens"], fmt.count(readouts["prompt_tokens"], lang)),
            (strings["common.ttft"], fmt.ms(readouts["ttft_ms"], lang)),
            (strings["common.kv_cache"], fmt.nbytes(readouts["kv_bytes"], lang)),
            (strings["prefill.kv_per_token"], fmt.nbytes(readouts["kv_bytes_per_token"], lang))]
    if reference:
        rows.append((strings.format("prefill.projected_kv", id=projection_label(projections, wanted),
                                    tokens=fmt.count(KV_REFERENCE_TOKENS, lang)),
                     f"{fmt.nbytes(reference['kv_bytes_at_4k'], lang)} · "
                     f"{fmt.percent(reference['kv_share_of_memory_at_4k'], lang)}"))
    table = {"headers": [strings["common.axis_prompt_tokens"], strings["common.ttft"]],
             "rows": [[fmt.count(p["prompt_tokens"], lang), fmt.ms(p["ttft_ms"], lang)] for p in sweep["prompt_lengths"]]}
    return Demo(data, _context(block, data, strings, rows, tokens=trace["prompt"]["tokens"], table=table,
                               **_turn_context(trace, strings, caveat=False)))


def decode(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    trace = m.trace(block.prompt, block.options["max_new_tokens"], block.options["chat"])
    sweep = m.sweep(contexts=block.options.get("contexts", DEFAULT_CONTEXTS))
    measured = measured_source(trace["machine"], trace["model"]["name"], strings)
    data = _base(block, strings, measured, None)
    readouts = trace_readouts(trace)
    data.update(prompt=_prompt(trace, strings), trace=browser_trace(trace, "decode"), readouts=readouts,
                answer_notes=answer_notes(trace, strings))
    data["figures"] = {"attention": decode_figures.attention(trace, strings, measured),
                       "cache_vs_recompute": decode_figures.cache_vs_recompute(sweep, strings, measured)}
    rows = [(strings["decode.cached_at_start"], fmt.count(readouts["cached_tokens"], lang)),
            *_trace_rows(readouts, strings, lang)[2:]]
    table = {"headers": [strings["decode.axis_context"], strings["decode.legend_cached"],
                         strings["decode.legend_recompute"], strings["decode.speedup"]],
             "rows": [[fmt.count(p["context"], lang), fmt.ms(p["cached_ms_per_token"], lang),
                       fmt.ms(p["recompute_ms_per_token"], lang),
                       fmt.times(p["recompute_ms_per_token"] / p["cached_ms_per_token"], lang)]
                      for p in sweep["cache_vs_recompute"]]}
    return Demo(data, _context(block, data, strings, rows, table=table, **_turn_context(trace, strings)))


def source_labels(projections: dict[str, Any], ids: list[str], strings: Strings) -> dict[str, str]:
    """Readable names of the timeline's sources: the build machine, then each projection, marked so."""
    projected = strings["common.projected_label"]
    return {"measured": strings["common.measured_label"],
            **{pid: f"{projection_label(projections, pid)} ({projected})" for pid in ids}}


def _phase_readout(ttft_ms: float, decode_ms: float) -> dict[str, float]:
    return {"ttft_ms": ttft_ms, "decode_ms_per_token": decode_ms, "tps": 1000.0 / decode_ms if decode_ms else 0.0}


def timeline(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    lengths = block.options.get("prompt_lengths", list(DEFAULT_PROMPT_LENGTHS))
    sweep = m.sweep(lengths)
    projections = m.projections(lengths)
    wanted = block.options.get("projections", [DEFAULT_PROJECTION])
    rows_by_id = {pid: projection_rows(projections, pid) for pid in wanted}
    readouts: dict[str, Any] = {"measured": {str(p["prompt_tokens"]): _phase_readout(p["ttft_ms"], p["decode_ms_per_token"])
                                             for p in sweep["prompt_lengths"]}}
    for pid, rows in rows_by_id.items():
        readouts[pid] = {str(r["prompt_tokens"]): _phase_readout(r["ttft_ms"], r["decode_ms_per_token"]) for r in rows}
    measured = measured_source(sweep["machine_info"], m.simulator.model_name, strings)
    projected = projected_source([r for rows in rows_by_id.values() for r in rows], strings)
    data = _base(block, strings, measured, projected)
    labels = source_labels(projections, wanted, strings)
    data.update(readouts=readouts, sources=labels)  # the sweep and projections reach the browser as readouts and frames
    data["figures"] = {"timeline": timeline_figures.timeline(readouts, strings, measured)}
    table = {"headers": [strings["timeline.source"], strings["common.axis_prompt_tokens"], strings["common.ttft"],
                         strings["common.ms_per_token"], strings["common.tps"]],
             "rows": [[labels[sid], fmt.count(int(n), lang),
                       fmt.ms(v["ttft_ms"], lang), fmt.ms(v["decode_ms_per_token"], lang), fmt.tps(v["tps"], lang)]
                      for sid, by_n in readouts.items() for n, v in by_n.items()]}
    return Demo(data, _context(block, data, strings, [], table=table))


def roofline_points(result: dict[str, Any]) -> dict[int, dict[str, dict[str, float]]]:
    """The measured phases by prompt length: {prompt_tokens: {"prefill": point, "decode": point}}."""
    points: dict[int, dict[str, dict[str, float]]] = {}
    for point in result.get("points") or []:
        points.setdefault(point["prompt_tokens"], {})[point["phase"]] = point
    if not points:
        points[result["prompt_tokens"]] = {"prefill": result["prefill"], "decode": result["decode"]}
    return points


def projected_phases(row: dict[str, Any], device: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Roofline utilisation of a projection: the limiting ceiling is 100%, the other its share of time."""
    peak, bandwidth = device["peak_flops"][row["dtype"]], device["bandwidth"]
    phases = {}
    for phase in ("prefill", "decode"):
        compute_s, memory_s = row[f"{phase}_flops"] / peak, row[f"{phase}_bytes"] / bandwidth
        seconds = max(compute_s, memory_s)
        phases[phase] = {"compute_utilization": compute_s / seconds, "bandwidth_utilization": memory_s / seconds,
                         "intensity": row[f"{phase}_flops"] / row[f"{phase}_bytes"],
                         "gflops": row[f"{phase}_flops"] / seconds / 1e9, "gbps": row[f"{phase}_bytes"] / seconds / 1e9}
    return phases


def roofline(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    result = m.roofline()
    peaks = result["machine"]
    projections = m.projections()
    at = result["prompt_tokens"]
    chosen = [r for pid in block.options.get("projections", []) if (r := projection_at(projections, pid, at))]
    measured = measured_source(result["machine_info"], m.simulator.model_name, strings)
    projected = projected_source(chosen, strings)
    util_rows = [{"id": "measured", "label": strings["common.measured_label"], "prefill": result["prefill"],
                  "decode": result["decode"]}]
    readouts: dict[str, Any] = {"measured": {"peaks": {"peak_gflops": peaks["peak_gflops"],
                                                       "peak_gbps": peaks["peak_gbps"]},
                                             "prefill": result["prefill"], "decode": result["decode"]}}
    for row in chosen:
        phases = projected_phases(row, projections["devices"][row["device"]])
        util_rows.append({"id": projection_id(row), "label": projection_label(projections, projection_id(row)),
                          **phases})
        readouts[projection_id(row)] = {"device": projections["devices"][row["device"]]["name"], **phases}
    data = _base(block, strings, measured, projected)
    # the roofline result reaches the browser as readouts and figures; `sources` names each readout
    data.update(readouts=readouts, sources=source_labels(projections, [row["id"] for row in util_rows[1:]], strings))
    both = " · ".join(filter(None, [measured, projected]))
    data["figures"] = {"roofline": roofline_figures.roofline(peaks, roofline_points(result), strings, measured),
                       "utilization": roofline_figures.utilization(util_rows, strings, both)}
    rows = [(strings["roofline.peak_compute"], fmt.with_unit(peaks["peak_gflops"], "GFLOP/s", lang)),
            (strings["roofline.peak_bandwidth"], fmt.with_unit(peaks["peak_gbps"], "GB/s", lang))]
    table = {"headers": [strings["timeline.source"], strings["common.phase"], strings["roofline.axis_intensity"],
                         strings["roofline.cat_compute"], strings["roofline.cat_bandwidth"]],
             "rows": [[row["label"], strings[f"common.phase_{ph}"], fmt.number(row[ph]["intensity"], lang),
                       fmt.percent(row[ph]["compute_utilization"], lang),
                       fmt.percent(row[ph]["bandwidth_utilization"], lang)]
                      for row in util_rows for ph in ("prefill", "decode")]}
    return Demo(data, _context(block, data, strings, rows, table=table))


def recap(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    lang = strings.lang
    sweep = m.sweep(block.options.get("prompt_lengths", DEFAULT_PROMPT_LENGTHS))
    measured = measured_source(sweep["machine_info"], m.simulator.model_name, strings)
    data = _base(block, strings, measured, None)
    data.update(readouts={"measured": {str(p["prompt_tokens"]): _phase_readout(
        p["ttft_ms"], p["decode_ms_per_token"]) for p in sweep["prompt_lengths"]}})
    data["figures"] = {"recap": recap_figures.recap(sweep, strings, measured)}
    table = {"headers": [strings["common.axis_prompt_tokens"], strings["common.ttft"], strings["common.tps"]],
             "rows": [[fmt.count(p["prompt_tokens"], lang), fmt.ms(p["ttft_ms"], lang), fmt.tps(p["tps"], lang)]
                      for p in sweep["prompt_lengths"]]}
    return Demo(data, _context(block, data, strings, [], table=table))


BUILDERS: dict[str, Callable[[DemoBlock, Measurements, Strings], Demo]] = {
    "conversation": conversation, "prefill": prefill, "decode": decode,
    "timeline": timeline, "roofline": roofline, "recap": recap, "device": device_demo.device,
}


def _batching(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    from hooks.demos.builders import batching  # it imports this module's helpers

    return batching.build(block, m, strings)


BUILDERS["batching"] = _batching
