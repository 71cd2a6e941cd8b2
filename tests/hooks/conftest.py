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
