"""The cost model's closed forms equal what the model really multiplies, counted on real passes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simulations.model as M
from simulations.cost import ModelShape, decode_cost, pass_cost, prefill_cost, weight_bytes
from simulations.generate import AttentionCapture, generate
from simulations.loader import load_model
from simulations.projection_data import load_data
from simulations.tiny import tiny_config, tiny_weights
from tests.simulations.counting import Counting


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def norm_bytes(weights: M.Weights) -> int:
    """The norm vectors: applied once per pass, element-wise (not matrix products)."""
    return weights.final_norm.nbytes + sum(layer.attn_norm.nbytes + layer.mlp_norm.nbytes for layer in weights.layers)


def closed_form(config, new: int, past: int, logits_rows: int = 1) -> dict:
    """Written out from the README's definitions, independently of cost.py."""
    d, h, kv, hd, ff, v, layers = (config.d_model, config.n_heads, config.n_kv_heads, config.head_dim,
                                   config.d_ff, config.vocab_size, config.n_layers)
    per_layer_matrix = d * (h * hd) + 2 * d * (kv * hd) + (h * hd) * d + 3 * d * ff
    visible_pairs = sum(past + i + 1 for i in range(new))
    flops = layers * (2 * new * per_layer_matrix + 4 * h * hd * visible_pairs) + 2 * logits_rows * v * d
    weights = 4 * (layers * (per_layer_matrix + 2 * d) + d + v * d + new * d)
    return {"flops": flops, "weights": weights, "kv_read": 4 * 2 * layers * kv * hd * (past + new),
            "kv_written": 4 * 2 * layers * kv * hd * new}


def test_prefill_and_decode_counted_on_real_passes_equal_the_cost_model(tiny):
    config, weights = tiny.config, tiny.weights
    cache = M.KVCache.empty(config, 40)
    for new, past, run in ((20, 0, lambda o: M.prefill(weights, config, np.arange(3, 23), cache, observer=o)),
                           (1, 20, lambda o: M.decode_step(weights, config, 42, cache, observer=o))):
        counted, kv_before = Counting(), cache.nbytes
        run(counted)
        cost = pass_cost(config.shape, new, past)
        assert counted.flops == cost.flops
        assert counted.matrix_bytes + norm_bytes(weights) + new * config.d_model * 4 == cost.weight_bytes
        assert counted.kv_read == cost.kv_read_bytes
        assert cache.nbytes - kv_before == cost.kv_written_bytes
        want = closed_form(config, new, past)
        assert cost.bytes_dict() == {**{k: want[k] for k in ("weights", "kv_read", "kv_written")},
                                     "total": want["weights"] + want["kv_read"] + want["kv_written"]}
        assert cost.flops == want["flops"]


def test_prefill_with_all_logits_runs_the_lm_head_on_every_row(tiny):
    counted = Counting()
    M.prefill(tiny.weights, tiny.config, np.arange(3, 15), M.KVCache.empty(tiny.config, 12), all_logits=True,
              observer=counted)
    assert counted.flops == pass_cost(tiny.config.shape, 12, logits_rows=12).flops == closed_form(
        tiny.config, 12, 0, logits_rows=12)["flops"]


def test_decode_reads_every_weight_once(tiny):
    """Tied embeddings: the LM head read is the embedding matrix; plus one embedding row."""
    assert decode_cost(tiny.config.shape, 3).weight_bytes == weight_bytes(tiny.config.shape) + tiny.config.d_model * 4


def test_recompute_writes_no_cache_and_costs_what_a_prefill_of_the_same_tokens_does(tiny):
    counted = Counting()
    M.forward_without_cache(tiny.weights, tiny.config, np.arange(3, 19), observer=counted)
    recompute = pass_cost(tiny.config.shape, 16, cached=False)
    assert counted.flops == recompute.flops == closed_form(tiny.config, 16, 0)["flops"]
    assert counted.kv_read == recompute.kv_read_bytes == closed_form(tiny.config, 16, 0)["kv_read"]
    assert recompute.kv_written_bytes == 0


