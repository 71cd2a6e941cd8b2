"""What each chapter reads, built from the ledger alone (`ledger.measure`): the prompt-length sweep, the
roofline, the batching chapter's steps and the weight formats. A quantity several chapters print is one
ledger entry, so it has one value wherever it appears (the formats' F32 row is the sweep's; batching's
B = 1 row is the decode step at its context); the shapes are the schemas the demos' builders read
(simulations/README.md).
"""

from __future__ import annotations

from typing import Any

from . import cost
from .batch import KNEE_SLOWDOWN, measured_knee, weights_only_knee
from .projections import KNEE_CONTEXTS, projected_knees
from .quantized import BYTES_PER_WEIGHT
from .roofline import phase_point, ridge_intensity


def _value(ledger: dict[str, Any], key: str) -> float:
    return ledger["entries"][key]["value"]


def _samples(ledger: dict[str, Any], key: str) -> list[float]:
    return ledger["entries"][key]["samples"]


def peaks(ledger: dict[str, Any]) -> dict[str, Any]:
    """The two ceilings every utilisation on the site divides by."""
    c = ledger["ceilings"]
    return {"peak_gflops": c["gemm_gflops"]["value"], "peak_gbps": c["read_gbps"]["value"],
            "repeats": len(c["read_gbps"]["samples"]), "stream_bytes": c["stream_bytes"],
            "weights_stream_bytes": c["weights_stream_bytes"],
            "last_level_cache_bytes": c["last_level_cache_bytes"]}


def machine(ledger: dict[str, Any]) -> dict[str, Any]:
    """A result's `machine`: where the ledger was measured, and its ceilings."""
    return {**ledger["machine"], **peaks(ledger)}


def _shape(ledger: dict[str, Any]) -> cost.ModelShape:
    return cost.ModelShape.from_summary(ledger["model"])


def attention_share(ledger: dict[str, Any], phase: str, fmt: str, tokens: int) -> float:
    """The share of a phase's measured time its attention took (the observer seam's split)."""
    total = f"ttft/{fmt}/{tokens}" if phase == "prefill" else f"decode/{fmt}/{tokens}"
    return _value(ledger, f"{phase}_attention/{fmt}/{tokens}") / _value(ledger, total)


def sweep(ledger: dict[str, Any]) -> dict[str, Any]:
    """TTFT and the decode step at each prompt length, and the cached step against recomputing."""
    plan, shape = ledger["plan"], _shape(ledger)
    points = []
    for n in plan["prompt_lengths"]:
        ttft, decode = _value(ledger, f"ttft/f32/{n}"), _value(ledger, f"decode/f32/{n}")
        points.append({"prompt_tokens": n, "ttft_ms": ttft, "decode_ms_per_token": decode, "tps": 1000 / decode,
                       "prefill_tokens_per_s": n / ttft * 1000, "repeats": ledger["entries"][f"ttft/f32/{n}"]["repeats"],
                       "decode_steps": plan["decode_steps"], "ttft_ms_runs": _samples(ledger, f"ttft/f32/{n}"),
                       "kv_bytes": int(cost.kv_bytes_per_token(shape) * n),
                       "prefill_attention_ms": _value(ledger, f"prefill_attention/f32/{n}"),
                       "decode_attention_ms": _value(ledger, f"decode_attention/f32/{n}")})
    tokens = {t["context"]: t for t in ledger["recompute_tokens"]}
    comparisons = []
    for c in plan["contexts"]:
        cached, recompute = _value(ledger, f"decode/f32/{c}"), _value(ledger, f"recompute/f32/{c}")
        comparisons.append({"context": c, "cached_ms_per_token": cached, "recompute_ms_per_token": recompute,
                            "speedup": recompute / cached, "cached_steps": plan["decode_steps"], "recompute_steps": 1,
                            "cached_tokens": [tokens[c]["cached_token"]],
                            "recompute_tokens": [tokens[c]["recomputed_token"]],
                            "identical_tokens": tokens[c]["identical"]})
    return {"prompt_lengths": points, "cache_vs_recompute": comparisons,
            "identical_tokens": all(c["identical_tokens"] for c in comparisons),
            "machine": ledger["machine"], "model": ledger["model"],
            "settings": {"decode_steps": plan["decode_steps"], "repeats": plan["rounds"], "sampling": "greedy"}}


