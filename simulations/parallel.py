"""Run independent blocks of work on every core.

numpy runs element-wise work (softmax's exp, SiLU, RoPE) on one core, and only BLAS calls use
more. A batched pass (prefill) has plenty of independent work — rows of tokens, blocks of
queries — so it runs those blocks on Python threads (numpy releases the GIL) while BLAS stays
single-threaded inside each worker. Mixing the two kinds of threads costs a core: after a
multi-threaded call, OpenBLAS's own workers busy-wait for the next one (about 0.1 s), so a
batched pass does all its splitting itself, matrix products included (measured here: a 2048-token
prefill went from about 8 s to about 6.5 s). OpenBLAS (numpy's default BLAS) lets us drop to one BLAS
thread for the parallel section and restore the count after (its "thread-local" setting turned
out to leak into the main thread); with any other BLAS the blocks simply run one after another.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np

MIN_ROWS_PER_BLOCK = 64


@lru_cache(maxsize=1)
def _openblas_threads() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's (get, set) thread-count functions from the library numpy loaded, if it is OpenBLAS."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("*openblas*.so*")) if libs.is_dir() else []:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for suffix in ("64_", "_64", ""):
            for prefix in ("scipy_openblas", "openblas"):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    get.restype, set_.argtypes, set_.restype = ctypes.c_int, [ctypes.c_int], None
                    return get, set_
    return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@lru_cache(maxsize=4)
def _pool(pid: int) -> ThreadPoolExecutor | None:
    """One pool per process (keyed by pid: a forked child has none of its parent's threads)."""
    if _openblas_threads() is None or _cores() < 2:
        return None
    return ThreadPoolExecutor(_cores(), thread_name_prefix="pd-blocks")


def for_each(work: Callable[[int], None], items: Iterable[int]) -> None:
    """Call work(item) for every item, in parallel when it pays; work must touch disjoint data."""
    items = list(items)
    pool = _pool(os.getpid()) if len(items) > 1 else None
    if pool is None:
        for item in items:
            work(item)
    else:
        get_threads, set_threads = _openblas_threads()
        previous = get_threads()
        set_threads(1)  # the blocks share the cores; BLAS inside each block stays on one
        try:
            for _ in pool.map(work, items):  # iterating re-raises any exception from a worker
                pass
        finally:
            set_threads(previous)


def for_row_blocks(work: Callable[[slice], None], n_rows: int) -> None:
    """Call work(rows) for one block of rows per core (slices covering 0..n_rows).

    Fewer than 2 * MIN_ROWS_PER_BLOCK rows stay one block: splitting a small matrix costs more than
    it saves, and a single row (decode) keeps BLAS's own threads for its matrix-vector products.
    """
    blocks = max(1, min(_cores(), n_rows // MIN_ROWS_PER_BLOCK))
    step = -(-n_rows // blocks)
    for_each(lambda start: work(slice(start, start + step)), range(0, n_rows, step))