def test_qwen2_biases_are_counted_as_weights():
    config = tiny_config(qkv_bias=True, rope_style="half", tied_embeddings=False)
    weights = tiny_weights(config, seed=1)
    counted = Counting()
    M.prefill(weights, config, np.array([3, 4]), M.KVCache.empty(config, 4), observer=counted)
    cost = prefill_cost(config.shape, 2)
    assert counted.matrix_bytes + norm_bytes(weights) + 2 * config.d_model * 4 == cost.weight_bytes
    # untied: the whole LM head is read, but only two rows of the embedding table
    assert cost.weight_bytes == 4 * (config.shape.params - config.vocab_size * config.d_model + 2 * config.d_model)


def test_parameter_count_is_every_array_of_the_model(tiny):
    arrays = [tiny.weights.token_embedding, tiny.weights.final_norm,
              *(a for layer in tiny.weights.layers for a in vars(layer).values() if a is not None)]
    assert tiny.config.shape.params == sum(a.size for a in arrays)
    assert weight_bytes(tiny.config.shape) == 4 * tiny.config.shape.params


def test_shapes_from_models_json_give_each_models_published_parameter_count():
    for model_id, entry in load_data("models")["models"].items():
        published = entry["params"]["value"] if isinstance(entry["params"], dict) else entry["params"]
        assert ModelShape.from_models_json(entry).params == pytest.approx(published, rel=0.01), model_id


def test_widths_scale_weight_and_kv_bytes_but_not_flops(tiny):
    shape = tiny.config.shape
    fp32, fp16 = decode_cost(shape, 100), decode_cost(shape, 100, bytes_per_weight=2, bytes_per_kv_value=2)
    q4 = decode_cost(shape, 100, bytes_per_weight=4.5 / 8)
    assert fp16.flops == q4.flops == fp32.flops
    assert fp16.weight_bytes == fp32.weight_bytes / 2 and fp16.kv_read_bytes == fp32.kv_read_bytes / 2
    assert q4.weight_bytes == pytest.approx(fp32.weight_bytes * 4.5 / 32)


def test_prefill_is_compute_heavy_and_decode_memory_heavy(tiny):
    shape = tiny.config.shape
    assert prefill_cost(shape, 512).intensity > 10 * decode_cost(shape, 512).intensity


@pytest.mark.parametrize("overrides", [{}, {"qkv_bias": True, "tied_embeddings": False, "arch": "qwen2"}])
def test_the_summary_a_trace_carries_gives_back_the_models_shape(tiny, overrides):
    from simulations.loader import model_summary

    model = dataclasses.replace(tiny, config=tiny_config(**overrides))
    assert ModelShape.from_summary(model_summary(model)) == model.config.shape


def test_observing_a_pass_does_not_change_its_logits(tiny):
    ids = np.arange(3, 15)
    plain = M.forward_without_cache(tiny.weights, tiny.config, ids)
    observed = M.forward_without_cache(tiny.weights, tiny.config, ids, observer=Counting())
    np.testing.assert_array_equal(plain, observed)


def test_generating_replaces_no_function_of_the_model(tiny):
    before = dict(vars(M)), dict(vars(M.KVCache))
    for _ in generate(tiny, [5, 6, 7], max_new_tokens=3, attention=True, stop_at_eos=False):
        assert (dict(vars(M)), dict(vars(M.KVCache))) == before


def test_decode_attention_is_captured_per_layer_and_sums_to_one(tiny):
    cache = M.KVCache.empty(tiny.config, 16)
    M.prefill(tiny.weights, tiny.config, np.arange(3, 13), cache)
    capture = AttentionCapture()
    M.decode_step(tiny.weights, tiny.config, 20, cache, observer=capture)
    per_layer = capture.per_layer()
    assert per_layer.shape == (tiny.config.n_layers, 11)
    np.testing.assert_allclose(per_layer.sum(axis=1), 1.0, atol=1e-5)