def _phases(ledger: dict[str, Any], n: int, pk: dict[str, Any]) -> dict[str, Any]:
    shape = _shape(ledger)
    prefill, decode = cost.prefill_cost(shape, n), cost.decode_cost(shape, n)
    return {"prefill": phase_point(_value(ledger, f"ttft/f32/{n}"), prefill.flops, prefill.bytes, pk),
            "decode": phase_point(_value(ledger, f"decode/f32/{n}"), decode.flops, decode.bytes, pk)}


def roofline(ledger: dict[str, Any], prompt_tokens: int = 512) -> dict[str, Any]:
    """Prefill and decode on this machine's roofline, at `prompt_tokens` and at each measured prompt length."""
    pk = peaks(ledger)
    lengths = sorted(ledger["plan"]["prompt_lengths"])
    by_length = {n: _phases(ledger, n, pk) for n in sorted({prompt_tokens, *lengths})}
    return {"machine": machine(ledger), "ridge_intensity": ridge_intensity(pk), "prompt_tokens": prompt_tokens,
            "prefill": by_length[prompt_tokens]["prefill"], "decode": by_length[prompt_tokens]["decode"],
            "points": [{"prompt_tokens": n, **by_length[n]} for n in lengths if n <= 2048 or n == prompt_tokens],
            "model": ledger["model"]}


def batch(ledger: dict[str, Any]) -> dict[str, Any]:
    """Batched decode and its floor, the knee, chunked prefill and the two users (schema prefill-decode-batch/2)."""
    plan, shape, pk = ledger["plan"], _shape(ledger), peaks(ledger)
    context = plan["batch_context"]
    mach = {"peak_flops": pk["peak_gflops"] * 1e9, "bandwidth": pk["peak_gbps"] * 1e9}
    mach["ridge"] = mach["peak_flops"] / mach["bandwidth"]
    rows = []
    for b in plan["batch_sizes"]:
        step_ms = _value(ledger, f"batch/f32/{context}/{b}")
        c = cost.decode_batch_cost(shape, b, context)
        seconds = step_ms / 1000
        rows.append({"batch": b, "step_ms": step_ms, "tokens_per_s": b / step_ms * 1000, "ms_per_token": step_ms,
                     "flops": c.flops, "bytes": c.bytes, "intensity": c.intensity, "weight_bytes": c.weight_bytes,
                     "kv_bytes": c.kv_read_bytes + c.kv_written_bytes,
                     "floor_ms": 1000 * cost.roofline_seconds(c.flops, c.bytes, mach["peak_flops"], mach["bandwidth"]),
                     "compute_utilization": c.flops / seconds / mach["peak_flops"],
                     "bandwidth_utilization": c.bytes / seconds / mach["bandwidth"]})
    decode = _value(ledger, f"decode/f32/{context}")
    chunked = [{"decode_rows": 1, "chunk_tokens": chunk,
                "step_ms": decode if chunk == 0 else _value(ledger, f"mixed/f32/{context}/{chunk}"),
                "separate_ms": decode if chunk == 0 else decode + _value(ledger, f"ttft/f32/{chunk}")}
               for chunk in plan["chunk_sizes"]]
    two = ledger["two_users"]
    return {
        "schema": "prefill-decode-batch/2", "model": ledger["model"]["name"], "context_tokens": context,
        "machine": mach, "batch_sizes": rows, "kv_bytes_per_user": cost.kv_bytes_per_token(shape) * context,
        "kernels": ledger["machine"].get("kernels"),
        "knee": {"measured_batch": measured_knee(rows),
                 "predicted_batch": cost.first_compute_bound_batch(shape, context, mach["ridge"]),
                 "weights_only_batch": weights_only_knee(mach["ridge"], cost.FLOAT32_BYTES),
                 "intensity_limit": cost.batch_intensity_limit(shape, context),
                 "bytes_per_weight": cost.FLOAT32_BYTES, "slowdown": KNEE_SLOWDOWN},
        "projected_knees": projected_knees(tuple(sorted({context, *KNEE_CONTEXTS}))),
        "chunked": chunked,
        "two_users": {"prompt_tokens": two["prompt_tokens"], "chunk_tokens": two["chunk_tokens"],
                      **{mode: {k: two[mode][k] for k in ("stall_ms", "ttft_ms", "events")}
                         for mode in ("unchunked", "chunked")}},
    }


