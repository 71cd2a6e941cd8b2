"""Fixtures for the build-side demo tests: the tiny seeded model behind a counting simulator, strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hooks.demos.cache import ResultCache
from hooks.demos.measurements import Measurements
from hooks.demos.simulator import NumpySimulator
from hooks.demos.strings import Strings, load_strings
from simulations.plans import plan_for
from tests.languages import DEFAULT_LANGUAGE, LANGUAGES

QUICK = plan_for("quick")  # the published sizes: the fakes below are shaped like the real model's results

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


class CountingSimulator(NumpySimulator):
    """The tiny model for real traces and projections; the ledger and its views are synthetic and instant.

    `calls` counts every simulation run (a recording, the ledger), so tests can tell a cache hit from a miss.
    """

    def __init__(self) -> None:
        super().__init__("tiny")
        self.calls: list[str] = []

    def record(self, prompt: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(f"record:{prompt}")
        return super().record(prompt, **kwargs)

    def ledger(self, *, plan: Any, **_: Any) -> dict[str, Any]:
        self.calls.append("ledger")
        return {"schema": "prefill-decode-ledger/1", "plan": {"name": plan.name}, "entries": {}}

    def sweep(self, *, prompt_lengths: list[int], contexts: list[int], **_: Any) -> dict[str, Any]:
        return {
            "prompt_lengths": [{"prompt_tokens": n, "ttft_ms": 0.5 * n + n * n / 4000,
                                "decode_ms_per_token": 20 + n / 1000, "tps": 1000 / (20 + n / 1000),
                                "prefill_attention_ms": n * n / 8000, "decode_attention_ms": n / 200}
                               for n in prompt_lengths],
            "cache_vs_recompute": [{"context": c, "cached_ms_per_token": 20.0, "recompute_ms_per_token": 2.0 * c}
                                   for c in contexts],
            "machine": {"cpu": "Test CPU", "cores": 2, "date": "2026-01-02"},
        }

    def batch(self, **_: Any) -> dict[str, Any]:
        return fake_batch(batch_sizes=list(QUICK.batch_sizes), context_tokens=QUICK.batch_context,
                          chunk_sizes=list(QUICK.chunk_sizes), two_users_prompt_tokens=QUICK.two_users_prompt_tokens,
                          two_users_chunk_tokens=QUICK.two_users_chunk_tokens)

    def formats(self, **_: Any) -> dict[str, Any]:
        return fake_formats(prompt_lengths=list(QUICK.format_prompt_lengths), context_tokens=QUICK.format_context,
                            accuracy_steps=QUICK.accuracy_steps)

    def roofline(self, *, prompt_tokens: int, **_: Any) -> dict[str, Any]:

        def point(phase: str) -> dict[str, Any]:
            intensity = 100.0 if phase == "prefill" else 1.0
            return {"ms": 1000.0 if phase == "prefill" else 25.0,
                    "intensity": intensity, "gflops": 50.0 * min(intensity, 2),
                    "gbps": 20.0, "compute_utilization": 0.5 if phase == "prefill" else 0.01,
                    "bandwidth_utilization": 0.2 if phase == "prefill" else 0.8}

        points = [{"prompt_tokens": n, "prefill": point("prefill"), "decode": point("decode")} for n in (128, 512, 2048)]
        return {"machine": {"cpu": "Test CPU", "cores": 2, "date": "2026-01-02", "peak_gflops": 200.0,
                            "peak_gbps": 25.0},
                "prompt_tokens": prompt_tokens, "prefill": point("prefill"), "decode": point("decode"), "points": points}


def fake_batch(*, batch_sizes: list[int], context_tokens: int, chunk_sizes: list[int],
               two_users_prompt_tokens: int, two_users_chunk_tokens: int, one_user_ms: float | None = None) -> dict[str, Any]:
    """A hand-made result of the batch measurement's contract ("prefill-decode-batch/2"): flat step time
    up to B = 8, then growing with B (a knee at 16), and a stall that chunking cuts."""
    peak_flops, bandwidth, weight_bytes, kv_per_user = 200e9, 25e9, 500e6, 12e6
    rows = []
    for b in batch_sizes:
        step_ms = 20.0 * max(1.0, b / 8)
        flops, nbytes = 2 * 125e6 * b, weight_bytes + b * kv_per_user
        rows.append({"batch": b, "step_ms": step_ms, "tokens_per_s": 1000 * b / step_ms, "ms_per_token": step_ms,
                     "flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "weight_bytes": weight_bytes,
                     "kv_bytes": b * kv_per_user, "floor_ms": 1000 * max(flops / peak_flops, nbytes / bandwidth),
                     "compute_utilization": flops / (step_ms / 1000) / peak_flops,
                     "bandwidth_utilization": min(1.0, nbytes / (step_ms / 1000) / bandwidth)})
    chunk = two_users_chunk_tokens

    def events(stall: float, chunked: bool) -> list[dict[str, Any]]:
        found = [{"user": "streaming", "t_ms": -20.0, "what": "token"}]
        found += [{"user": "arriving", "t_ms": t, "what": "prefill"} for t in ((5.0, 30.0, 55.0) if chunked else (5.0,))]
        found += [{"user": "streaming", "t_ms": 25.0 * k if chunked else stall + 25.0 * (k - 1), "what": "token"}
                  for k in range(1, 5)]
        found.append({"user": "arriving", "t_ms": 80.0 if chunked else stall, "what": "token"})
        return found

    return {
        "schema": "prefill-decode-batch/2", "model": "tiny-random", "context_tokens": context_tokens,
        "machine": {"peak_flops": peak_flops, "bandwidth": bandwidth, "ridge": peak_flops / bandwidth},
        "batch_sizes": rows, "kv_bytes_per_user": kv_per_user,
        "kernels": "numba 0.68.1",
        "knee": {"measured_batch": 16 if 16 in batch_sizes else None, "predicted_batch": 32, "weights_only_batch": 16.0,
                 "intensity_limit": 20.8, "bytes_per_weight": 4, "slowdown": 1.5},
        "projected_knees": [{"id": "llama-3.1-8b/h100-sxm/fp16", "model": "llama-3.1-8b", "device": "h100-sxm",
                             "dtype": "fp16", "ridge": 295.2, "weights_only_batch": 295.2,
                             "by_context": [{"context": context_tokens, "predicted_batch": None, "intensity_limit": 227.0},
                                            {"context": 4096, "predicted_batch": None, "intensity_limit": 32.0}]}],
        "chunked": [{"decode_rows": 4, "chunk_tokens": c, "step_ms": 20.0 + c / 10, "separate_ms": 20.0 + c / 10 + (18 if c else 0)}
                    for c in chunk_sizes],
        "two_users": {"prompt_tokens": two_users_prompt_tokens, "chunk_tokens": chunk,
                      "unchunked": {"stall_ms": 400.0, "ttft_ms": 400.0, "events": events(400.0, False)},
                      "chunked": {"stall_ms": 30.0, "ttft_ms": 80.0, "events": events(400.0, True)}},
    }


def fake_formats(*, prompt_lengths: list[int], context_tokens: int, accuracy_steps: int) -> dict[str, Any]:
    """A hand-made result of the formats measurement's contract ("prefill-decode-formats/1"): 500 MB of F32
    weights decoded in 20 ms a step; F16 and Q8_0 as much faster as their bytes shrink, Q4_1 only 1.25 times
    (what an arithmetic-bound kernel gives: with its bytes in the caches it takes 1.2 times their reading), the rest
    of a step 2.5 ms in each;
    prefill the same in every format; accuracy falling with the bits."""
    peaks = {"peak_gflops": 200.0, "peak_gbps": 25.0}
    flops = 2 * 125e6

    def point(ms: float, nbytes: float, work: float) -> dict[str, Any]:
        gflops, gbps = work / ms / 1e6, nbytes / ms / 1e6
        return {"ms": ms, "flops": work, "bytes": nbytes, "gflops": gflops, "gbps": gbps, "intensity": work / nbytes,
                "compute_utilization": gflops / peaks["peak_gflops"], "bandwidth_utilization": gbps / peaks["peak_gbps"]}

    rows = []
    for fmt, bits, decode_ms, top1, kl, cached_us in (("f32", 32.0, 20.0, 1.0, 0.0, 60.0), ("f16", 16.0, 10.0, 1.0, 1e-6, 40.0),
                                                      ("q8_0", 8.5, 5.5, 0.984375, 0.0021, 30.0),
                                                      ("q4_1", 5.0, 16.0, 0.90625, 0.061, 60.0)):
        nbytes = 125e6 * bits / 8
        matrix_bytes = 2e6 * bits / 8  # a layer's gate-and-up matrix: its bytes read in 320 µs in F32, 50 in Q4_1
        rows.append({"name": fmt.upper(), "format": fmt, "bits_per_weight": bits, "weight_bytes": int(nbytes),
                     "decode_ms_per_token": decode_ms, "tps": 1000 / decode_ms, "bytes_per_step": nbytes,
                     "products_ms": decode_ms - 2.5,  # the rest of a step: 2.5 ms in every format
                     "decode": point(decode_ms, nbytes, flops),
                     "cached_product": {"matrix": "w_gate_up", "bytes": int(matrix_bytes), "us": cached_us,
                                        "read_us": 1e6 * matrix_bytes / (peaks["peak_gbps"] * 1e9)},
                     "dequantize_ms": 0.0 if fmt == "f32" else 40.0,
                     "prefill": [{"prompt_tokens": n, **point(2.0 * n, nbytes, flops * n)} for n in prompt_lengths],
                     "top1_agreement": top1, "mean_kl": kl})
    return {"schema": "prefill-decode-formats/1", "prompt_lengths": list(prompt_lengths),
            "context_tokens": context_tokens, "formats": rows, "activation_digits": 0,
            "accuracy": {"prompt": "Explain quantum computing in three sentences.", "steps": accuracy_steps}}


@pytest.fixture
def simulator() -> CountingSimulator:
    return CountingSimulator()


@pytest.fixture
def measurements(simulator: CountingSimulator, tmp_path: Path) -> Measurements:
    return Measurements(simulator, ResultCache(tmp_path / "cache", memo={}), "code-v1", QUICK)


@pytest.fixture(params=LANGUAGES)
def strings(request: pytest.FixtureRequest) -> Strings:
    return load_strings(DOCS, request.param, DEFAULT_LANGUAGE, REPO)


@pytest.fixture
def en() -> Strings:
    return load_strings(DOCS, "en", "zh", REPO)


@pytest.fixture
def zh() -> Strings:
    return load_strings(DOCS, "zh", "zh", REPO)
