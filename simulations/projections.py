"""Roofline projections of prefill and decode onto real accelerators: a bound, not a measurement.

time = max(FLOPs / peak FLOP/s, bytes moved / memory bandwidth) per phase, with FLOPs and bytes from the
one cost model (`cost.py`) at the device's bits per weight and an fp16 KV cache, and the device's figures
from vendor datasheets (`projection_data.py`). No efficiency factors: real software stays under the bound;
`validate()` sets published llama.cpp measurements beside theirs. The method, its conventions (precisions,
compute rates, what is counted) and its limits: simulations/PROJECTIONS.md.
"""

from __future__ import annotations

import statistics
from functools import cache
from typing import Any

from . import cost
from . import projection_data as sourced
from .cost import ModelShape, roofline_seconds

KV_BYTES_PER_VALUE = 2  # fp16 KV cache
KV_REFERENCE_TOKENS = 4096  # "the KV cache at 4k tokens"
DEVICE_CLASSES = ("datacenter GPU", "consumer GPU", "Apple GPU", "NPU")
LONGEST_PROMPT_SEARCHED = 1 << 24  # a prefill still memory-bound here never becomes compute-bound in practice


# --- counting: the one cost model (simulations/cost.py), at the device's widths ---------------------


def weight_bytes(m: dict[str, Any], bits: float) -> float:
    """Bytes of every weight held in memory at `bits` per weight (an untied LM head counted apart)."""
    return cost.weight_bytes(ModelShape.from_models_json(m), bits / 8)


def kv_bytes_per_token(m: dict[str, Any]) -> float:
    return cost.kv_bytes_per_token(ModelShape.from_models_json(m), KV_BYTES_PER_VALUE)


def phase_cost(m: dict[str, Any], bits: float, phase: str, tokens: int) -> cost.PassCost:
    """FLOPs and bytes of a prefill of `tokens` prompt tokens, or of one decode step with `tokens` already
    cached, at `bits` per weight and an fp16 KV cache."""
    of = cost.prefill_cost if phase == "prefill" else cost.decode_cost
    return of(ModelShape.from_models_json(m), tokens, bytes_per_weight=bits / 8, bytes_per_kv_value=KV_BYTES_PER_VALUE)


# --- the roofline ----------------------------------------------------------------------------------


