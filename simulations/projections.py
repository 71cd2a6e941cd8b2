"""Roofline projections of prefill and decode onto real accelerators.

Each phase takes as long as its slower ceiling allows:

    time = max(FLOPs / peak FLOP/s, bytes moved / memory bandwidth)

with FLOPs and bytes counted from the model's shapes and the device's figures
taken from vendor datasheets (simulations/data/accelerators.json). No
efficiency factors: a projection is the best case the hardware permits, and
`validate()` checks it against published llama.cpp measurements
(see simulations/PROJECTIONS.md for the tolerance and where it breaks down).

Conventions (kept deliberately simple and explicit):
- dtypes: `fp16` stores weights in 2 bytes; `q4` in 4.5 bits (llama.cpp Q4_0: 32 four-bit weights
  plus one fp16 scale per block). Both compute at the device's fp16 rate — q4 weights are
  dequantized to fp16 inside the matmul (weight-only quantization, W4A16).
- The KV cache is fp16 for both dtypes: 2 (K and V) × layers × KV heads × head dim × 2 bytes per token.
- Weights read per forward pass: every matrix that takes part in a matmul (the layers and the LM
  head), once. The embedding lookup reads only a few rows of an untied table and is not counted.
- Prefill produces the first token, so only the last position goes through the LM head.
  Attention is causal: T(T+1)/2 query-key pairs, as flash-attention kernels compute.
- A decode step with `context` tokens already cached reads them, writes one more, and attends
  over context + 1 positions. Activations are not counted: they stay on chip or are tiny.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

PROJECTION_DTYPES = ("fp16", "q4")
BITS_PER_WEIGHT = {"fp16": 16.0, "q4": 4.5}
COMPUTE_RATE_FOR = {"fp16": "fp16", "q4": "fp16"}  # which peak_flops entry each storage dtype computes at
KV_BYTES_PER_VALUE = 2  # fp16 KV cache
KV_REFERENCE_TOKENS = 4096  # "the KV cache at 4k tokens"
VALIDATION_RATIO_RANGE = (0.5, 1.05)  # measured ÷ projected tokens/s must fall in here; see PROJECTIONS.md


@cache
def load_data(name: str) -> dict[str, Any]:
    """One of the sourced data files in simulations/data/ ('accelerators' or 'models')."""
    text = resources.files("simulations").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def value(entry: Any) -> float:
    """The number of a sourced field ({"value": x, "source": ...}) or a plain number."""
    return float(entry["value"] if isinstance(entry, dict) else entry)


# --- counting, from a model's shapes -------------------------------------------------------------


def layer_params(m: dict[str, Any]) -> int:
    """Matmul weights in one decoder layer: Q, K, V, O projections and the SwiGLU MLP."""
    q_and_o = 2 * m["d_model"] * m["heads"] * m["head_dim"]
    k_and_v = 2 * m["d_model"] * m["kv_heads"] * m["head_dim"]
    mlp = 3 * m["d_model"] * m["d_ff"]
    return q_and_o + k_and_v + mlp


def lm_head_params(m: dict[str, Any]) -> int:
    return m["vocab"] * m["d_model"]


def params_from_shapes(m: dict[str, Any]) -> int:
    """All weights: layers, the embedding table and (if untied) a separate LM head. Norms are ignored."""
    embedding = m["vocab"] * m["d_model"]
    head = 0 if m["tied_embeddings"] else lm_head_params(m)
    return m["layers"] * layer_params(m) + embedding + head


def matmul_params(m: dict[str, Any]) -> int:
    """Weights read by one forward pass: every layer's matrices and the LM head."""
    return m["layers"] * layer_params(m) + lm_head_params(m)


def weight_bytes(m: dict[str, Any], dtype: str) -> float:
    return matmul_params(m) * BITS_PER_WEIGHT[dtype] / 8


def kv_bytes_per_token(m: dict[str, Any]) -> int:
    return 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * KV_BYTES_PER_VALUE


def attention_flops(m: dict[str, Any], query_key_pairs: int) -> int:
    """Scores (q·k) and weighted values (p·v): 2 FLOPs per multiply-add, head_dim each, per head and layer."""
    return 4 * m["layers"] * m["heads"] * m["head_dim"] * query_key_pairs


def prefill_flops(m: dict[str, Any], prompt_tokens: int) -> int:
    causal_pairs = prompt_tokens * (prompt_tokens + 1) // 2
    layers = 2 * m["layers"] * layer_params(m) * prompt_tokens
    return layers + attention_flops(m, causal_pairs) + 2 * lm_head_params(m)


