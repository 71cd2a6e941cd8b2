"""Projections: closed-form roofline maths, sourced data files, and the published-result check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simulations import projection_data
from simulations import projections as pj
from simulations.cost import ModelShape

REQUIRED_DEVICES = {"h100-sxm", "h100-pcie", "a100-80gb", "a100-80gb-pcie", "rtx-4090", "rtx-3090", "l4",
                    "apple-m1-max-gpu", "apple-m2-ultra-gpu", "apple-m3-max-gpu", "apple-m4-gpu", "apple-m4-max-gpu",
                    "apple-ane-m3-max"}
REQUIRED_MODELS = {"llama-3.1-8b", "llama-2-7b", "qwen2.5-7b", "llama-3-70b", "smollm2-135m"}
REQUIRED_PRECISIONS = {"fp16", "q8_0", "q4_0", "q4_k_m"}
ARTICLE_MODELS = set(projection_data.default_models())
LLAMA_8B = projection_data.load_data("models")["models"]["llama-3.1-8b"]
H100 = projection_data.load_data("accelerators")["devices"]["h100-sxm"]
TOY_MODEL = {"layers": 1, "d_model": 4, "heads": 2, "kv_heads": 1, "head_dim": 2, "d_ff": 8, "vocab": 10,
             "tied_embeddings": True}


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


@pytest.mark.parametrize("name, sections", [("accelerators", ("devices", "published_results")),
                                            ("models", ("models", "precisions", "gguf_files"))])
def test_every_number_in_the_data_files_carries_a_known_source(name: str, sections: tuple[str, ...]) -> None:
    data = projection_data.load_data(name)
    for section in sections:
        assert numbers_without_source(data[section]) == [], section
    assert source_ids(data) <= set(data["sources"])
    for source in data["sources"].values():
        assert source["title"] and source["url"].startswith("https://")


def test_data_files_cover_the_required_devices_models_and_precisions() -> None:
    assert set(projection_data.load_data("accelerators")["devices"]) >= REQUIRED_DEVICES
    assert set(projection_data.load_data("models")["models"]) >= REQUIRED_MODELS
    assert set(projection_data.load_data("models")["precisions"]) >= REQUIRED_PRECISIONS
    assert {d["class"] for d in projection_data.load_data("accelerators")["devices"].values()} == set(pj.DEVICE_CLASSES)


@pytest.mark.parametrize("model_id", sorted(projection_data.load_data("models")["models"]))
def test_parameter_count_from_shapes_matches_the_published_count(model_id: str) -> None:
    m = projection_data.load_data("models")["models"][model_id]
    assert ModelShape.from_models_json(m).params == pytest.approx(projection_data.value(m["params"]), rel=0.01)


def test_kv_bytes_per_token_is_k_and_v_for_every_layer_and_kv_head_in_fp16() -> None:
    # Llama 3.1 8B: 2 × 32 layers × 8 KV heads × 128 dims × 2 bytes = 128 KiB per token
    assert pj.kv_bytes_per_token(LLAMA_8B) == 131072


def test_precisions_take_their_real_bits_per_weight_and_q4_is_an_alias_of_q4_0() -> None:
    assert projection_data.nominal_bits_per_weight("fp16") == 16
    assert projection_data.nominal_bits_per_weight("q8_0") == 8.5
    assert projection_data.nominal_bits_per_weight("q4_0") == projection_data.nominal_bits_per_weight("q4") == 4.5
    assert projection_data.nominal_bits_per_weight("q4_k_m") == pytest.approx(4.9, abs=0.05)
    with pytest.raises(ValueError, match="allowed: fp16, q8_0, q4_0, q4_k_m, q4"):
        projection_data.precision_of("q3")


def test_a_known_gguf_file_gives_its_own_bits_per_weight() -> None:
    # llama-bench: Llama 3 8B Q4_K_M is 4.58 GiB for 8.03 B parameters; Llama 2 7B Q4_0 3.56 GiB for 6.74 B
    assert projection_data.bits_per_weight("llama-3-8b", "q4_k_m") == pytest.approx(4.58 * 2**30 * 8 / 8.03e9)
    assert projection_data.bits_per_weight("llama-2-7b", "q4") == pytest.approx(4.537, abs=0.001)
    assert projection_data.bits_per_weight("llama-3.1-8b", "q8_0") == 8.5  # no file known: the format's own figure


def test_quantized_weights_compute_at_the_int8_rate_where_the_device_has_one() -> None:
    m3_max = projection_data.load_data("accelerators")["devices"]["apple-m3-max-gpu"]
    assert projection_data.device_peak_flops(H100, "fp16") == projection_data.value(H100["peak_flops"]["fp16"])
    assert projection_data.device_peak_flops(H100, "q4_k_m") == projection_data.value(H100["peak_flops"]["int8"])
    assert projection_data.device_peak_flops(m3_max, "q4_0") == projection_data.value(m3_max["peak_flops"]["fp16"])


def test_prefill_flops_are_two_per_weight_per_token_plus_causal_attention_plus_one_lm_head_row() -> None:
    per_layer = 2 * 4 * 4 + 2 * 4 * 2 + 3 * 4 * 8  # Q and O, K and V, gate/up/down
    t = 3
    attention = 4 * 1 * 2 * 2 * (t * (t + 1) // 2)
    assert pj.phase_cost(TOY_MODEL, 16, "prefill", t).flops == 2 * per_layer * t + attention + 2 * 10 * 4


def test_decode_reads_every_weight_and_the_whole_cache() -> None:
    context, m = 1000, LLAMA_8B
    d, layers = m["d_model"], m["layers"]
    block = d * (m["heads"] + 2 * m["kv_heads"]) * m["head_dim"] + m["heads"] * m["head_dim"] * d + 3 * d * m["d_ff"]
    # Every block's matrices and two norm vectors, the final norm, the LM head and the new token's embedding row.
    weights_read = 2 * (layers * (block + 2 * d) + d + m["vocab"] * d + d)
    kv = pj.kv_bytes_per_token(m)
    assert pj.phase_cost(m, 16, "decode", context).bytes == weights_read + (context + 1) * kv + kv  # cache read, one row written


def test_roofline_time_is_the_slower_of_compute_and_memory() -> None:
    assert pj.roofline_seconds(flops=10, nbytes=1, peak_flops=5, bandwidth=1) == 2
    assert pj.roofline_seconds(flops=1, nbytes=10, peak_flops=5, bandwidth=1) == 10


def test_prefill_crossover_on_a_hand_checked_case() -> None:
    # A 1-layer model (d=4, 1 head of 4, FFN 4, vocab 4, tied): 112 matrix weights and 8 norm weights per
    # layer, a final norm of 4, 16 in the head, one embedding row of 4 per token; 16 KV bytes per token, read
    # and written. At 16 bits, bytes(T) = 2·(140 + 4T) + 32T = 280 + 40T; FLOPs(T) = 8T² + 232T + 32.
    # At 1000 FLOP/s and 10 B/s, FLOPs/1000 >= bytes/10 reads T² - 471T - 3496 >= 0: first true at T = 479.
    m = {"layers": 1, "d_model": 4, "heads": 1, "kv_heads": 1, "head_dim": 4, "d_ff": 4, "vocab": 4,
         "tied_embeddings": True}
    device = {"peak_flops": {"fp16": 1000}, "bandwidth_bytes_per_s": 10}
    assert pj.crossover_tokens(m, device, "fp16", 16) == 479
    for tokens, expected in ((478, "memory"), (479, "compute")):
        prefill = pj.phase_cost(m, 16, "prefill", tokens)
        assert pj.bound(prefill.flops, prefill.bytes, 1000, 10) == expected


def test_short_prompts_prefill_memory_bound_on_a_gpu_until_the_crossover() -> None:
    crossover = pj.prefill_crossover_tokens("llama-3.1-8b", "h100-sxm", "fp16")
    assert 100 < crossover < 1000  # near the H100's ridge (989 TFLOP/s ÷ 3.35 TB/s ≈ 295 FLOP/byte)
    assert pj.project_one("llama-3.1-8b", "h100-sxm", "fp16", crossover - 1)["prefill_bound"] == "memory"
    assert pj.project_one("llama-3.1-8b", "h100-sxm", "fp16", crossover)["prefill_bound"] == "compute"
    for row in pj.project(models=["llama-3.1-8b"])["projections"]:
        assert row["prefill_crossover_tokens"] == pj.prefill_crossover_tokens(row["model"], row["device"], row["dtype"])


def test_batch_one_decode_is_memory_bound_and_long_prefill_compute_bound_on_an_h100() -> None:
    row = pj.project_one("llama-3.1-8b", "h100-sxm", "fp16", 2048)
    assert row["decode_bound"] == "memory"
    assert row["prefill_bound"] == "compute"
    weights_ms = 1000 * pj.weight_bytes(LLAMA_8B, 16) / projection_data.value(H100["bandwidth_bytes_per_s"])
    assert row["decode_ms_per_token"] == pytest.approx(weights_ms, rel=0.05)
    assert row["tps"] == pytest.approx(1000 / row["decode_ms_per_token"])


def test_project_covers_every_model_device_dtype_and_prompt_length_with_contract_keys() -> None:
    out = pj.project()
    rows = out["projections"]
    lengths = {128, 512, 2048, 4096}
    combos = {(r["model"], r["device"], r["dtype"], r["prompt_tokens"]) for r in rows}
    dtypes = {*REQUIRED_PRECISIONS, "q4"}
    assert combos == {(m, d, t, n) for m in ARTICLE_MODELS for d in out["devices"] for t in dtypes for n in lengths}
    keys = {"model", "device", "dtype", "prompt_tokens", "ttft_ms", "decode_ms_per_token", "tps",
            "kv_bytes_per_token", "kv_bytes_at_4k", "kv_share_of_memory_at_4k", "projected", "sources", "fits",
            "prefill_crossover_tokens", "bits_per_weight", "precision"}
    for row in rows:
        assert keys <= set(row)
        assert row["projected"] is True
        assert row["sources"] and all(s["url"] for s in row["sources"])


def test_the_chapters_projection_ids_keep_resolving() -> None:
    ids = {r["id"] for r in pj.project()["projections"]}
    assert {"llama-3.1-8b/h100-sxm/fp16", "llama-3.1-8b/rtx-4090/q4", "qwen2.5-7b/a100-80gb/fp16",
            "llama-3.1-8b/apple-ane-m3-max/fp16"} <= ids
    q4 = pj.project_one("llama-3.1-8b", "rtx-4090", "q4", 512)
    assert q4["precision"] == "q4_0"
    assert q4["ttft_ms"] == pj.project_one("llama-3.1-8b", "rtx-4090", "q4_0", 512)["ttft_ms"]


def test_ttft_grows_with_prompt_length_and_at_least_doubles_once_compute_bound() -> None:
    ttft = [pj.project_one("qwen2.5-7b", "l4", "fp16", n)["ttft_ms"] for n in (128, 512, 2048, 4096)]
    assert ttft == sorted(ttft)
    assert ttft[3] > 2 * ttft[2]


def test_fits_compares_weights_plus_kv_cache_with_device_memory() -> None:
    for row in pj.project(models=["llama-3.1-8b"])["projections"]:
        memory = projection_data.value(projection_data.load_data("accelerators")["devices"][row["device"]]["memory_bytes"])
        needed = row["weight_bytes"] + (row["prompt_tokens"] + 1) * row["kv_bytes_per_token"]
        assert row["memory_needed_bytes"] == needed
        assert row["fits"] is (needed <= memory)


def test_unknown_model_or_device_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="allowed: .*h100-sxm"):
        pj.project(devices=["tpu-v9"])


def test_the_neural_engine_projection_is_a_stated_range_not_one_number() -> None:
    ane = projection_data.load_data("accelerators")["devices"]["apple-ane-m3-max"]
    assert projection_data.is_uncertain(ane)
    assert "precision" in ane["peak_flops"]["fp16"]["note"] and "narrower" in ane["bandwidth_bytes_per_s"]["note"]
    row = pj.project_one("llama-3.1-8b", "apple-ane-m3-max", "fp16", 4096)
    assert row["uncertain"] is True
    best, worst = row["decode_ms_range"]
    assert best == row["decode_ms_per_token"] and worst > 3 * best  # 400 GB/s at best, 64 GB/s at worst
    h100 = pj.project_one("llama-3.1-8b", "h100-sxm", "fp16", 4096)
    assert h100["uncertain"] is False and h100["ttft_ms_range"] == [h100["ttft_ms"], h100["ttft_ms"]]


# --- published measurements beside their bounds ---------------------------------------------------


def test_no_published_measurement_beats_its_roofline_bound() -> None:
    for row in pj.validate():
        assert 0 < row["fraction"] <= 1, f"{row['id']}: {row['published_tps']} tok/s > bound {row['bound_tps']:.1f}"


def test_at_least_twenty_published_rows_over_six_devices_covering_the_required_data() -> None:
    rows = pj.validate()
    assert len(rows) >= 20
    assert len({r["device"] for r in rows}) >= 6
    assert {r["dtype"] for r in rows} >= REQUIRED_PRECISIONS
    assert {r["model"] for r in rows} >= {"llama-2-7b", "llama-3-8b", "llama-3-70b"}
    assert {r["device_class"] for r in rows} >= {"datacenter GPU", "consumer GPU", "Apple GPU"}
    assert {r["phase"] for r in rows} == {"prefill", "decode"}


def test_every_published_row_is_fully_sourced_with_a_unique_stable_id() -> None:
    results = projection_data.load_data("accelerators")["published_results"]
    ids = [r["id"] for r in results]
    assert len(ids) == len(set(ids))
    for r in results:
        assert r["id"].startswith(f"{r['model']}/{r['device']}/{r['precision']}/")
        assert r["software"].startswith("llama.cpp") and r["date"] and r["test"]
    for row in pj.validate():
        assert {"id", "title", "url"} <= set(row["source"]) and row["source"]["url"].startswith("https://")
        assert row["source"]["short"]  # the link text on the page


def test_validation_rows_carry_the_keys_the_figures_read() -> None:
    keys = {"id", "model", "device", "dtype", "phase", "test", "context_tokens", "published_tps", "bound_tps",
            "fraction", "source", "software", "bits_per_weight"}
    for row in pj.validate():
        assert keys <= set(row)
        assert row["fraction"] == pytest.approx(row["published_tps"] / row["bound_tps"])


def test_a_decode_row_is_bounded_at_the_mean_context_of_its_run() -> None:
    row = next(r for r in pj.validate() if r["id"] == "llama-3-8b/rtx-4090/fp16/tg512")
    assert row["context_tokens"] == 256
    m = projection_data.load_data("models")["models"]["llama-3-8b"]
    rtx = projection_data.load_data("accelerators")["devices"]["rtx-4090"]
    bits = projection_data.bits_per_weight("llama-3-8b", "fp16")
    assert row["bound_tps"] == pytest.approx(rtx["bandwidth_bytes_per_s"]["value"] / pj.phase_cost(m, bits, "decode", 256).bytes)


def test_summary_gives_min_median_max_fraction_per_device_class_and_phase() -> None:
    rows = pj.validate()
    summary = pj.validation_summary(rows)
    assert [(s["device_class"], s["phase"]) for s in summary] == [
        (c, p) for c in pj.DEVICE_CLASSES for p in ("prefill", "decode")]
    for s in summary:
        here = [r for r in rows if r["device_class"] == s["device_class"] and r["phase"] == s["phase"]]
        fractions = sorted(r["fraction"] for r in here if not r["anomalous"])  # an anomalous run is left out
        assert s["rows"] == len(fractions) and s["left_out"] == len(here) - len(fractions)
        if fractions:
            assert (s["min"], s["max"]) == (fractions[0], fractions[-1])
            assert s["min"] <= s["median"] <= s["max"]
        else:
            assert s["min"] is s["median"] is s["max"] is None


def test_the_anomalous_a100_sxm_run_stays_in_the_table_and_out_of_the_summary() -> None:
    rows = pj.validate()
    (anomalous,) = [r for r in rows if r["anomalous"]]
    assert anomalous["id"] == "llama-3-8b/a100-80gb/fp16/pp512"
    datacenter = next(s for s in pj.validation_summary(rows) if s["device_class"] == "datacenter GPU"
                      and s["phase"] == "prefill")
    assert datacenter["left_out"] == 1 and datacenter["min"] > anomalous["fraction"]


def test_a_published_row_naming_an_unknown_device_is_an_error_naming_the_row() -> None:
    with pytest.raises(ValueError, match="published result 'x/y/fp16/pp512'.*unknown device 'tpu-v9'"):
        projection_data.check_published({"id": "x/y/fp16/pp512", "model": "llama-2-7b", "device": "tpu-v9",
                             "precision": "fp16", "phase": "prefill"})


def test_project_json_keeps_its_keys_and_carries_the_validation(capsys) -> None:
    from simulations.cli import main

    assert main(["project", "--json", "--models", "smollm2-135m", "--prompt-lengths", "128"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"projections", "devices", "models", "method", "validation", "validation_summary"} <= set(out)
    assert [row["id"] for row in out["validation"]] == [row["id"] for row in pj.validate()]
    assert {"model", "device", "dtype", "prompt_tokens", "ttft_ms", "tps", "sources"} <= set(out["projections"][0])
