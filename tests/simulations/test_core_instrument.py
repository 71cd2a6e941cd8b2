"""FLOPs and bytes counted from the operations actually run equal their closed-form formulas."""

from __future__ import annotations

import numpy as np
import pytest

import simulations.model as M
from simulations.instrument import InstrumentedRun, counting, expected_counts
from simulations.loader import load_model
from simulations.tiny import tiny_config, tiny_weights


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def closed_form(config, new: int, past: int, logits_rows: int = 1) -> dict:
    """Written out from the README's definitions, independently of instrument.expected_counts."""
    d, h, kv, hd, ff, v, layers = (config.d_model, config.n_heads, config.n_kv_heads, config.head_dim,
                                   config.d_ff, config.vocab_size, config.n_layers)
    per_layer_matrix = d * (h * hd) + 2 * d * (kv * hd) + (h * hd) * d + 3 * d * ff
    visible_pairs = sum(past + i + 1 for i in range(new))
    flops = layers * (2 * new * per_layer_matrix + 4 * h * hd * visible_pairs) + 2 * logits_rows * v * d
    weights = 4 * (layers * (per_layer_matrix + 2 * d) + d + v * d + new * d)
    return {"flops": flops, "weights": weights, "kv_read": 4 * 2 * layers * kv * hd * (past + new),
            "kv_written": 4 * 2 * layers * kv * hd * new}


def test_prefill_and_decode_counts_equal_the_closed_form(tiny):
    run = InstrumentedRun(tiny, 40)
    _, prefill = run.prefill(np.arange(3, 23))
    _, decode = run.decode(42)
    for stats, new, past in ((prefill, 20, 0), (decode, 1, 20)):
        want = closed_form(tiny.config, new, past)
        got = stats.counts.bytes_dict()
        assert stats.counts.flops == want["flops"]
        assert (got["weights"], got["kv_read"], got["kv_written"]) == (want["weights"], want["kv_read"],
                                                                        want["kv_written"])
        assert got["total"] == want["weights"] + want["kv_read"] + want["kv_written"]
        assert expected_counts(tiny.config, new, past) == want


def test_decode_reads_every_weight_once(tiny):
    """Tied embeddings: the LM head read is the embedding matrix; plus one embedding row."""
    run = InstrumentedRun(tiny, 8)
    run.prefill([5, 6, 7])
    _, stats = run.decode(8)
    assert stats.counts.weight_bytes == tiny.config.weight_bytes + tiny.config.d_model * 4


def test_recompute_writes_no_cache_and_matches_a_prefill_of_the_same_tokens(tiny):
    run = InstrumentedRun(tiny, 16)
    _, recompute = run.recompute(np.arange(3, 19))
    want = closed_form(tiny.config, 16, 0)
    assert recompute.counts.flops == want["flops"]
    assert recompute.counts.kv_written_bytes == 0
    assert recompute.counts.kv_read_bytes == want["kv_read"]


def test_qwen2_biases_are_counted_as_weights():
    config = tiny_config(qkv_bias=True, rope_style="half", tied_embeddings=False)
    weights = tiny_weights(config, seed=1)
    cache = M.KVCache.empty(config, 4)
    with counting() as counts:
        M.prefill(weights, config, np.array([3, 4]), cache)
    assert counts.weight_bytes == expected_counts(config, 2, 0)["weights"]
    # untied: the whole LM head is read, but only two rows of the embedding table
    assert counts.weight_bytes == 4 * (config.n_params - config.vocab_size * config.d_model + 2 * config.d_model)


def test_counting_restores_the_model_functions(tiny):
    before = (M.linear, M.attention, M.KVCache.write)
    with counting():
        assert M.linear is not before[0]
    assert (M.linear, M.attention, M.KVCache.write) == before


def test_counting_does_not_change_the_logits(tiny):
    ids = np.arange(3, 15)
    plain = M.forward_without_cache(tiny.weights, tiny.config, ids)
    with counting(capture_attention=True):
        counted = M.forward_without_cache(tiny.weights, tiny.config, ids)
    np.testing.assert_array_equal(plain, counted)


def test_decode_attention_is_captured_per_layer_and_sums_to_one(tiny):
    run = InstrumentedRun(tiny, 16, capture_attention=True)
    run.prefill(np.arange(3, 13))
    _, stats = run.decode(20)
    assert len(stats.counts.attention) == tiny.config.n_layers
    for weights in stats.counts.attention:
        assert weights.shape == (11,)
        assert weights.sum() == pytest.approx(1.0, abs=1e-5)