def bound(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> str:
    return "compute" if flops / peak_flops >= nbytes / bandwidth else "memory"


def ceilings(device: dict[str, Any], dtype: str, *, pessimistic: bool = False) -> tuple[float, float]:
    """(peak FLOP/s at this precision, memory bandwidth); `pessimistic` takes uncertain figures' low ends."""
    return (sourced.device_peak_flops(device, dtype, pessimistic=pessimistic),
            sourced.device_bandwidth(device, pessimistic=pessimistic))


def phase_seconds(passed: cost.PassCost, device: dict[str, Any], dtype: str, *, pessimistic: bool = False) -> float:
    """The roofline's time for a pass on `device` at this precision."""
    return roofline_seconds(passed.flops, passed.bytes, *ceilings(device, dtype, pessimistic=pessimistic))


def crossover_tokens(m: dict[str, Any], device: dict[str, Any], dtype: str, bits: float) -> int | None:
    """Smallest prompt length whose prefill is compute-bound on `device` (`cost.first_compute_bound_prompt`);
    None if it is still memory-bound at LONGEST_PROMPT_SEARCHED tokens."""
    peak, bandwidth = ceilings(device, dtype)
    return cost.first_compute_bound_prompt(lambda tokens: phase_cost(m, bits, "prefill", tokens), peak / bandwidth,
                                           LONGEST_PROMPT_SEARCHED)


# --- projections -----------------------------------------------------------------------------------


@cache  # the same for every prompt length of a projection
def prefill_crossover_tokens(model_id: str, device_id: str, dtype: str) -> int | None:
    """The smallest prompt length at which this model's prefill is compute-bound on this device."""
    m = sourced.load_data("models")["models"][model_id]
    device = sourced.load_data("accelerators")["devices"][device_id]
    return crossover_tokens(m, device, dtype, sourced.bits_per_weight(model_id, dtype))


def projection_id(model_id: str, device_id: str, dtype: str) -> str:
    """The one spelling of a projection's id, as demo blocks name it: "llama-3.1-8b/h100-sxm/fp16"."""
    return f"{model_id}/{device_id}/{dtype}"


def project_one(model_id: str, device_id: str, dtype: str, prompt_tokens: int) -> dict[str, Any]:
    """TTFT, per-token decode latency, TPS and KV-cache size for one model × device × dtype × prompt length."""
    m = sourced.load_data("models")["models"][model_id]
    device = sourced.load_data("accelerators")["devices"][device_id]
    bits = sourced.bits_per_weight(model_id, dtype)
    memory = sourced.value(device["memory_bytes"])
    kv_per_token = kv_bytes_per_token(m)
    prefill, decode = phase_cost(m, bits, "prefill", prompt_tokens), phase_cost(m, bits, "decode", prompt_tokens)
    ttft_ms, decode_ms = 1000 * phase_seconds(prefill, device, dtype), 1000 * phase_seconds(decode, device, dtype)
    # The pessimistic end of an uncertain device's figures (equal to the bound when nothing is uncertain).
    ttft_worst = 1000 * phase_seconds(prefill, device, dtype, pessimistic=True)
    decode_worst = 1000 * phase_seconds(decode, device, dtype, pessimistic=True)
    memory_needed = weight_bytes(m, bits) + (prompt_tokens + 1) * kv_per_token
    return {
        "id": projection_id(model_id, device_id, dtype),
        "model": model_id,
        "device": device_id,
        "dtype": dtype,
        "precision": sourced.precision_of(dtype),
        "bits_per_weight": bits,
        "prompt_tokens": prompt_tokens,
        "ttft_ms": ttft_ms,
        "decode_ms_per_token": decode_ms,
        "tps": 1000 / decode_ms,
        "uncertain": sourced.is_uncertain(device),
        "ttft_ms_range": [ttft_ms, ttft_worst],
        "decode_ms_range": [decode_ms, decode_worst],
        "tps_range": [1000 / decode_worst, 1000 / decode_ms],
        "prefill_bound": bound(prefill.flops, prefill.bytes, *ceilings(device, dtype)),
        "decode_bound": bound(decode.flops, decode.bytes, *ceilings(device, dtype)),
        "prefill_crossover_tokens": prefill_crossover_tokens(model_id, device_id, dtype),
        "prefill_flops": prefill.flops,
        "prefill_bytes": prefill.bytes,
        "decode_flops": decode.flops,
        "decode_bytes": decode.bytes,
        "weight_bytes": weight_bytes(m, bits),
        "kv_bytes_per_token": kv_per_token,
        "kv_bytes": prompt_tokens * kv_per_token,
        "kv_share_of_memory": prompt_tokens * kv_per_token / memory,
        "kv_bytes_at_4k": KV_REFERENCE_TOKENS * kv_per_token,
        "kv_share_of_memory_at_4k": KV_REFERENCE_TOKENS * kv_per_token / memory,
        "memory_needed_bytes": memory_needed,
        "fits": memory_needed <= memory,
        "projected": True,
        "sources": (sourced.device_sources(device_id) + sourced.model_sources(model_id)
                    + sourced.precision_sources(model_id, dtype)),
    }


def devices_summary(device_ids: list[str]) -> dict[str, Any]:
    devices = sourced.load_data("accelerators")["devices"]
    return {
        device_id: {
            "name": device["name"],
            "kind": device["kind"],
            "class": device["class"],
            "uncertain": sourced.is_uncertain(device),
            "memory_bytes": sourced.value(device["memory_bytes"]),
            "bandwidth": sourced.device_bandwidth(device),
            "bandwidth_low": sourced.device_bandwidth(device, pessimistic=True),
            "peak_flops": {dtype: sourced.device_peak_flops(device, dtype) for dtype in sourced.projection_dtypes()},
            "sources": sourced.device_sources(device_id),
        }
        for device_id, device in ((device_id, devices[device_id]) for device_id in device_ids)
    }


def models_summary(model_ids: list[str]) -> dict[str, Any]:
    models = sourced.load_data("models")["models"]
    shape_keys = ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "vocab", "tied_embeddings")
    return {
        model_id: {
            "name": models[model_id]["name"],
            **{key: models[model_id][key] for key in shape_keys},
            "params": sourced.value(models[model_id]["params"]),
            "kv_bytes_per_token": kv_bytes_per_token(models[model_id]),
            "weight_bytes": {dtype: weight_bytes(models[model_id], sourced.bits_per_weight(model_id, dtype))
                             for dtype in sourced.projection_dtypes()},
            "sources": sourced.model_sources(model_id),
        }
        for model_id in model_ids
    }


def project(models: list[str] | tuple[str, ...] | None = None, devices: list[str] | tuple[str, ...] | None = None,
            prompt_lengths: tuple[int, ...] = (128, 512, 2048, 4096)) -> dict[str, Any]:
    """Roofline projections for every model × device × dtype × prompt length (combos that do not fit are kept, with fits: false)."""
    model_ids = list(models) if models is not None else sourced.default_models()
    device_ids = list(devices) if devices is not None else list(sourced.load_data("accelerators")["devices"])
    sourced.check_known(model_ids, sourced.load_data("models")["models"], "model")
    sourced.check_known(device_ids, sourced.load_data("accelerators")["devices"], "device")
    projections = [
        project_one(model_id, device_id, dtype, n)
        for model_id in model_ids
        for device_id in device_ids
        for dtype in sourced.projection_dtypes()
        for n in prompt_lengths
    ]
    validation = validate()
    return {
        "projections": projections,
        "devices": devices_summary(device_ids),
        "models": models_summary(model_ids),
        "validation": validation,
        "validation_summary": validation_summary(validation),
        "method": (
            "Roofline: time = max(FLOPs / peak FLOP/s, bytes / bandwidth) per phase, no efficiency factors: "
            "a bound real software stays under. TTFT = prefill of the prompt; decode_ms_per_token = one step "
            "with the prompt in the KV cache. Weights at their precision's bits per weight (a real GGUF file's "
            "where known); fp16 computes at the dense fp16 tensor rate, quantized weights at the int8 rate "
            "where the device has one; fp16 KV cache. Dense (non-sparse) vendor peaks. Projected, not measured."
        ),
    }


