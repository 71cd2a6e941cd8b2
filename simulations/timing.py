"""How the measurements time things: wall times in milliseconds, a series' median and spread, the fastest
of several runs for a ceiling, and an observer that splits a pass's time between attention and the rest.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .model import Observer


def time_ms(run: Callable[[], object]) -> float:
    """Wall time of one call of `run()`, in milliseconds."""
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def _timed_runs(run: Callable[[], object], repeats: int) -> list[float]:
    """Wall times (seconds) of `repeats` calls of `run()`, after one untimed call."""
    run()
    return [time_ms(run) / 1000 for _ in range(repeats)]


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of `run()`: what a phase typically takes."""
    return statistics.median(_timed_runs(run, repeats))


def best_seconds(run: Callable[[], object], repeats: int) -> float:
    """Shortest wall time of `run()`: a ceiling is the best rate the machine reached (as STREAM reports),
    so other work sharing the cores during some runs lowers it less than a median would."""
    return min(_timed_runs(run, repeats))


@dataclass(frozen=True)
class Summary:
    """A series of repeats: its median, its spread and its extremes."""

    median: float
    spread: float  # interquartile range ÷ median: robust to one disturbed repeat among five
    low: float
    high: float
    repeats: int


def summarize(samples: Sequence[float]) -> Summary:
    """The median of `samples` and their spread: (third quartile − first) ÷ median, the quartiles taken
    inclusively (of three repeats, half their range; of five, the range of the middle three)."""
    values = sorted(samples)
    median = statistics.median(values)
    if len(values) < 2 or median == 0:
        return Summary(median, 0.0, values[0], values[-1], len(values))
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Summary(median, (q3 - q1) / median, values[0], values[-1], len(values))


class PhaseClock(Observer):
    """Splits one pass's wall time between attention and everything else, from the model's observer seam.

    The model calls `matmul` just before each matrix product and `attention` just before it hands each
    sequence's queries to attention; the time from an event to the next is the work the event began. So the
    time after the last `attention` event of a layer until its output product is the attention itself
    (scores, softmax, the weighted sum), and the rest of a layer is products with their norms, RoPE and
    residuals. `done()` closes the pass; `attention_ms` and `total_ms` then hold its split."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []
        self.start = time.perf_counter()

    def matmul(self, x: np.ndarray, w: object, b: np.ndarray | None) -> None:
        self.events.append(("matmul", time.perf_counter()))

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
        self.events.append(("attention", time.perf_counter()))

    def done(self) -> tuple[float, float]:
        """(attention ms, total ms) of the pass that just ended."""
        end = time.perf_counter()
        marks = [*self.events, ("end", end)]
        attention = sum(after - at for (kind, at), (_, after) in zip(marks, marks[1:], strict=False)
                        if kind == "attention")
        return attention * 1000, (end - self.start) * 1000
