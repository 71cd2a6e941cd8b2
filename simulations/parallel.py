"""Run independent blocks of work on every core.

numpy runs element-wise work (softmax's exp, SiLU, RoPE) on one core; only BLAS uses more. A batched
pass (prefill) has plenty of independent blocks — rows of tokens, blocks of queries — so it runs them
on Python threads (numpy releases the GIL), matrix products included, with BLAS on one thread inside
each (threadpoolctl). Mixing the two kinds of threads costs a core: after a multi-threaded call,
OpenBLAS's own workers busy-wait for the next one (about 0.1 s); a 2048-token prefill took about 8 s
that way against 6.5 s here.

A few rows (a decode step, a batch of decode rows) never split here: their products go to BLAS whole,
on its own threads (a decode step at a 512-token context, on a quiet machine: 27-37 ms, against 62 ms
with the weights split over Python threads and one-thread BLAS).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache

import numpy as np  # noqa: F401 -- loads numpy's BLAS before threadpoolctl looks for it
from threadpoolctl import ThreadpoolController

from .machine import available_cores

MIN_ROWS_PER_BLOCK = 64
_WORKER_NAME = "pd-blocks"
_single_threaded = threading.local()  # .depth > 0 inside blas_on_one_thread(), on the thread that entered it


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    """The thread pools of the libraries loaded so far, numpy's BLAS among them."""
    return ThreadpoolController()


@lru_cache(maxsize=4)
def _pool(pid: int) -> ThreadPoolExecutor | None:
    """One pool per process (keyed by pid: a forked child has none of its parent's threads)."""
    return ThreadPoolExecutor(available_cores(), thread_name_prefix=_WORKER_NAME) if available_cores() > 1 else None


@contextmanager
def blas_on_one_thread() -> Iterator[None]:
    """BLAS on one thread until the block ends (re-entrant); parallel sections inside skip their own limit."""
    depth = getattr(_single_threaded, "depth", 0)
    with _blas().limit(limits=1, user_api="blas") if depth == 0 else nullcontext():
        _single_threaded.depth = depth + 1
        try:
            yield
        finally:
            _single_threaded.depth = depth


def usable_cores() -> int:
    """Cores a parallel section started here can use: one on a worker thread (the others are busy)."""
    return 1 if threading.current_thread().name.startswith(_WORKER_NAME) else available_cores()


def for_each(work: Callable[[int], None], items: Iterable[int]) -> None:
    """Call work(item) for every item, in parallel when it pays; work must touch disjoint data."""
    items = list(items)
    pool = _pool(os.getpid()) if len(items) > 1 and usable_cores() > 1 else None
    if pool is None:
        for item in items:
            work(item)
    else:
        with blas_on_one_thread():  # the blocks share the cores; BLAS in each stays on one
            # The calling thread takes the first item itself: one hand-off fewer per call, and it
            # would only wait otherwise (a decode step makes about 150 of these calls).
            others = [pool.submit(work, item) for item in items[1:]]
            try:
                work(items[0])
            finally:
                for future in others:  # wait for all (they write shared arrays); re-raises a worker's error
                    future.result()


def for_row_blocks(work: Callable[[slice], None], n_rows: int) -> None:
    """Call work(rows) for one block of rows per core (slices covering 0..n_rows). Fewer than
    2 * MIN_ROWS_PER_BLOCK rows stay one block: splitting a small matrix costs more than it saves."""
    if n_rows < 2 * MIN_ROWS_PER_BLOCK:  # a decode step's rows: no pool to ask (3 µs a call before, 0.3 now)
        work(slice(0, n_rows))
        return
    blocks = max(1, min(usable_cores(), n_rows // MIN_ROWS_PER_BLOCK))
    step = -(-n_rows // blocks)
    for_each(lambda start: work(slice(start, start + step)), range(0, n_rows, step))
