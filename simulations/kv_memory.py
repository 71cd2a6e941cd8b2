"""Memory for KV caches, kept from one request to the next, as an inference server keeps its KV memory.

A request's cache is two arrays of up to a few hundred MB (`model.KVCache.empty`). Allocated afresh for each
request, their pages were first written during the prefill, and those first writes cost more than the writes
themselves: a 2048-token prompt's prefill took 3689 ms with a new cache and 3515 with one used before (1024
tokens: 1436 against 1396; benchmarks/README.md) — the operating system's work, not the model's. A server
allocates its KV memory once (llama.cpp's context, vLLM's block pool); here the buffers of a finished request are
handed to the next cache they fit, once no array views them any more.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

KEEP_BYTES = 1 << 30  # buffers no cache uses are kept up to this many bytes, the smallest let go first
_buffers: list[np.ndarray] = []  # every buffer handed out and kept: flat float32 arrays
_lock = threading.Lock()


def _in_use(index: int) -> bool:
    # An array that views a buffer holds a reference to it (numpy's `base`); unviewed, only the list and
    # getrefcount's own argument refer to it.
    return sys.getrefcount(_buffers[index]) > 2


def empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised C-contiguous float32 array of `shape`: the front of the smallest kept buffer that fits and
    that no array views any more, else new memory (kept for later once it is let go)."""
    size = int(np.prod(shape, dtype=np.int64))
    with _lock:
        fits = [i for i in range(len(_buffers)) if _buffers[i].size >= size and not _in_use(i)]
        if fits:
            buffer = _buffers[min(fits, key=lambda i: _buffers[i].size)]
        else:
            buffer = np.empty(size, dtype=np.float32)
            _buffers.append(buffer)
            _let_go()
        return buffer[:size].reshape(shape)


def _let_go() -> None:
    """Drops unviewed buffers, the smallest first, until those left take at most KEEP_BYTES."""
    unused = sorted((i for i in range(len(_buffers)) if not _in_use(i)), key=lambda i: _buffers[i].nbytes)
    kept = sum(_buffers[i].nbytes for i in unused)
    dropped = set()
    for i in unused:
        if kept <= KEEP_BYTES:
            break
        kept -= _buffers[i].nbytes
        dropped.add(i)
    _buffers[:] = [buffer for i, buffer in enumerate(_buffers) if i not in dropped]


def kept_bytes() -> int:
    """Bytes of the buffers kept, viewed or not."""
    with _lock:
        return sum(buffer.nbytes for buffer in _buffers)
