"""The bytes-per-weight section's figures in the prose (`{{ formats.… }}`), from the formats measurement
(simulations/formats.py, schema "prefill-decode-formats/1").

Each name gives one `Figure`, as every other figure name does; hooks/demos/figure_resolver.py routes the
names here. A format is named by its argument: `f32`, `f16`, `q8_0`, or `q4` for the model file's own 4-bit
format (Q4_1 for SmolLM2; the same name stays valid for a model stored in Q4_0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hooks.demos import formatting as fmt
from hooks.demos.figure_names import Figure

FORMAT_ARGS = ("f32", "f16", "q8_0", "q4")


def format_row(result: dict[str, Any], arg: str | None) -> dict[str, Any]:
    """The measured row of format `arg` (`q4`: the 4-bit one); a LookupError naming the allowed ones."""
    rows = result["formats"]
    if arg == "q4":
        row = next((r for r in rows if r["format"] in ("q4_0", "q4_1")), None)
    else:
        row = next((r for r in rows if r["format"] == arg), None)
    if row is None:
        raise LookupError(f"@{arg} is not a measured format (allowed: {', '.join(FORMAT_ARGS)}; measured: "
                          f"{', '.join(r['format'] for r in rows)})")
    return row


def prefill_at(row: dict[str, Any], tokens: int) -> dict[str, Any]:
    """The format's prefill point (TTFT and its place on the roofline) at `tokens` prompt tokens."""
    point = next((p for p in row["prefill"] if p["prompt_tokens"] == tokens), None)
    if point is None:
        raise LookupError(f"the formats measurement has no prefill of {tokens} tokens "
                          f"(measured: {', '.join(str(p['prompt_tokens']) for p in row['prefill'])})")
    return point


def reference_tokens(result: dict[str, Any]) -> int:
    """The prompt length the section compares prefill at: the decode's context when measured, else the longest."""
    lengths = result["prompt_lengths"]
    return result["context_tokens"] if result["context_tokens"] in lengths else lengths[-1]


def byte_shrink(result: dict[str, Any], row: dict[str, Any]) -> float:
    """How many times fewer bytes a decode step reads in this format than in F32 (the cost model's bytes)."""
    return format_row(result, "f32")["bytes_per_step"] / row["bytes_per_step"]


def figure(key: str, arg: str | None, result: dict[str, Any], lang: str) -> Figure:
    """The figure `formats.<key>[@FORMAT]` of the formats measurement."""

    def number(value: float, show: Callable[[float, str], str]) -> Figure:
        return Figure(float(value), show(value, lang), "measured")

    tokens = reference_tokens(result)
    whole: dict[str, Callable[[], Figure]] = {
        "context_tokens": lambda: number(result["context_tokens"], fmt.count),
        "prompt_tokens": lambda: number(tokens, fmt.count),
        "accuracy_steps": lambda: number(result["accuracy"]["steps"], fmt.count),
        "four_bit": lambda: Figure(None, format_row(result, "q4")["name"], "measured"),
        # how the decode kernels multiplied the blocks: 0 in float32, 3 by integers (each activation's 8-bit digits)
        "activation_digits": lambda: number(result["activation_digits"], fmt.count),
    }
    if key in whole:
        if arg is not None:
            raise LookupError(f"formats.{key} takes no @argument")
        return whole[key]()
    if arg not in FORMAT_ARGS:
        raise LookupError(f"formats.{key} needs @{'|'.join(FORMAT_ARGS)}, not @{arg}")
    row, f32 = format_row(result, arg), format_row(result, "f32")
    prefill, f32_prefill = prefill_at(row, tokens), prefill_at(f32, tokens)
    shrink = byte_shrink(result, row)
    speedup = f32["decode_ms_per_token"] / row["decode_ms_per_token"]
    other_ms = max(0.0, row["decode_ms_per_token"] - row["products_ms"])  # a noisy run can time the products longer
    return {
        "name": lambda: Figure(None, row["name"], "measured"),
        "bits": lambda: Figure(float(row["bits_per_weight"]), fmt.number(row["bits_per_weight"], lang, 1), "measured"),
        "weight_mb": lambda: number(row["weight_bytes"], fmt.megabytes),
        "step_mb": lambda: number(row["bytes_per_step"], fmt.megabytes),
        "byte_shrink": lambda: number(shrink, ratio_text),
        "decode_ms": lambda: number(row["decode_ms_per_token"], fmt.ms),
        # a step's matrix products alone, back to back; the rest of the step's time, and its share of the step
        "products_ms": lambda: number(row["products_ms"], fmt.ms),
        "other_ms": lambda: number(other_ms, fmt.ms),
        "other_share": lambda: number(other_ms / row["decode_ms_per_token"], fmt.percent),
        "tps": lambda: number(row["tps"], fmt.tps),
        "decode_speedup": lambda: number(speedup, ratio_text),
        # decode's speed-up as a share of the bytes' shrink: 100% when the step is as many times faster
        "decode_share": lambda: number(speedup / shrink, fmt.percent),
        "ttft_ms": lambda: number(prefill["ms"], fmt.ms),
        "prefill_ratio": lambda: number(f32_prefill["ms"] / prefill["ms"], ratio_text),
        "bandwidth_util": lambda: number(row["decode"]["bandwidth_utilization"], fmt.percent),
        "compute_util": lambda: number(prefill["compute_utilization"], fmt.percent),
        "decode_intensity": lambda: Figure(float(row["decode"]["intensity"]),
                                           fmt.with_unit(row["decode"]["intensity"], "FLOP/byte", lang), "measured"),
        # the format's kernel with one matrix's bytes already in the CPU's caches, beside their reading from memory
        "cached_mb": lambda: number(row["cached_product"]["bytes"], fmt.megabytes),
        "cached_us": lambda: number(row["cached_product"]["us"], microseconds),
        "cached_read_us": lambda: number(row["cached_product"]["read_us"], microseconds),
        "cached_vs_read": lambda: number(row["cached_product"]["us"] / row["cached_product"]["read_us"], ratio_text),
        # a prompt's extra step in the format: every layer matrix turned back into float32 once
        "dequantize_ms": lambda: number(row["dequantize_ms"], fmt.ms),
        "top1": lambda: number(row["top1_agreement"], fmt.percent),
        "kl": lambda: Figure(float(row["mean_kl"]), kl_text(row["mean_kl"], lang), "measured"),
    }[key]()


def ratio_text(ratio: float, lang: str) -> str:
    """A ratio between formats: two decimals below 1 (a slower format's 0.94×, not 0.9×; a step that lost to
    load 0.03×, not 0.0×), as every other "times" figure above."""
    if ratio < 1:
        return f"{fmt.number(ratio, lang, 2)}{fmt.number_word('numbers.times', lang)}"
    return fmt.times(ratio, lang)


def microseconds(value: float, lang: str) -> str:
    return fmt.with_unit(value, "µs", lang)


def kl_text(nats: float, lang: str) -> str:
    """A mean KL divergence in nats, with enough digits to tell a tiny one from zero."""
    if nats == 0:
        return "0"
    if nats < 1e-4:  # below what 64 positions can tell apart from rounding: no exponent for the reader to decode
        return "< 0.0001"
    return fmt.number(nats, lang, 4 if nats < 0.01 else 3 if nats < 0.1 else 2)
