"""The roofline of this machine, and where prefill and decode sit under it.

Two ceilings: the float32 FLOP/s of a large matrix multiply (GEMM), and the bytes/s memory delivers to a
read-only stream over a buffer far larger than the last-level cache (decode's access pattern: it reads
every weight once). A phase whose arithmetic intensity (FLOPs per byte moved) is below the ridge point
(peak FLOP/s ÷ peak bytes/s) is limited by bandwidth, above it by compute.
`measure_peaks` measures the ceilings; `roofline` times the model's real prefill and decode and
places them under them, with their FLOPs and bytes from the cost model (`cost.py`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import kernels
from .loader import LoadedModel, model_summary
from .machine import machine_info
from .sweep import check_lengths, timed_runs

GEMM_SIZE = 2048  # 2048³ float32: 17 GFLOP, large enough to reach BLAS peak, small enough to be quick
STREAM_BYTES = 2**30  # 1 GiB: at least 8× the last-level cache here (which can exceed 100 MB on these hosts)


def _timed_runs(run: Callable[[], object], repeats: int) -> list[float]:
    """Wall times of `repeats` calls of `run()`, after one untimed call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of `run()`: what a phase typically takes."""
    return statistics.median(_timed_runs(run, repeats))


def best_seconds(run: Callable[[], object], repeats: int) -> float:
    """Shortest wall time of `run()`: a ceiling is the best rate the machine reached (as STREAM reports),
    so other work sharing the cores during some runs lowers it less than a median would."""
    return min(_timed_runs(run, repeats))


def gemm_gflops(repeats: int) -> float:
    """Best float32 GEMM throughput (GFLOP/s) for an n×n by n×n product (n = GEMM_SIZE): 2n³ FLOPs."""
    n = GEMM_SIZE
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    seconds = best_seconds(lambda: np.matmul(a, b, out=out), repeats)
    return 2.0 * n**3 / seconds / 1e9


def last_level_cache_bytes() -> int | None:
    """The largest CPU cache Linux reports for core 0, in bytes (None elsewhere)."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes, default=None)


def stream_bytes() -> int:
    """The bandwidth buffer: STREAM_BYTES, or 8× the last-level cache where that is larger."""
    return max(STREAM_BYTES, 8 * (last_level_cache_bytes() or 0))


