"""Memory for the kernels' own copies of the weights: huge pages, an arena, a per-thread scratch, and a cache keyed by
object identity.

The copies the kernels read (`f32.weight_tiles`, `blocks.interleaved_blocks`) come from anonymous mappings the OS is
asked to back with 2 MiB pages (madvise MADV_HUGEPAGE), a chunk at a time: allocated one by one, most would land in
4 KiB pages, and streaming them costs TLB misses (lever `huge-page-arena`).
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np

from .tuning import ARENA_CHUNK, F32, HUGE_PAGE

_arena_lock = threading.Lock()
_arena = {"chunk": None, "used": 0}
_scratch = threading.local()


def huge_pages(size: int) -> np.ndarray:
    """`size` bytes (a multiple of 2 MiB) of an anonymous mapping the OS is asked to back with 2 MiB pages, starting
    on a 2 MiB boundary; unmapped once nothing holds a view of it."""
    mapping = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mapping.madvise(mmap.MADV_HUGEPAGE)
    raw = np.frombuffer(mapping, dtype=np.uint8)
    start = -raw.__array_interface__["data"][0] % HUGE_PAGE  # huge pages start on 2 MiB boundaries
    return raw[start:start + size]


def arena_array(shape: tuple[int, int], dtype) -> np.ndarray:
    """An empty array for a kernel's copy, 64-byte aligned, from the current huge-page chunk (a new one when it is
    full). A chunk is unmapped once neither the arena nor any copy carved from it holds it."""
    nbytes = shape[0] * shape[1] * np.dtype(dtype).itemsize
    if not hasattr(mmap, "MAP_ANONYMOUS"):  # not a POSIX system: ordinary memory
        return np.empty(shape, dtype=dtype)
    with _arena_lock:
        chunk = _arena["chunk"]
        if chunk is None or _arena["used"] + nbytes > chunk.size:
            chunk = _arena["chunk"] = huge_pages(max(ARENA_CHUNK, -(-nbytes // HUGE_PAGE) * HUGE_PAGE))
            _arena["used"] = 0
        memory = chunk[_arena["used"]:_arena["used"] + nbytes]
        _arena["used"] += -(-nbytes // 64) * 64  # the next copy on a cache line of its own
    return memory.view(dtype).reshape(shape)


def scratch_tiles(shape: tuple[int, int]) -> np.ndarray:
    """A float32 array in this thread's scratch on huge pages, kept for its next call (valid until then): where a
    prompt's product in a GGUF format dequantizes the tiles it drops at once (lever `dequantize-scratch`)."""
    nbytes = shape[0] * shape[1] * 4
    if not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=F32)
    memory = getattr(_scratch, "memory", None)
    if memory is None or memory.size < nbytes:
        memory = _scratch.memory = huge_pages(-(-nbytes // HUGE_PAGE) * HUGE_PAGE)
    return memory[:nbytes].view(F32).reshape(shape)


class IdentityCache:
    """Values kept for objects while they live, found by the object's identity; a weak reference tells the object
    from a later one given the same id. Faster than weakref.WeakKeyDictionary, whose lookup makes a weak reference
    each time (a decode step looks up its 121 matrices' copies; lever `identity-cache`)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, obj: object) -> object | None:
        entry = self._entries.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def put(self, obj: object, value: object) -> None:
        key = id(obj)

        def forget(reference: weakref.ref) -> None:
            if self._entries.get(key, (None,))[0] is reference:
                del self._entries[key]

        self._entries[key] = (weakref.ref(obj, forget), value)