def prefill_bytes(m: dict[str, Any], dtype: str, prompt_tokens: int) -> float:
    return weight_bytes(m, dtype) + prompt_tokens * kv_bytes_per_token(m)


def decode_flops(m: dict[str, Any], context: int) -> int:
    return 2 * matmul_params(m) + attention_flops(m, context + 1)


def decode_bytes(m: dict[str, Any], dtype: str, context: int) -> float:
    return weight_bytes(m, dtype) + (context + 1) * kv_bytes_per_token(m)


# --- the roofline ----------------------------------------------------------------------------------


def roofline_seconds(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> float:
    """The slower of computing `flops` at peak and moving `nbytes` at full bandwidth."""
    return max(flops / peak_flops, nbytes / bandwidth)


def bound(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> str:
    return "compute" if flops / peak_flops >= nbytes / bandwidth else "memory"


def device_peak_flops(device: dict[str, Any], dtype: str) -> float:
    return value(device["peak_flops"][COMPUTE_RATE_FOR[dtype]])


def prefill_seconds(m: dict[str, Any], device: dict[str, Any], dtype: str, prompt_tokens: int) -> float:
    return roofline_seconds(
        prefill_flops(m, prompt_tokens),
        prefill_bytes(m, dtype, prompt_tokens),
        device_peak_flops(device, dtype),
        value(device["bandwidth_bytes_per_s"]),
    )


def decode_seconds(m: dict[str, Any], device: dict[str, Any], dtype: str, context: int) -> float:
    return roofline_seconds(
        decode_flops(m, context),
        decode_bytes(m, dtype, context),
        device_peak_flops(device, dtype),
        value(device["bandwidth_bytes_per_s"]),
    )


# --- sources ---------------------------------------------------------------------------------------


def _source_ids(entry: Any) -> set[str]:
    """Every 'source' id named anywhere inside a data entry."""
    if isinstance(entry, dict):
        found = {entry["source"]} if isinstance(entry.get("source"), str) else set()
        for child in entry.values():
            found |= _source_ids(child)
        return found
    if isinstance(entry, list):
        return set().union(*(_source_ids(child) for child in entry)) if entry else set()
    return set()


def _cite(source_id: str, sources: dict[str, Any]) -> dict[str, str]:
    return {"id": source_id, "title": sources[source_id]["title"], "url": sources[source_id]["url"]}


def device_sources(device_id: str) -> list[dict[str, str]]:
    data = load_data("accelerators")
    return [_cite(s, data["sources"]) for s in sorted(_source_ids(data["devices"][device_id]))]


def model_sources(model_id: str) -> list[dict[str, str]]:
    data = load_data("models")
    return [_cite(s, data["sources"]) for s in sorted(_source_ids(data["models"][model_id]))]


# --- projections -----------------------------------------------------------------------------------


def project_one(model_id: str, device_id: str, dtype: str, prompt_tokens: int) -> dict[str, Any]:
    """TTFT, per-token decode latency, TPS and KV-cache size for one model × device × dtype × prompt length."""
    m = load_data("models")["models"][model_id]
    device = load_data("accelerators")["devices"][device_id]
    memory = value(device["memory_bytes"])
    peak, bandwidth = device_peak_flops(device, dtype), value(device["bandwidth_bytes_per_s"])
    kv_per_token = kv_bytes_per_token(m)
    p_flops, p_bytes = prefill_flops(m, prompt_tokens), prefill_bytes(m, dtype, prompt_tokens)
    d_flops, d_bytes = decode_flops(m, prompt_tokens), decode_bytes(m, dtype, prompt_tokens)
    decode_ms = 1000 * roofline_seconds(d_flops, d_bytes, peak, bandwidth)
    memory_needed = weight_bytes(m, dtype) + (prompt_tokens + 1) * kv_per_token
    return {
        "id": f"{model_id}/{device_id}/{dtype}",
        "model": model_id,
        "device": device_id,
        "dtype": dtype,
        "prompt_tokens": prompt_tokens,
        "ttft_ms": 1000 * roofline_seconds(p_flops, p_bytes, peak, bandwidth),
        "decode_ms_per_token": decode_ms,
        "tps": 1000 / decode_ms,
        "prefill_bound": bound(p_flops, p_bytes, peak, bandwidth),
        "decode_bound": bound(d_flops, d_bytes, peak, bandwidth),
        "prefill_flops": p_flops,
        "prefill_bytes": p_bytes,
        "decode_flops": d_flops,
        "decode_bytes": d_bytes,
        "weight_bytes": weight_bytes(m, dtype),
        "kv_bytes_per_token": kv_per_token,
        "kv_bytes": prompt_tokens * kv_per_token,
        "kv_share_of_memory": prompt_tokens * kv_per_token / memory,
        "kv_bytes_at_4k": KV_REFERENCE_TOKENS * kv_per_token,
        "kv_share_of_memory_at_4k": KV_REFERENCE_TOKENS * kv_per_token / memory,
        "memory_needed_bytes": memory_needed,
        "fits": memory_needed <= memory,
        "projected": True,
        "sources": device_sources(device_id) + model_sources(model_id),
    }


def default_models() -> list[str]:
    """The article's models: every entry of models.json not marked validation-only."""
    models = load_data("models")["models"]
    return [model_id for model_id, m in models.items() if not m.get("validation_only")]


def devices_summary(device_ids: list[str]) -> dict[str, Any]:
    devices = load_data("accelerators")["devices"]
    return {
        device_id: {
            "name": devices[device_id]["name"],
            "kind": devices[device_id]["kind"],
            "memory_bytes": value(devices[device_id]["memory_bytes"]),
            "bandwidth": value(devices[device_id]["bandwidth_bytes_per_s"]),
            "peak_flops": {dtype: device_peak_flops(devices[device_id], dtype) for dtype in PROJECTION_DTYPES},
            "sources": device_sources(device_id),
        }
        for device_id in device_ids
    }


def models_summary(model_ids: list[str]) -> dict[str, Any]:
    models = load_data("models")["models"]
    shape_keys = ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "vocab", "tied_embeddings")
    return {
        model_id: {
            "name": models[model_id]["name"],
            **{key: models[model_id][key] for key in shape_keys},
            "params": value(models[model_id]["params"]),
            "kv_bytes_per_token": kv_bytes_per_token(models[model_id]),
            "weight_bytes": {dtype: weight_bytes(models[model_id], dtype) for dtype in PROJECTION_DTYPES},
            "sources": model_sources(model_id),
        }
        for model_id in model_ids
    }


def project(
    models: list[str] | tuple[str, ...] | None = None,
    devices: list[str] | tuple[str, ...] | None = None,
    prompt_lengths: tuple[int, ...] = (128, 512, 2048, 4096),
) -> dict[str, Any]:
    """Roofline projections for every model × device × dtype × prompt length (combos that do not fit are kept, with fits: false)."""
    model_ids = list(models) if models is not None else default_models()
    device_ids = list(devices) if devices is not None else list(load_data("accelerators")["devices"])
    _check_known(model_ids, load_data("models")["models"], "model")
    _check_known(device_ids, load_data("accelerators")["devices"], "device")
    projections = [
        project_one(model_id, device_id, dtype, n)
        for model_id in model_ids
        for device_id in device_ids
        for dtype in PROJECTION_DTYPES
        for n in prompt_lengths
    ]
    return {
        "projections": projections,
        "devices": devices_summary(device_ids),
        "models": models_summary(model_ids),
        "validation": validate(),
        "method": (
            "Roofline: time = max(FLOPs / peak FLOP/s, bytes / bandwidth) per phase, no efficiency factors. "
            "TTFT = prefill of the prompt; decode_ms_per_token = one step with the prompt in the KV cache. "
            "fp16 weights 2 bytes, q4 4.5 bits (Q4_0), both computed at the fp16 tensor rate; fp16 KV cache. "
            "Dense (non-sparse) vendor peaks. Projected, not measured."
        ),
    }


def _check_known(ids: list[str], known: dict[str, Any], what: str) -> None:
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)} — allowed: {', '.join(known)}")


# --- validation against published measurements ---------------------------------------------------


def validate() -> list[dict[str, Any]]:
    """Each published llama.cpp result next to the projection for the same model, device, dtype and length."""
    data = load_data("accelerators")
    rows = []
    for result in data["published_results"]:
        m = load_data("models")["models"][result["model"]]
        device = data["devices"][result["device"]]
        n, dtype = result["context_tokens"], result["dtype"]
        if result["phase"] == "prefill":
            projected_tps = n / prefill_seconds(m, device, dtype, n)
        else:
            projected_tps = 1 / decode_seconds(m, device, dtype, n)
        measured_tps = float(result["tokens_per_s"])
        ratio = measured_tps / projected_tps
        rows.append(
            {
                "id": result["id"],
                "model": result["model"],
                "device": result["device"],
                "dtype": dtype,
                "phase": result["phase"],
                "test": result["test"],
                "measured_tps": measured_tps,
                "projected_tps": projected_tps,
                "ratio": ratio,
                "within_tolerance": VALIDATION_RATIO_RANGE[0] <= ratio <= VALIDATION_RATIO_RANGE[1],
                "source": _cite(result["source"], data["sources"]),
            }
        )
    return rows
