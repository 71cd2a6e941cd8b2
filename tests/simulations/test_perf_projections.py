"""Projections: closed-form roofline maths, sourced data files, and the published-result check."""

from __future__ import annotations

from typing import Any

import pytest

from simulations import projections as pj

REQUIRED_DEVICES = {"h100-sxm", "a100-80gb", "rtx-4090", "l4", "apple-m3-max-gpu", "apple-ane-m3-max"}
REQUIRED_MODELS = {"llama-3.1-8b", "qwen2.5-7b", "smollm2-135m"}
LLAMA_8B = pj.load_data("models")["models"]["llama-3.1-8b"]
H100 = pj.load_data("accelerators")["devices"]["h100-sxm"]


def numbers_without_source(node: Any, path: str = "", sourced: bool = False) -> list[str]:
    """Paths of numeric leaves whose enclosing object (or an ancestor) names no 'source'."""
    if isinstance(node, dict):
        sourced = sourced or "source" in node
        return [p for key, child in node.items() for p in numbers_without_source(child, f"{path}.{key}", sourced)]
    if isinstance(node, list):
        return [p for i, child in enumerate(node) for p in numbers_without_source(child, f"{path}[{i}]", sourced)]
    is_number = isinstance(node, int | float) and not isinstance(node, bool)
    return [path] if is_number and not sourced else []


def source_ids(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["source"]} if isinstance(node.get("source"), str) else set()
        return own.union(*(source_ids(child) for child in node.values()))
    if isinstance(node, list):
        return set().union(*(source_ids(child) for child in node))
    return set()


@pytest.mark.parametrize("name, section", [("accelerators", "devices"), ("models", "models")])
def test_every_number_in_the_data_files_carries_a_known_source(name: str, section: str) -> None:
    data = pj.load_data(name)
    assert numbers_without_source(data[section]) == []
    assert numbers_without_source(data.get("published_results", [])) == []
    assert source_ids(data) <= set(data["sources"])
    for source in data["sources"].values():
        assert source["title"] and source["url"].startswith("https://")


def test_data_files_cover_the_required_devices_and_models() -> None:
    assert set(pj.load_data("accelerators")["devices"]) >= REQUIRED_DEVICES
    assert set(pj.load_data("models")["models"]) >= REQUIRED_MODELS


@pytest.mark.parametrize("model_id", sorted(pj.load_data("models")["models"]))
def test_parameter_count_from_shapes_matches_the_published_count(model_id: str) -> None:
    m = pj.load_data("models")["models"][model_id]
    assert pj.params_from_shapes(m) == pytest.approx(pj.value(m["params"]), rel=0.01)


def test_kv_bytes_per_token_is_k_and_v_for_every_layer_and_kv_head_in_fp16() -> None:
    # Llama 3.1 8B: 2 × 32 layers × 8 KV heads × 128 dims × 2 bytes = 128 KiB per token
    assert pj.kv_bytes_per_token(LLAMA_8B) == 131072


def test_q4_weights_take_four_and_a_half_bits_and_fp16_sixteen() -> None:
    assert pj.weight_bytes(LLAMA_8B, "q4") / pj.weight_bytes(LLAMA_8B, "fp16") == pytest.approx(4.5 / 16)


def test_prefill_flops_are_two_per_weight_per_token_plus_causal_attention_plus_one_lm_head_row() -> None:
    m = {"layers": 1, "d_model": 4, "heads": 2, "kv_heads": 1, "head_dim": 2, "d_ff": 8, "vocab": 10,
         "tied_embeddings": True}
    per_layer = 2 * 4 * 4 + 2 * 4 * 2 + 3 * 4 * 8  # Q and O, K and V, gate/up/down
    t = 3
    attention = 4 * 1 * 2 * 2 * (t * (t + 1) // 2)
    assert pj.prefill_flops(m, t) == 2 * per_layer * t + attention + 2 * 10 * 4


def test_decode_reads_every_weight_and_the_whole_cache() -> None:
    context = 1000
    expected = pj.weight_bytes(LLAMA_8B, "fp16") + (context + 1) * pj.kv_bytes_per_token(LLAMA_8B)
    assert pj.decode_bytes(LLAMA_8B, "fp16", context) == expected


def test_roofline_time_is_the_slower_of_compute_and_memory() -> None:
    assert pj.roofline_seconds(flops=10, nbytes=1, peak_flops=5, bandwidth=1) == 2
    assert pj.roofline_seconds(flops=1, nbytes=10, peak_flops=5, bandwidth=1) == 10


def test_batch_one_decode_is_memory_bound_and_long_prefill_compute_bound_on_an_h100() -> None:
    row = pj.project_one("llama-3.1-8b", "h100-sxm", "fp16", 2048)
    assert row["decode_bound"] == "memory"
    assert row["prefill_bound"] == "compute"
    weights_ms = 1000 * pj.weight_bytes(LLAMA_8B, "fp16") / pj.value(H100["bandwidth_bytes_per_s"])
    assert row["decode_ms_per_token"] == pytest.approx(weights_ms, rel=0.05)
    assert row["tps"] == pytest.approx(1000 / row["decode_ms_per_token"])


def test_project_covers_every_model_device_dtype_and_prompt_length_with_contract_keys() -> None:
    out = pj.project()
    rows = out["projections"]
    lengths = {128, 512, 2048, 4096}
    combos = {(r["model"], r["device"], r["dtype"], r["prompt_tokens"]) for r in rows}
    assert combos == {
        (m, d, t, n) for m in REQUIRED_MODELS for d in out["devices"] for t in ("fp16", "q4") for n in lengths
    }
    keys = {"model", "device", "dtype", "prompt_tokens", "ttft_ms", "decode_ms_per_token", "tps",
            "kv_bytes_per_token", "kv_bytes_at_4k", "kv_share_of_memory_at_4k", "projected", "sources", "fits"}
    for row in rows:
        assert keys <= set(row)
        assert row["projected"] is True
        assert row["sources"] and all(s["url"] for s in row["sources"])


def test_ttft_grows_with_prompt_length_and_at_least_doubles_once_compute_bound() -> None:
    ttft = [pj.project_one("qwen2.5-7b", "l4", "fp16", n)["ttft_ms"] for n in (128, 512, 2048, 4096)]
    assert ttft == sorted(ttft)
    assert ttft[3] > 2 * ttft[2]


def test_fits_compares_weights_plus_kv_cache_with_device_memory() -> None:
    for row in pj.project(models=["llama-3.1-8b"])["projections"]:
        memory = pj.value(pj.load_data("accelerators")["devices"][row["device"]]["memory_bytes"])
        needed = row["weight_bytes"] + (row["prompt_tokens"] + 1) * row["kv_bytes_per_token"]
        assert row["memory_needed_bytes"] == needed
        assert row["fits"] is (needed <= memory)


def test_unknown_model_or_device_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="allowed: .*h100-sxm"):
        pj.project(devices=["tpu-v9"])


def test_projection_is_within_tolerance_of_every_published_measurement() -> None:
    rows = pj.validate()
    assert len({r["device"] for r in rows}) >= 2 and len(rows) >= 4
    low, high = pj.VALIDATION_RATIO_RANGE
    for row in rows:
        assert low <= row["ratio"] <= high, row
