"""Numbers derived from traces, sweeps and projections — shared by demo JSON, fallbacks and prose."""

from __future__ import annotations

from typing import Any

from simulations.projection_data import load_data, precision_of


def trace_readouts(trace: dict[str, Any]) -> dict[str, float]:
    """TTFT, decode pace, token counts and KV-cache sizes of one recorded generation."""
    steps = trace["steps"]
    prefill = steps[0]
    timing = trace["timing"]  # each run's TTFT and mean step, their medians: what the ledger publishes
    decode_ms = timing["decode_ms_per_token"]["value"] if "decode_ms_per_token" in timing else 0.0
    prompt_tokens = len(trace["prompt"]["tokens"])
    roles = [token.get("role", "user") for token in trace["prompt"]["tokens"]]
    return {
        "prompt_tokens": prompt_tokens,
        "template_tokens": roles.count("template"),
        "system_tokens": roles.count("system"),
        "user_tokens": roles.count("user"),
        "prompt_chars": trace["prompt"].get("chars", len(trace["prompt"]["text"])),
        "answer_tokens": trace.get("answer_tokens", len(steps)),
        "ttft_ms": timing["ttft_ms"]["value"],
        "decode_ms_per_token": decode_ms,
        "tps": 1000.0 / decode_ms if decode_ms > 0 else 0.0,
        "cached_tokens": prefill["kv_tokens"],
        "kv_bytes": prefill["kv_bytes"],
        "kv_bytes_per_token": prefill["kv_bytes"] / max(prefill["kv_tokens"], 1),
        "kv_bytes_final": steps[-1]["kv_bytes"],
    }


def precision_name(dtype: str) -> str:
    """How a precision is written for readers (llama.cpp's names, from models.json): q4 → "Q4_0"."""
    return load_data("models")["precisions"][precision_of(dtype)]["name"]


def projection_label(projections: dict[str, Any], projection: str) -> str:
    """A projection id as readers see it: "llama-3.1-8b/h100-sxm/fp16" → "Llama 3.1 8B · H100 SXM · FP16"."""
    model, device, dtype = projection.split("/")
    return " · ".join([projections["models"][model]["name"], projections["devices"][device]["name"],
                       precision_name(dtype)])


def projection_rows(projections: dict[str, Any], wanted: str) -> list[dict[str, Any]]:
    """Rows of one model/device/dtype id, by increasing prompt length."""
    rows = [r for r in projections["projections"] if r["id"] == wanted]
    return sorted(rows, key=lambda r: r["prompt_tokens"])


def projection_at(projections: dict[str, Any], wanted: str, prompt_tokens: int) -> dict[str, Any] | None:
    return next((r for r in projection_rows(projections, wanted) if r["prompt_tokens"] == prompt_tokens), None)