# --- published measurements beside their bounds ---------------------------------------------------


def validate() -> list[dict[str, Any]]:
    """Each published llama.cpp result beside the roofline bound for the same model, device, precision and length."""
    data = sourced.load_data("accelerators")
    models = sourced.load_data("models")
    rows = []
    for result in data["published_results"]:
        sourced.check_published(result)
        model_id, device_id, dtype = result["model"], result["device"], result["precision"]
        m, device = models["models"][model_id], data["devices"][device_id]
        bits = sourced.bits_per_weight(model_id, dtype)
        n, phase = result["context_tokens"], result["phase"]
        # A prefill row counts the prompt's tokens per second, a decode row one token per step.
        bound_tps = (n if phase == "prefill" else 1) / phase_seconds(phase_cost(m, bits, phase, n), device, dtype)
        published_tps = float(result["tokens_per_s"])
        rows.append(
            {
                "id": result["id"],
                "model": model_id,
                "model_name": m["name"],
                "device": device_id,
                "device_name": device["name"],
                "device_class": device["class"],
                "dtype": dtype,
                "precision_name": models["precisions"][sourced.precision_of(dtype)]["name"],
                "bits_per_weight": bits,
                "phase": phase,
                "test": result["test"],
                "context_tokens": n,
                "published_tps": published_tps,
                "bound_tps": bound_tps,
                "fraction": published_tps / bound_tps,
                "software": result["software"],
                "date": result["date"],
                "note": result.get("note", ""),
                "anomalous": bool(result.get("anomalous", False)),  # kept in the table, left out of the summary
                "source": sourced.cite(result["source"], data["sources"]),
            }
        )
    return rows


def validation_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per device class and phase: how many published rows, and the min / median / max fraction of the bound;
    a row flagged anomalous in the data is left out (and counted in `left_out`)."""
    summary = []
    for device_class in DEVICE_CLASSES:
        for phase in ("prefill", "decode"):
            rows_here = [r for r in rows if r["device_class"] == device_class and r["phase"] == phase]
            fractions = [r["fraction"] for r in rows_here if not r.get("anomalous")]
            summary.append({
                "device_class": device_class,
                "phase": phase,
                "rows": len(fractions),
                "left_out": len(rows_here) - len(fractions),
                "min": min(fractions) if fractions else None,
                "median": statistics.median(fractions) if fractions else None,
                "max": max(fractions) if fractions else None,
            })
    return summary


KNEE_CONTEXTS = (512, 4096)  # the batching chapter's contexts for the projected knees


def projected_knees(contexts: tuple[int, ...] = KNEE_CONTEXTS) -> list[dict[str, Any]]:
    """Where batched decode would turn compute-bound on each projected device, from its spec sheet's ridge
    point (projected, not measured): the weights-only batch (ridge × bytes per weight ÷ 2), and at each of
    `contexts` the batch with every user's fp16 KV cache counted (None: never, as the step's intensity
    cannot pass `intensity_limit`)."""
    models, devices = sourced.load_data("models")["models"], sourced.load_data("accelerators")["devices"]
    knees = []
    for model_id in sourced.default_models():
        shape = ModelShape.from_models_json(models[model_id])
        for device_id, device in devices.items():
            for dtype in sourced.PROJECTION_DTYPES:
                peak_flops, bandwidth = ceilings(device, dtype)
                ridge = peak_flops / bandwidth
                widths = {"bytes_per_weight": sourced.bits_per_weight(model_id, dtype) / 8,
                          "bytes_per_kv_value": KV_BYTES_PER_VALUE}
                knees.append({
                    "id": projection_id(model_id, device_id, dtype), "model": model_id, "device": device_id,
                    "dtype": dtype, "bytes_per_weight": round(widths["bytes_per_weight"], 4),
                    "ridge": round(ridge, 1),
                    "weights_only_batch": round(ridge * widths["bytes_per_weight"] / 2, 1),
                    "by_context": [{"context": context,
                                    "predicted_batch": cost.first_compute_bound_batch(shape, context, ridge, **widths),
                                    "intensity_limit": round(cost.batch_intensity_limit(shape, context, **widths), 1)}
                                   for context in contexts],
                    "projected": True})
    return knees
