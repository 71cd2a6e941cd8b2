"""The roofline of this machine, and where prefill and decode sit under it.

A roofline has two ceilings: how many floating-point operations per second the
machine can do (a large float32 matrix multiply, GEMM) and how many bytes per
second it can move from memory (a large array copy, and a matrix-vector product
over a matrix far larger than the last-level cache — exactly decode's access
pattern). A phase's arithmetic intensity (FLOPs per byte moved) says which
ceiling limits it: below the ridge point (peak FLOP/s ÷ peak bytes/s) memory
bandwidth does, above it compute does.

`measure_peaks` measures the two ceilings; `roofline` times the model's real
prefill and decode and places them on the chart.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GEMM_SIZE = 2048  # 2048³ float32: 17 GFLOP, large enough to reach BLAS peak, small enough to be quick
STREAM_BYTES = 256 * 2**20  # 256 MiB per array: 8× a 32 MiB last-level cache, so every byte comes from DRAM


def _median_seconds(run: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """Median wall time of `run()` after `warmup` untimed calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm_gflops(repeats: int = 5, n: int = GEMM_SIZE) -> float:
    """Median float32 GEMM throughput (GFLOP/s) for an n×n by n×n product: 2n³ FLOPs."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    seconds = _median_seconds(lambda: np.matmul(a, b, out=out), repeats)
    return 2.0 * n**3 / seconds / 1e9


def copy_gbps(repeats: int = 5, nbytes: int = STREAM_BYTES) -> float:
    """Median large-array copy bandwidth (GB/s), counting the bytes read plus the bytes written."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    seconds = _median_seconds(lambda: np.copyto(dst, src), repeats)
    return 2.0 * nbytes / seconds / 1e9


def gemv_gbps(repeats: int = 5, nbytes: int = STREAM_BYTES) -> float:
    """Median matrix-vector bandwidth (GB/s): the bytes of a float32 matrix read once per product."""
    n = int((nbytes // 4) ** 0.5)
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((n, n), dtype=np.float32)
    vector = rng.standard_normal(n, dtype=np.float32)
    seconds = _median_seconds(lambda: matrix @ vector, repeats)
    return matrix.nbytes / seconds / 1e9


def measure_peaks(repeats: int = 5) -> dict[str, Any]:
    """This machine's float32 compute and memory-bandwidth ceilings, each the median of `repeats` runs."""
    gflops = gemm_gflops(repeats)
    copy = copy_gbps(repeats)
    gemv = gemv_gbps(repeats)
    bandwidth_from = "gemv" if gemv >= copy else "copy"
    return {
        "peak_gflops": gflops,
        "peak_gbps": max(copy, gemv),
        "copy_gbps": copy,
        "gemv_gbps": gemv,
        "peak_gbps_from": bandwidth_from,
        "repeats": repeats,
        "method": (
            f"peak_gflops: median of {repeats} float32 GEMMs of {GEMM_SIZE}×{GEMM_SIZE} by "
            f"{GEMM_SIZE}×{GEMM_SIZE} (2n³ FLOPs) after one warm-up, numpy matmul on this machine's BLAS. "
            f"copy_gbps: median of {repeats} copies of a {STREAM_BYTES // 2**20} MiB float32 array, "
            "bytes read + bytes written. gemv_gbps: median of "
            f"{repeats} float32 matrix-vector products over a {STREAM_BYTES // 2**20} MiB matrix "
            "(far larger than the last-level cache), matrix bytes read per product — decode's access "
            f"pattern. peak_gbps is the higher of the two ({bandwidth_from} here)."
        ),
    }
