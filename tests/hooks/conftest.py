"""Fixtures for the build-side demo tests: the tiny seeded model behind a counting simulator, strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hooks.demos.cache import ResultCache
from hooks.demos.measurements import SWEEP_SETTINGS, Measurements
from hooks.demos.simulator import NumpySimulator
from hooks.demos.strings import Strings, load_strings

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


class CountingSimulator(NumpySimulator):
    """The tiny model for real traces and projections; sweep and roofline are synthetic and instant.

    `calls` counts every simulation run, so tests can tell a cache hit from a miss.
    """

    def __init__(self) -> None:
        super().__init__("tiny")
        self.calls: list[str] = []

    def record(self, prompt: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(f"record:{prompt}")
        return super().record(prompt, **kwargs)

    def sweep(self, *, prompt_lengths: list[int], contexts: list[int], **_: Any) -> dict[str, Any]:
        self.calls.append("sweep")
        return {
            "prompt_lengths": [{"prompt_tokens": n, "ttft_ms": 0.5 * n + n * n / 4000,
                                "decode_ms_per_token": 20 + n / 1000, "tps": 1000 / (20 + n / 1000)}
                               for n in prompt_lengths],
            "cache_vs_recompute": [{"context": c, "cached_ms_per_token": 20.0, "recompute_ms_per_token": 2.0 * c}
                                   for c in contexts],
            "machine": {"cpu": "Test CPU", "cores": 2, "date": "2026-01-02"},
        }

    def batch(self, *, batch_sizes: list[int], context_tokens: int, chunk_sizes: list[int],
              two_users_prompt_tokens: int, two_users_chunk_tokens: int, **_: Any) -> dict[str, Any]:
        self.calls.append("batch")
        return fake_batch(batch_sizes=batch_sizes, context_tokens=context_tokens, chunk_sizes=chunk_sizes,
                          two_users_prompt_tokens=two_users_prompt_tokens, two_users_chunk_tokens=two_users_chunk_tokens)

    def roofline(self, *, prompt_tokens: int, **_: Any) -> dict[str, Any]:
        self.calls.append("roofline")

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


@pytest.fixture
def simulator() -> CountingSimulator:
    return CountingSimulator()


@pytest.fixture
def measurements(simulator: CountingSimulator, tmp_path: Path) -> Measurements:
    return Measurements(simulator, ResultCache(tmp_path / "cache", memo={}), "code-v1", SWEEP_SETTINGS["quick"])


@pytest.fixture(params=["zh", "en"])
def strings(request: pytest.FixtureRequest) -> Strings:
    return load_strings(DOCS, request.param, "zh", REPO)


@pytest.fixture
def en() -> Strings:
    return load_strings(DOCS, "en", "zh", REPO)


@pytest.fixture
def zh() -> Strings:
    return load_strings(DOCS, "zh", "zh", REPO)