def formats(ledger: dict[str, Any]) -> dict[str, Any]:
    """Each format's TTFT, decode step, place on the roofline and accuracy (schema prefill-decode-formats/1);
    F32's figures are the sweep's."""
    plan, shape, pk = ledger["plan"], _shape(ledger), peaks(ledger)
    lengths, context = sorted(plan["format_prompt_lengths"]), plan["format_context"]
    f32_decode = _value(ledger, f"decode/f32/{context}")
    rows = []
    for fmt, held in ledger["weights"].items():
        bpw, extra = held["bytes_per_weight"], ledger["formats"][fmt]
        decode_ms = _value(ledger, f"decode/{fmt}/{context}")
        step = cost.decode_cost(shape, context, bytes_per_weight=bpw)
        decode = phase_point(decode_ms, step.flops, step.bytes, pk)
        prefills = {}
        for n in lengths:
            c = cost.prefill_cost(shape, n, bytes_per_weight=bpw)
            prefills[n] = phase_point(_value(ledger, f"ttft/{fmt}/{n}"), c.flops, c.bytes, pk)
        main = prefills[context] if context in prefills else prefills[lengths[-1]]
        entry = ledger["entries"]
        rows.append({
            "name": fmt.upper(), "format": fmt, "bits_per_weight": 8 * bpw,
            "nominal_bits_per_weight": 8 * BYTES_PER_WEIGHT[fmt],
            "weight_bytes": int(bpw * shape.params), "source": held["source"],
            "ttft_ms": {str(n): prefills[n]["ms"] for n in lengths},
            "ttft_spread_ms": {str(n): [entry[f"ttft/{fmt}/{n}"]["low"], entry[f"ttft/{fmt}/{n}"]["high"]]
                               for n in lengths},
            "decode_ms_per_token": decode_ms,
            "decode_spread_ms": [entry[f"decode/{fmt}/{context}"]["low"], entry[f"decode/{fmt}/{context}"]["high"]],
            "products_ms": _value(ledger, f"products/{fmt}"),
            "products_spread_ms": [entry[f"products/{fmt}"]["low"], entry[f"products/{fmt}"]["high"]],
            "tps": 1000 / decode_ms, "bytes_per_step": decode["bytes"],
            "bandwidth_utilization": decode["bandwidth_utilization"],
            "compute_utilization": main["compute_utilization"],
            "decode_speedup": f32_decode / decode_ms,
            "prefill_ratio": {str(n): _value(ledger, f"ttft/f32/{n}") / prefills[n]["ms"] for n in lengths},
            "decode": decode, "cached_product": extra["cached_product"], "dequantize_ms": extra["dequantize_ms"],
            "prefill": [{"prompt_tokens": n, **prefills[n]} for n in lengths],
            "top1_agreement": extra["top1_agreement"], "mean_kl": extra["mean_kl"], "max_kl": extra["max_kl"],
        })
    return {"schema": "prefill-decode-formats/1", "model": ledger["model"], "machine": machine(ledger),
            "ridge_intensity": ridge_intensity(pk), "prompt_lengths": lengths, "context_tokens": context,
            "decode_steps": plan["decode_steps"], "repeats": plan["rounds"],
            "accuracy": {**ledger["accuracy"], "reference": ledger["weights"]["f32"]["source"]},
            "formats": rows, "activation_digits": ledger.get("activation_digits", 0)}