def read_gbps(repeats: int, nbytes: int | None = None) -> float:
    """Best read bandwidth (GB/s): every core reads its share of a float32 buffer of `nbytes` (default
    `stream_bytes()`) once (`kernels.read_everything`). The buffer is written first, so its pages are real
    memory, not the shared zero page."""
    buffer = np.ones((nbytes or stream_bytes()) // 4, dtype=np.float32)
    seconds = best_seconds(lambda: kernels.read_everything(buffer), repeats)
    return buffer.nbytes / seconds / 1e9


def measure_peaks(repeats: int = 5) -> dict[str, Any]:
    """This machine's float32 compute and memory-bandwidth ceilings, each the best of `repeats` runs."""
    gflops = gemm_gflops(repeats)
    gbps = read_gbps(repeats)
    cache = last_level_cache_bytes()
    return {
        "peak_gflops": gflops,
        "peak_gbps": gbps,
        "repeats": repeats,
        "stream_bytes": stream_bytes(),
        "last_level_cache_bytes": cache,
        "method": (
            f"peak_gflops: best of {repeats} float32 GEMMs of {GEMM_SIZE}×{GEMM_SIZE} by "
            f"{GEMM_SIZE}×{GEMM_SIZE} (2n³ FLOPs) after one warm-up, numpy matmul on this machine's BLAS. "
            f"peak_gbps: best of {repeats} read-only passes over a {stream_bytes() // 2**20} MiB float32 buffer "
            f"(the last-level cache: {f'{cache // 2**20} MiB' if cache else 'not reported'}), every core summing "
            "its share (a compiled numba loop), after one warm-up: the bytes read per second, decode's access "
            "pattern."
        ),
    }


def best_ceilings(measured: list[dict[str, Any]]) -> dict[str, Any]:
    """The ceilings of several `measure_peaks` results: the best GEMM and the best read stream of them. A ceiling
    is what the machine can do; on a shared machine a neighbour's load during one measurement lowers it, and a
    phase timed in a faster stretch would seem to run above it."""
    best = dict(max(measured, key=lambda p: p["peak_gbps"]))
    best["peak_gflops"] = max(p["peak_gflops"] for p in measured)
    best["measurements"] = [{"peak_gflops": p["peak_gflops"], "peak_gbps": p["peak_gbps"]} for p in measured]
    return best


def machine_record(peaks: dict[str, Any]) -> dict[str, Any]:
    """A result's `machine`: this machine, and the ceilings it was measured against (their method apart)."""
    return {**machine_info(kernels=kernels.describe()), **{k: v for k, v in peaks.items() if k not in ("method", "measurements")}}


# --- prefill and decode under the roofline ---------------------------------------------------------

ROOFLINE_PROMPT_LENGTHS = (128, 512, 2048)  # default points for the animated chart


def phase_point(ms: float, flops: float, nbytes: float, peaks: dict[str, Any]) -> dict[str, Any]:
    """Achieved throughput of one phase and its share of a machine's two ceilings (`peaks`: peak_gflops,
    peak_gbps). `flops` and `nbytes` are the cost model's (`cost.PassCost`, or a mean of them); `ms` is
    measured here, or for a projected device the roofline's own time, where the limiting ceiling is 100%."""
    seconds = ms / 1000
    gflops, gbps = flops / seconds / 1e9, nbytes / seconds / 1e9
    return {
        "ms": ms,
        "flops": flops,
        "bytes": nbytes,
        "gflops": gflops,
        "gbps": gbps,
        "intensity": flops / nbytes,  # FLOPs per byte moved: PassCost.intensity for a single pass
        "compute_utilization": gflops / peaks["peak_gflops"],
        "bandwidth_utilization": gbps / peaks["peak_gbps"],
        "bound": "compute" if flops / nbytes >= ridge_intensity(peaks) else "memory",
    }


def ridge_intensity(peaks: dict[str, Any]) -> float:
    """FLOPs per byte where the two ceilings meet: below it bandwidth limits, above it compute."""
    return peaks["peak_gflops"] / peaks["peak_gbps"]


def measure_phases(model: LoadedModel, prompt_tokens: int, decode_steps: int, repeats: int) -> dict[str, tuple]:
    """Time real prefill and greedy decode steps at one prompt length: each phase's (ms, FLOPs, bytes), for
    `phase_point`. Prefill: the median time over repeats, its FLOPs and bytes (cost.py). Decode: the median time
    of all steps, and the mean FLOPs and bytes per step (they grow by one cached token per step)."""
    runs = timed_runs(model, prompt_tokens, decode_steps, repeats)
    prefills, decodes = [run[0] for run in runs], [step for run in runs for step in run[1:]]
    return {
        "prefill": (statistics.median(s.ms for s in prefills), prefills[0].cost.flops, prefills[0].cost.bytes),
        "decode": (statistics.median(s.ms for s in decodes), statistics.fmean(s.cost.flops for s in decodes),
                   statistics.fmean(s.cost.bytes for s in decodes)),
    }


def roofline(model: LoadedModel, peaks: dict[str, Any] | None = None, prompt_tokens: int = 512,
             prompt_lengths: tuple[int, ...] = ROOFLINE_PROMPT_LENGTHS, decode_steps: int = 8,
             repeats: int = 3, progress: Callable[[str, float | None], None] | None = None,
             peak_repeats: int = 5) -> dict[str, Any]:
    """Prefill and decode of `model` on this machine's roofline: achieved FLOP/s, bytes/s, intensity, utilisation.

    `prefill` and `decode` are measured at `prompt_tokens`; `points` list both phases at each of
    `prompt_lengths` too ({"prompt_tokens", "prefill", "decode"}, for the chart that animates prompt
    length). Peaks given are used as they are; otherwise they are measured (`peak_repeats` runs of each) before
    the phases and again after them, and the ceilings are the best of both (`best_ceilings`).
    """
    report = progress or (lambda message, fraction: None)
    given = peaks
    if peaks is None:
        report("measuring this machine's peak FLOP/s and bandwidth", 0.0)
        peaks = measure_peaks(peak_repeats)
    lengths = sorted({prompt_tokens, *prompt_lengths})
    check_lengths(model, lengths, decode_steps, "prompt lengths")
    # Untimed warm-up: start BLAS threads and fill the caches.
    measure_phases(model, min(32, model.config.max_context - 3), 2, 1)

    timed = {}
    for i, n in enumerate(lengths):
        report(f"prefill of {n} tokens and {decode_steps} decode steps", i / len(lengths))
        timed[n] = measure_phases(model, n, decode_steps, repeats)
    if given is None:
        # A build measured a one-user decode step at 124% of the bandwidth measured before it: the host's memory
        # was faster while the steps ran. Measured on both sides, the ceiling is the faster of the two.
        report("measuring the peaks again", 1.0)
        peaks = best_ceilings([peaks, measure_peaks(peak_repeats)])
    by_length = {n: {phase: phase_point(*point, peaks) for phase, point in phases.items()} for n, phases in timed.items()}
    report("roofline done", 1.0)

    return {
        "machine": machine_record(peaks),
        "peaks_method": peaks.get("method"),
        "ridge_intensity": ridge_intensity(peaks),
        "prompt_tokens": prompt_tokens,
        "prefill": by_length[prompt_tokens]["prefill"],
        "decode": by_length[prompt_tokens]["decode"],
        "points": [{"prompt_tokens": n, **by_length[n]} for n in lengths],
        "model": model_summary(model),
        "method": (
            "Achieved GFLOP/s and GB/s = the FLOPs and bytes of each pass from the cost model "
            "(simulations/cost.py: float32 weights read once per pass, KV cache read and written; checked "
            "against the shapes the model multiplies), divided by wall time. Prefill: median over "
            "repeats of the whole prompt's pass. Decode: median "
            f"of {decode_steps} greedy steps after that prefill (context = prompt + step). Utilisation = "
            "achieved / measured peak (peak_gflops from GEMM, peak_gbps from a read-only stream far beyond the cache; "
            "each the best of its measurements before and after the phases)."
        ),
    }
