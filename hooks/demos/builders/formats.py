"""The `formats` demo (bottleneck chapter): the same model in F32, F16, Q8_0 and its 4-bit format, from the
formats measurement (simulations/formats.py, schema "prefill-decode-formats/1"): each format's decode and
prefill point on this machine's roofline, its speed beside its accuracy, and, labelled projected, the article's
GPUs in the same formats beside published llama.cpp runs (the projections' validation rows).

The JSON's `formats` object (schema: hooks/demos/demo.schema.json, `$defs/formats_view`) carries every point,
read-out and table cell as the browser shows it; the static fallback renders the same tables.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.blocks import DemoBlock
from hooks.demos.builders.common import Demo, base, cited, fallback, measured_source
from hooks.demos.figures import formats as format_figures
from hooks.demos.format_figures import byte_shrink, kl_text, prefill_at, ratio_text, reference_tokens
from hooks.demos.measurements import Measurements
from hooks.demos.strings import Strings
from hooks.language.vocabulary import load_vocabulary

PUBLISHED_DTYPES = ("fp16", "q8_0", "q4_0")  # the formats llama.cpp's published runs share with this section


def point(phase: dict[str, Any]) -> dict[str, float]:
    return {key: phase[key] for key in ("ms", "intensity", "gflops", "compute_utilization", "bandwidth_utilization")}


def format_rows(result: dict[str, Any], strings: Strings) -> list[dict[str, Any]]:
    """One entry per format, F32 first: its points, its figures and its read-outs as shown."""
    lang, tokens = strings.lang, reference_tokens(result)
    f32 = result["formats"][0]
    f32_prefill = prefill_at(f32, tokens)["ms"]
    rows = []
    for frame, row in enumerate(result["formats"]):
        prefill = prefill_at(row, tokens)
        speedup = f32["decode_ms_per_token"] / row["decode_ms_per_token"]
        prefill_ratio = f32_prefill / prefill["ms"]
        shrink = byte_shrink(result, row)
        readouts = [
            [strings["formats.bits"], fmt.number(row["bits_per_weight"], lang, 1)],
            [strings["formats.weights"], fmt.megabytes(row["weight_bytes"], lang)],
            [strings["formats.bytes_shrink"], ratio_text(shrink, lang)],
            [strings["formats.tps"], strings.format("formats.vs_f32", value=fmt.tps(row["tps"], lang),
                                                    ratio=ratio_text(speedup, lang))],
            [strings.format("formats.ttft", tokens=fmt.count(tokens, lang)),
             time_against_f32(prefill["ms"], f32_prefill, row["format"] == "f32", strings)],
            [strings["formats.bandwidth_util"], fmt.percent(row["decode"]["bandwidth_utilization"], lang)],
            [strings["formats.top1"], fmt.percent(row["top1_agreement"], lang)],
            [strings["formats.kl"], kl_text(row["mean_kl"], lang)],
        ]
        rows.append({"id": row["format"], "name": row["name"], "frame": frame,
                     "bits_per_weight": row["bits_per_weight"], "weight_bytes": row["weight_bytes"],
                     "tps": row["tps"], "decode_speedup": speedup, "bytes_shrink": shrink, "prefill_ratio": prefill_ratio,
                     "top1_agreement": row["top1_agreement"], "mean_kl": row["mean_kl"],
                     "decode": point(row["decode"]), "prefill": point(prefill), "readouts": readouts})
    return rows


def time_against_f32(ms: float, f32_ms: float, is_f32: bool, strings: Strings) -> str:
    """A time beside F32's as a time is compared: so much slower or faster, or within the measurement noise."""
    lang, value = strings.lang, fmt.ms(ms, strings.lang)
    if is_f32:
        return value
    noise = load_vocabulary().noise or 0.0
    change = ms / f32_ms - 1
    if abs(change) <= noise:
        return strings.format("formats.time_same", value=value, noise=fmt.percent(noise, lang))
    key = "formats.time_slower" if change > 0 else "formats.time_faster"
    return strings.format(key, value=value, pct=fmt.percent(abs(change), lang))


def published(projections: dict[str, Any], strings: Strings) -> dict[str, Any]:
    """The projected bounds beside published llama.cpp runs, for every model and device with published decode
    and prefill runs in at least two of FP16, Q8_0 and Q4_0 (anomalous runs left out): tok/s and × FP16."""
    lang = strings.lang
    runs: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for row in projections.get("validation", []):
        if row["dtype"] in PUBLISHED_DTYPES and not row.get("anomalous"):
            runs[(row["model"], row["device"])][row["dtype"]].setdefault(row["phase"], row)
    rows, sources = [], []
    for (_, _), by_dtype in runs.items():
        complete = [d for d in PUBLISHED_DTYPES if {"decode", "prefill"} <= set(by_dtype.get(d, {}))]
        if len(complete) < 2 or "fp16" not in complete:
            continue
        base_row = by_dtype["fp16"]
        for dtype in complete:
            decode, prefill = by_dtype[dtype]["decode"], by_dtype[dtype]["prefill"]
            rows.append([f"{decode['device_name']} · {decode['model_name']}", decode["precision_name"],
                         fmt.number(decode["bits_per_weight"], lang, 1),
                         fmt.tps(decode["bound_tps"], lang), fmt.tps(decode["published_tps"], lang),
                         ratio_text(decode["published_tps"] / base_row["decode"]["published_tps"], lang),
                         fmt.tps(prefill["published_tps"], lang),
                         ratio_text(prefill["published_tps"] / base_row["prefill"]["published_tps"], lang)])
            sources += [run["source"] for run in (decode, prefill) if run["source"].get("title")]
    return {"caption": strings["formats.published_caption"],
            "headers": [strings["formats.hardware"], strings["formats.format"], strings["formats.bits"],
                        strings["formats.decode_bound"], strings["formats.decode_published"],
                        strings["formats.vs_fp16"], strings["formats.prefill_published"], strings["formats.vs_fp16"]],
            "rows": rows, "sources": sources}


def build(block: DemoBlock, m: Measurements, strings: Strings) -> Demo:
    """The formats demo's JSON and its static fallback (the formats measured here; the published runs)."""
    lang = strings.lang
    result = m.formats()
    machine = m.roofline()["machine"]  # the formats were measured with the roofline's peaks
    measured = measured_source(machine, m.simulator.model_name, strings)
    rows = format_rows(result, strings)
    table = published(m.projections(), strings)
    projected = cited(table["sources"], strings, "formats.published_from")
    tokens = reference_tokens(result)
    data = {**base(block, strings), "formats": {
        "machine": {"peak_gflops": machine["peak_gflops"], "peak_gbps": machine["peak_gbps"],
                    "ridge": machine["peak_gflops"] / machine["peak_gbps"]},
        "context_tokens": result["context_tokens"], "prompt_tokens": tokens,
        "accuracy_steps": result["accuracy"]["steps"],
        "rows": rows,
        "published": {key: table[key] for key in ("caption", "headers", "rows")},
    }, "figures": {"roofline": format_figures.roofline(machine, rows, strings, measured)}}
    measured_table = {
        "caption": strings.format("formats.measured_caption", context=fmt.count(result["context_tokens"], lang),
                                  tokens=fmt.count(tokens, lang), steps=fmt.count(result["accuracy"]["steps"], lang)),
        "headers": [strings["formats.format"], *(label for label, _ in rows[0]["readouts"])],
        "rows": [[row["name"], *(value for _, value in row["readouts"])] for row in rows]}
    return Demo(data, fallback(block, strings, measured=measured, projected=projected, measured_table=measured_table,
                               published_table=data["formats"]["published"]))

