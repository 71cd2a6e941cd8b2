"""Run independent blocks of work on every core.

numpy runs element-wise work (softmax's exp, SiLU, RoPE) on one core, and only BLAS calls use
more. A batched pass (prefill) has plenty of independent work — rows of tokens, blocks of
queries — so it runs those blocks on Python threads (numpy releases the GIL) while BLAS stays
single-threaded inside each worker. Mixing the two kinds of threads costs a core: after a
multi-threaded call, OpenBLAS's own workers busy-wait for the next one (about 0.1 s), so a
batched pass does all its splitting itself, matrix products included (measured here: a 2048-token
prefill went from about 8 s to about 6.5 s). threadpoolctl drops whichever BLAS numpy loaded to one
thread for the parallel section and restores its count after. A single row (decode) never comes
here: its matrix-vector products keep BLAS's own threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np  # noqa: F401 -- loads numpy's BLAS before threadpoolctl looks for it
from threadpoolctl import ThreadpoolController

from .machine import available_cores

MIN_ROWS_PER_BLOCK = 64


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    """The thread pools of the libraries loaded so far, numpy's BLAS among them."""
    return ThreadpoolController()


@lru_cache(maxsize=4)
def _pool(pid: int) -> ThreadPoolExecutor | None:
    """One pool per process (keyed by pid: a forked child has none of its parent's threads)."""
    return ThreadPoolExecutor(available_cores(), thread_name_prefix="pd-blocks") if available_cores() > 1 else None


def for_each(work: Callable[[int], None], items: Iterable[int]) -> None:
    """Call work(item) for every item, in parallel when it pays; work must touch disjoint data."""
    items = list(items)
    pool = _pool(os.getpid()) if len(items) > 1 else None
    if pool is None:
        for item in items:
            work(item)
    else:
        with _blas().limit(limits=1, user_api="blas"):  # the blocks share the cores; BLAS in each stays on one
            for _ in pool.map(work, items):  # iterating re-raises any exception from a worker
                pass


def for_row_blocks(work: Callable[[slice], None], n_rows: int) -> None:
    """Call work(rows) for one block of rows per core (slices covering 0..n_rows).

    Fewer than 2 * MIN_ROWS_PER_BLOCK rows stay one block: splitting a small matrix costs more than
    it saves, and a single row (decode) keeps BLAS's own threads for its matrix-vector products.
    """
    blocks = max(1, min(available_cores(), n_rows // MIN_ROWS_PER_BLOCK))
    step = -(-n_rows // blocks)
    for_each(lambda start: work(slice(start, start + step)), range(0, n_rows, step))
