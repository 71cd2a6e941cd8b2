"""Sweep and roofline on the tiny model: structure, exact prompt lengths, cache-vs-recompute agreement.

No wall-clock assertions: timings are only checked to be positive and consistent with each other.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulations import roofline as rf
from simulations import sweep as sw
from simulations.errors import PromptError
from simulations.loader import load_model

FAKE_PEAKS = {"peak_gflops": 100.0, "peak_gbps": 20.0, "method": "fixed numbers for tests"}


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


@pytest.fixture(scope="module")
def tiny_sweep(tiny):
    return sw.sweep(tiny, prompt_lengths=(16, 64), decode_steps=3, repeats=2, contexts=(8, 32))


def test_prompts_have_exactly_the_requested_number_of_tokens(tiny) -> None:
    for n in (1, 7, 300):
        assert len(sw.prompt_of_length(tiny, n)) == n


def test_prompts_longer_than_the_context_fail_with_the_allowed_range(tiny) -> None:
    too_long = tiny.config.max_context + 1
    with pytest.raises(PromptError, match=f"allowed: 1..{tiny.config.max_context}"):
        sw.prompt_of_length(tiny, too_long)
    with pytest.raises(PromptError, match="exceed"):
        sw.sweep(tiny, prompt_lengths=(tiny.config.max_context,), contexts=())


def test_long_prompts_get_fewer_repeats_but_at_least_one() -> None:
    assert sw.repeats_for(128, 3) == 3
    assert sw.repeats_for(4096, 3) == 1
    assert sw.repeats_for(100_000, 3) == 1


def test_sweep_reports_every_prompt_length_with_ttft_decode_and_tps(tiny_sweep) -> None:
    points = tiny_sweep["prompt_lengths"]
    assert [p["prompt_tokens"] for p in points] == [16, 64]
    for p in points:
        assert p["ttft_ms"] > 0 and p["decode_ms_per_token"] > 0
        assert p["tps"] == pytest.approx(1000 / p["decode_ms_per_token"])
        assert p["repeats"] == len(p["ttft_ms_runs"]) == 2
        assert p["kv_bytes"] == p["prompt_tokens"] * tiny_sweep["model"]["kv_bytes_per_token"]


def test_cached_and_recomputed_decoding_produce_identical_greedy_tokens(tiny_sweep) -> None:
    rows = tiny_sweep["cache_vs_recompute"]
    assert [r["context"] for r in rows] == [8, 32]
    for r in rows:
        assert r["identical_tokens"] is True
        assert r["recompute_tokens"] == r["cached_tokens"][: r["recompute_steps"]]
        assert r["speedup"] == pytest.approx(r["recompute_ms_per_token"] / r["cached_ms_per_token"])
    assert tiny_sweep["identical_tokens"] is True


def test_sweep_names_the_machine_and_the_model(tiny_sweep, tiny) -> None:
    assert {"cpu", "cores", "numpy", "blas", "python", "date"} <= set(tiny_sweep["machine"])
    assert tiny_sweep["model"]["fingerprint"] == tiny.fingerprint


def test_phase_point_divides_counts_by_time_and_by_the_peaks() -> None:
    point = rf.phase_point(ms=500.0, flops=20e9, nbytes=8e9, peaks=FAKE_PEAKS)
    assert point["gflops"] == pytest.approx(40.0)
    assert point["gbps"] == pytest.approx(16.0)
    assert point["intensity"] == pytest.approx(2.5)
    assert point["compute_utilization"] == pytest.approx(0.4)
    assert point["bandwidth_utilization"] == pytest.approx(0.8)


def test_the_ridge_separates_memory_bound_from_compute_bound_phases() -> None:
    assert rf.ridge_intensity(FAKE_PEAKS) == 5.0  # 100 GFLOP/s ÷ 20 GB/s
    assert rf.phase_point(1.0, flops=4e6, nbytes=1e6, peaks=FAKE_PEAKS)["bound"] == "memory"
    assert rf.phase_point(1.0, flops=6e6, nbytes=1e6, peaks=FAKE_PEAKS)["bound"] == "compute"


def test_roofline_has_the_contract_keys_and_points_per_prompt_length(tiny) -> None:
    out = rf.roofline(tiny, peaks=FAKE_PEAKS, prompt_tokens=32, prompt_lengths=(16, 64), decode_steps=2, repeats=1)
    assert out["machine"]["peak_gflops"] == 100.0 and out["machine"]["peak_gbps"] == 20.0
    for phase in ("prefill", "decode"):
        for key in ("gflops", "gbps", "intensity", "compute_utilization", "bandwidth_utilization", "ms"):
            assert out[phase][key] > 0
    assert out["prefill"]["intensity"] > out["decode"]["intensity"]
    assert [p["prompt_tokens"] for p in out["points"]] == [16, 32, 64]
    assert all(p[phase]["intensity"] > 0 for p in out["points"] for phase in ("prefill", "decode"))
    assert next(p for p in out["points"] if p["prompt_tokens"] == 32)["prefill"] == out["prefill"]


def test_measure_peaks_reads_a_buffer_far_beyond_the_last_level_cache_and_says_so(monkeypatch) -> None:
    monkeypatch.setattr(rf, "STREAM_BYTES", 64 * 2**20)  # the test's own size; the cache rule still applies
    peaks = rf.measure_peaks(repeats=1)
    assert peaks["peak_gflops"] > 0 and peaks["peak_gbps"] > 0
    cache = rf.last_level_cache_bytes()
    assert peaks["stream_bytes"] >= 8 * (cache or 0) and peaks["stream_bytes"] >= 64 * 2**20
    assert f"{peaks['stream_bytes'] // 2**20} MiB" in peaks["method"] and "read-only" in peaks["method"]


def test_the_read_stream_reads_every_value() -> None:
    from simulations import kernels

    values = np.arange(1, 1001, dtype=np.float32)
    assert kernels.read_everything(values) == pytest.approx(500500, rel=1e-6)


def test_roofline_measures_the_peaks_before_and_after_the_phases_and_keeps_the_best_of_each(tiny, monkeypatch) -> None:
    """On a shared machine a phase timed in a faster stretch than the ceilings' measurement would seem to run above
    them (a build's decode step once at 124% of the bandwidth)."""
    measured = iter([{**FAKE_PEAKS, "peak_gflops": 100.0, "peak_gbps": 20.0},
                     {**FAKE_PEAKS, "peak_gflops": 90.0, "peak_gbps": 30.0}])
    monkeypatch.setattr(rf, "measure_peaks", lambda repeats=5: next(measured))
    out = rf.roofline(tiny, prompt_tokens=16, prompt_lengths=(16,), decode_steps=2, repeats=1, peak_repeats=1)
    assert out["machine"]["peak_gflops"] == 100.0 and out["machine"]["peak_gbps"] == 30.0
    assert out["decode"]["bandwidth_utilization"] == pytest.approx(out["decode"]["gbps"] / 30.0)
    assert out["ridge_intensity"] == pytest.approx(100.0 / 30.0)
