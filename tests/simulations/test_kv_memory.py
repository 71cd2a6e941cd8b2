"""KV-cache memory kept from one request to the next (simulations/kv_memory.py): reused only when nothing views it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from simulations import kv_memory
from simulations.model import KVCache
from simulations.tiny import tiny_config


@pytest.fixture(autouse=True)
def no_kept_buffers(monkeypatch):
    monkeypatch.setattr(kv_memory, "_buffers", [])


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_finished_cache_s_memory_goes_to_the_next_cache_it_fits():
    config = tiny_config()
    first = KVCache.empty(config, 40)
    k_at, v_at = address(first.k), address(first.v)
    del first
    gc.collect()
    second = KVCache.empty(config, 30)  # smaller: the front of the same buffers
    assert {address(second.k), address(second.v)} == {k_at, v_at}
    assert second.k.shape == (config.n_layers, config.n_kv_heads, 30, config.head_dim)
    assert second.k.flags.c_contiguous and second.k.flags.writeable


def test_memory_still_viewed_is_never_handed_out_again():
    config = tiny_config()
    first = KVCache.empty(config, 40)
    keys = first.k[1, :, :5]  # a view kept after the cache is gone (as an observer might keep one)
    first.k[1, :, :5] = 7.0
    viewed, free = address(first.k), address(first.v)
    del first
    gc.collect()
    second = KVCache.empty(config, 40)
    second.k[...] = 0.0
    second.v[...] = 0.0
    assert viewed not in {address(second.k), address(second.v)}
    assert free in {address(second.k), address(second.v)}  # the values' buffer, which nothing views, is reused
    assert (keys == 7.0).all()


def test_two_live_caches_never_share_memory():
    config = tiny_config()
    a, b = KVCache.empty(config, 16), KVCache.empty(config, 16)
    arrays = [a.k, a.v, b.k, b.v]
    assert len({address(x) for x in arrays}) == 4
    for x in arrays:
        x[...] = 1.0
    for y, x in zip(arrays[1:], arrays, strict=False):
        assert not np.shares_memory(x, y)


def test_unviewed_buffers_too_small_for_a_new_cache_are_let_go_and_huge_ones_never_kept(monkeypatch):
    monkeypatch.setattr(kv_memory, "KEEP_BYTES", 6000 * 4)
    small, viewed = kv_memory.empty((1000,)), kv_memory.empty((2000,))
    del small
    gc.collect()
    larger = kv_memory.empty((3000,))  # nothing fits: the unviewed 1000 goes, the viewed 2000 stays
    assert kv_memory.kept_bytes() == (2000 + 3000) * 4
    kv_memory.empty((7000,))  # beyond KEEP_BYTES: handed out, not kept
    assert kv_memory.kept_bytes() == (2000 + 3000) * 4
    assert viewed.size == 2000 and larger.size == 3000
