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

KEEP_BYTES = 1 << 30  # a larger buffer is not kept for another cache
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
            # None fits: the unviewed ones are too small for this cache, so they go before new memory is taken
            # (kept, they would raise the process's peak: a sweep's caches grow from prompt to prompt).
            _buffers[:] = [_buffers[i] for i in range(len(_buffers)) if _in_use(i)]
            buffer = np.empty(size, dtype=np.float32)
            if buffer.nbytes <= KEEP_BYTES:
                _buffers.append(buffer)
        return buffer[:size].reshape(shape)


def kept_bytes() -> int:
    """Bytes of the buffers kept, viewed or not."""
    with _lock:
        return sum(buffer.nbytes for buffer in _buffers)
