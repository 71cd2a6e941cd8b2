"""The numpy decoder: cached decode, prefill and full recompute agree; everything stays float32."""

from __future__ import annotations

import numpy as np
import pytest

import simulations.model as M
from simulations.cost import kv_bytes_per_token
from simulations.loader import load_model
from simulations.model import KVCache, decode_step, forward_without_cache, prefill
from simulations.tiny import tiny_config, tiny_weights

TOLERANCE = 2e-4  # float32 summation order differs between batched and single-token passes


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def prompt_ids(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(3, 259, n)


def test_decode_with_cache_matches_full_recompute_at_every_step(tiny):
    config, weights = tiny.config, tiny.weights
    ids = prompt_ids(40)
    cache = KVCache.empty(config, len(ids))
    logits = prefill(weights, config, ids[:8], cache)[-1]
    np.testing.assert_allclose(logits, forward_without_cache(weights, config, ids[:8]), atol=TOLERANCE)
    for n in range(8, len(ids)):
        logits = decode_step(weights, config, int(ids[n]), cache)
        np.testing.assert_allclose(logits, forward_without_cache(weights, config, ids[: n + 1]), atol=TOLERANCE)


def test_prefill_last_logits_equal_feeding_the_prompt_token_by_token(tiny):
    config, weights = tiny.config, tiny.weights
    ids = prompt_ids(33)
    batched = prefill(weights, config, ids, KVCache.empty(config, len(ids)))[-1]
    cache = KVCache.empty(config, len(ids))
    for token in ids:
        one_by_one = decode_step(weights, config, int(token), cache)
    np.testing.assert_allclose(batched, one_by_one, atol=TOLERANCE)


def test_prefill_in_query_blocks_matches_one_block(tiny, monkeypatch):
    """Chunked attention (needed for 4k-token prompts) computes the same function."""
    config, weights = tiny.config, tiny.weights
    ids = prompt_ids(50)
    whole = prefill(weights, config, ids, KVCache.empty(config, 50), all_logits=True)
    monkeypatch.setattr(M, "MAX_QUERY_BLOCK", 7)
    blocks = prefill(weights, config, ids, KVCache.empty(config, 50), all_logits=True)
    np.testing.assert_allclose(whole, blocks, atol=TOLERANCE)
    assert whole.shape == (50, config.vocab_size)


def test_prefill_split_into_row_blocks_matches_one_block(tiny, monkeypatch):
    """Projections, RoPE and the MLP run on blocks of tokens, one per core: same function."""
    import simulations.parallel as P

    config, weights = tiny.config, tiny.weights
    ids = prompt_ids(45)  # odd: the blocks differ in size
    monkeypatch.setattr(P, "MIN_ROWS_PER_BLOCK", 10**6)
    whole = prefill(weights, config, ids, KVCache.empty(config, 45), all_logits=True)
    monkeypatch.setattr(P, "MIN_ROWS_PER_BLOCK", 4)
    split = prefill(weights, config, ids, KVCache.empty(config, 45), all_logits=True)
    np.testing.assert_allclose(whole, split, atol=TOLERANCE)


def test_prefill_after_a_cached_prefix_continues_the_sequence(tiny):
    config, weights = tiny.config, tiny.weights
    ids = prompt_ids(30)
    cache = KVCache.empty(config, 30)
    prefill(weights, config, ids[:12], cache)
    continued = prefill(weights, config, ids[12:], cache)[-1]
    np.testing.assert_allclose(continued, forward_without_cache(weights, config, ids), atol=TOLERANCE)


@pytest.mark.parametrize("overrides", [{"qkv_bias": True, "rope_style": "half"}, {"tied_embeddings": False},
                                       {"n_kv_heads": 1}, {"n_kv_heads": 4}])
def test_variants_of_the_architecture_agree_between_cache_and_recompute(overrides):
    config = tiny_config(**overrides)
    weights = tiny_weights(config, seed=3)
    ids = prompt_ids(12)
    cache = KVCache.empty(config, 12)
    prefill(weights, config, ids[:6], cache)
    for n in range(6, 12):
        logits = decode_step(weights, config, int(ids[n]), cache)
    np.testing.assert_allclose(logits, forward_without_cache(weights, config, ids), atol=TOLERANCE)


class DtypeWatcher(M.Observer):
    """Notes the dtype of every array the model multiplies or attends with."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, np.dtype]] = []

    def matmul(self, x, w, b):
        self.seen += [("matmul input", x.dtype), ("weight", w.dtype)] + ([("bias", b.dtype)] if b is not None else [])

    def attention(self, q, k, v):
        self.seen += [("queries", q.dtype), ("keys", k.dtype), ("values", v.dtype)]


def test_every_activation_is_float32(tiny):
    """Every product's input (norm outputs, attention outputs, the MLP's hidden layer, the final
    norm) and every query, key and value: a float64 anywhere upstream would show up here."""
    watcher = DtypeWatcher()
    cache = KVCache.empty(tiny.config, 20)
    logits = [M.prefill(tiny.weights, tiny.config, prompt_ids(10), cache, observer=watcher),
              M.decode_step(tiny.weights, tiny.config, 5, cache, observer=watcher),
              M.forward_without_cache(tiny.weights, tiny.config, prompt_ids(10), observer=watcher)]
    assert {name for name, _ in watcher.seen} == {"matmul input", "weight", "queries", "keys", "values"}
    assert len(watcher.seen) == 3 * (tiny.config.n_layers * (4 * 2 + 3) + 2)  # 4 products, 3 attention inputs, LM head
    assert [(n, d) for n, d in watcher.seen if d != np.float32] == []
    assert all(x.dtype == np.float32 for x in logits)
    assert cache.k.dtype == cache.v.dtype == np.float32


def test_kv_cache_append_writes_in_place_and_counts_exact_bytes(tiny):
    config = tiny.config
    cache = KVCache.empty(config, 16)
    k_buffer, v_buffer = cache.k, cache.v
    addresses = (k_buffer.__array_interface__["data"][0], v_buffer.__array_interface__["data"][0])
    prefill(tiny.weights, config, prompt_ids(5), cache)
    for token in (7, 8, 9):
        decode_step(tiny.weights, config, token, cache)
    assert cache.k is k_buffer and cache.v is v_buffer
    assert (cache.k.__array_interface__["data"][0], cache.v.__array_interface__["data"][0]) == addresses
    assert cache.length == 8
    per_token = 2 * config.n_layers * config.n_kv_heads * config.head_dim * 4
    assert cache.bytes_per_token == per_token == kv_bytes_per_token(config.shape)
    assert cache.nbytes == 8 * per_token
    assert cache.k.nbytes + cache.v.nbytes == 16 * per_token  # its capacity


def test_kv_cache_refuses_to_overflow(tiny):
    cache = KVCache.empty(tiny.config, 4)
    prefill(tiny.weights, tiny.config, prompt_ids(4), cache)
    with pytest.raises(ValueError, match="KV cache full"):
        decode_step(tiny.weights, tiny.config, 5, cache)


def test_tiny_model_is_seeded_and_supports_long_contexts(tiny):
    again = tiny_weights(tiny.config, seed=0)
    np.testing.assert_array_equal(again.layers[0].wqkv, tiny.weights.layers[0].wqkv)
    assert tiny.config.max_context >= 8192
    assert tiny.config.shape.params == sum(a.size for a in _arrays(tiny.weights))


def _arrays(weights):
    yield weights.token_embedding
    yield weights.final_norm
    for layer in weights.layers:
        yield from (a for a in vars(layer).values() if a is not None)


def test_parallel_attention_blocks_restore_the_blas_thread_count(tiny, monkeypatch):
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before = blas_threads()
    monkeypatch.setattr(M, "MAX_QUERY_BLOCK", 4)
    prefill(tiny.weights, tiny.config, prompt_ids(20), KVCache.empty(tiny.config, 20))
    assert blas_threads() == before


def test_parallel_blocks_run_with_blas_on_one_thread_and_decode_keeps_its_threads(tiny, monkeypatch):
    """Batched work splits over the cores itself; a single row leaves BLAS its own threads."""
    from threadpoolctl import threadpool_info

    import simulations.parallel as P

    if P.available_cores() < 2 or not any(p["user_api"] == "blas" for p in threadpool_info()):
        pytest.skip("one core or no BLAS found: blocks run one after another")
    seen: list[int] = []

    def note_blas_threads(rows: slice) -> None:
        seen.append(min(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"))

    P.for_row_blocks(note_blas_threads, 4 * P.MIN_ROWS_PER_BLOCK)
    assert seen and set(seen) == {1}
    seen.clear()
    P.for_row_blocks(note_blas_threads, 1)
    assert seen == [max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")]
