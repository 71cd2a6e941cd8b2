"""GGUF loading: a Qwen2-style file written here loads and runs; broken files fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize

from simulations.errors import ModelFileError
from simulations.loader import load_model
from simulations.model import KVCache, forward_without_cache, prefill
from simulations.tiny import SPECIAL_TOKENS, tiny_config, tiny_tokenizer, tiny_weights

QWEN2 = tiny_config(name="qwen2-tiny-test", arch="qwen2", qkv_bias=True, rope_style="half", tied_embeddings=False,
                    d_model=64, d_ff=96, max_context=512, rope_theta=1000000.0, rms_eps=1e-6)


def write_gguf(path, config=QWEN2, weights=None, arch=None, quantize_ffn=False):
    """A GGUF with the tensor names and metadata llama.cpp's converter writes for this architecture."""
    arch = arch or config.arch
    weights = weights or tiny_weights(config, seed=7)
    writer = GGUFWriter(str(path), arch)
    writer.add_name(config.name)
    writer.add_block_count(config.n_layers)
    writer.add_context_length(config.max_context)
    writer.add_embedding_length(config.d_model)
    writer.add_feed_forward_length(config.d_ff)
    writer.add_head_count(config.n_heads)
    writer.add_head_count_kv(config.n_kv_heads)
    writer.add_rope_freq_base(config.rope_theta)
    writer.add_layer_norm_rms_eps(config.rms_eps)
    tokenizer = tiny_tokenizer()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokenizer.tokens)
    writer.add_token_types([3] * len(SPECIAL_TOKENS) + [1] * 256)
    writer.add_token_merges([])
    writer.add_eos_token_id(2)
    writer.add_chat_template(tokenizer.chat_template)
    q, kv = config.q_dim, config.kv_dim
    writer.add_tensor("token_embd.weight", weights.token_embedding)
    writer.add_tensor("output_norm.weight", weights.final_norm)
    writer.add_tensor("output.weight", weights.lm_head)
    for i, layer in enumerate(weights.layers):
        b = f"blk.{i}."
        writer.add_tensor(b + "attn_norm.weight", layer.attn_norm)
        for name, rows in (("attn_q", slice(0, q)), ("attn_k", slice(q, q + kv)), ("attn_v", slice(q + kv, None))):
            writer.add_tensor(b + name + ".weight", np.ascontiguousarray(layer.wqkv[rows]))
            writer.add_tensor(b + name + ".bias", np.ascontiguousarray(layer.bqkv[rows]))
        writer.add_tensor(b + "attn_output.weight", layer.wo)
        writer.add_tensor(b + "ffn_norm.weight", layer.mlp_norm)
        gate, up = layer.w_gate_up[: config.d_ff], layer.w_gate_up[config.d_ff :]
        for name, array in (("ffn_gate", gate), ("ffn_up", up), ("ffn_down", layer.w_down)):
            array = np.ascontiguousarray(array)
            if quantize_ffn:  # stored as Q8_0, like real files store most matrices quantized
                qtype = GGMLQuantizationType.Q8_0
                writer.add_tensor(b + name + ".weight", quantize(array, qtype),
                                  raw_dtype=qtype)
            else:
                writer.add_tensor(b + name + ".weight", array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return weights


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PD_CACHE_DIR", str(tmp_path / "cache"))


def test_a_qwen2_gguf_loads_and_runs_like_the_weights_it_was_written_from(tmp_path):
    path = tmp_path / "qwen2-tiny.gguf"
    weights = write_gguf(path)
    model = load_model(str(path))
    config = model.config
    assert (config.arch, config.qkv_bias, config.rope_style, config.tied_embeddings) == ("qwen2", True, "half", False)
    assert (config.n_layers, config.d_model, config.n_heads, config.n_kv_heads, config.d_ff) == (2, 64, 4, 2, 96)
    assert config.rope_theta == 1000000.0 and config.max_context == 512
    ids = model.tokenizer.encode(model.tokenizer.render_chat("你好, GGUF").text)
    loaded = prefill(model.weights, config, np.array(ids), KVCache.empty(config, len(ids)))[-1]
    direct = forward_without_cache(weights, QWEN2, np.array(ids))
    np.testing.assert_allclose(loaded, direct, atol=1e-4)
    assert len(model.fingerprint) == 64


def test_the_second_load_uses_the_float32_cache(tmp_path, monkeypatch):
    path = tmp_path / "qwen2-tiny.gguf"
    write_gguf(path, quantize_ffn=True)
    first = load_model(str(path))
    from simulations import gguf_loader, loader

    loader._loaded.clear()  # forget the in-process memo, keep the on-disk cache
    monkeypatch.setattr(gguf_loader, "_build_cache", lambda *a: pytest.fail("the file was dequantized again"))
    second = load_model(str(path))
    np.testing.assert_array_equal(first.weights.layers[1].w_gate_up, second.weights.layers[1].w_gate_up)


def test_quantized_tensors_are_dequantized_in_numpy_order(tmp_path):
    path = tmp_path / "q8.gguf"
    weights = write_gguf(path, quantize_ffn=True)
    model = load_model(str(path))
    down = weights.layers[0].w_down
    expected = dequantize(quantize(down, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q8_0)
    np.testing.assert_array_equal(model.weights.layers[0].w_down, expected)
    assert np.abs(model.weights.layers[0].w_down - down).max() < 0.02


def test_a_truncated_gguf_fails_naming_the_file_and_what_was_expected(tmp_path):
    good = tmp_path / "good.gguf"
    write_gguf(good)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(ModelFileError, match=r"broken\.gguf.*expected a GGUF model file of architecture llama or qwen2"):
        load_model(str(broken))


def test_a_file_that_is_not_gguf_fails_clearly(tmp_path):
    path = tmp_path / "notes.gguf"
    path.write_text("these are not model weights, just some text that is long enough")
    with pytest.raises(ModelFileError, match=r"notes\.gguf: not a readable GGUF file"):
        load_model(str(path))


def test_an_unsupported_architecture_is_named(tmp_path):
    path = tmp_path / "gpt2.gguf"
    write_gguf(path, config=tiny_config(name="x", arch="gpt2", qkv_bias=True, tied_embeddings=False))
    with pytest.raises(ModelFileError, match=r"gpt2\.gguf: architecture 'gpt2' is not supported — expected one of llama, qwen2"):
        load_model(str(path))


def test_a_missing_file_is_reported(tmp_path):
    with pytest.raises(ModelFileError, match="no such file"):
        load_model(str(tmp_path / "absent.gguf"))
