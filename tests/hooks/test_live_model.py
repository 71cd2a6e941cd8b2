"""The model a reader runs in the browser: the GGUF in SHA-256-named chunks with a manifest, and the block-format
kernels the browser multiplies it with, run from Python by wasmtime against llama.cpp's own dequantization."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from gguf.quants import dequantize, quantize

from hooks.demos import model_chunks
from simulations.convert import convert
from simulations.loader import load_model
from simulations.quantized import ggml_type
from tests.hooks.test_device import Kernels

TYPE_CODES = {"f32": 0, "q8_0": 1, "q4_1": 2}


@pytest.fixture(params=["relaxed", "simd"])
def kernels(request) -> Kernels:
    return Kernels(request.param)


def put_bytes(kernels: Kernels, data: bytes) -> int:
    ptr, kernels.used = kernels.used, kernels.used + (len(data) + 15) // 16 * 16 + 16
    kernels.memory.write(kernels.store, data, ptr)
    return ptr


@pytest.mark.parametrize("fmt", ["q8_0", "q4_1", "f32"])
@pytest.mark.parametrize(("T", "N", "K"), [(1, 7, 32), (1, 96, 64), (3, 130, 576), (4, 65, 64), (9, 200, 96)])
def test_block_format_product_equals_the_product_with_the_dequantized_matrix(kernels: Kernels, fmt: str, T: int,
                                                                            N: int, K: int):
    rng = np.random.default_rng(T * 1000 + N + K)
    w = rng.standard_normal((N, K)).astype(np.float32)
    x = rng.standard_normal((T, K)).astype(np.float32)
    stored = w if fmt == "f32" else quantize(w, ggml_type(fmt))
    reference = w if fmt == "f32" else np.asarray(dequantize(stored, ggml_type(fmt)), np.float32)
    wp = put_bytes(kernels, np.ascontiguousarray(stored).tobytes())
    xp = kernels.put(x)
    # y is a band of columns of a wider matrix: rows 3 N + 5 floats apart, columns from 2
    width = 3 * N + 5
    y0 = rng.standard_normal((T, width)).astype(np.float32)
    yp = kernels.put(y0)
    scratch = kernels.put(np.zeros(64 * K, np.float32))
    kernels("matmul_q", xp, wp, yp + 8, T, N, K, 1, TYPE_CODES[fmt], 4 * width, scratch)
    got = kernels.get(yp, (T, width))
    want = y0.copy()
    want[:, 2:2 + N] += x @ reference.T
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("fmt", ["q8_0", "q4_1"])
@pytest.mark.parametrize(("T", "N", "K"), [(1, 7, 32), (1, 96, 576), (2, 130, 1536), (3, 5, 64)])
def test_decode_product_in_registers_equals_the_product_with_the_dequantized_matrix(kernels: Kernels, fmt: str, T: int,
                                                                                   N: int, K: int):
    rng = np.random.default_rng(T * 1000 + N + K)
    w = (0.05 * rng.standard_normal((N, K)) + 0.01).astype(np.float32)
    x = rng.standard_normal((T, K)).astype(np.float32)
    stored = quantize(w, ggml_type(fmt))
    reference = np.asarray(dequantize(stored, ggml_type(fmt)), np.float32)
    wp = put_bytes(kernels, stored.tobytes())
    xp = kernels.put(x)
    y0 = rng.standard_normal((T, N)).astype(np.float32)
    yp = kernels.put(y0)
    scratch = kernels.put(np.zeros(T * K // 32 + 4, np.float32))
    kernels("f16_table", kernels.put(np.zeros(65536, np.float32)))  # as the page does before any product
    kernels("matvec_q", xp, wp, yp, T, N, K, 1, TYPE_CODES[fmt], 4 * N, scratch)
    want = y0 + x @ reference.T
    # Summed block by block (d times a block's sum): float32 rounding in another order, nothing more.
    np.testing.assert_allclose(kernels.get(yp, (T, N)), want, rtol=1e-4, atol=1e-5 * np.abs(x).sum(axis=1).max())


@pytest.mark.parametrize(("T", "N", "K"), [(1, 7, 32), (1, 96, 576), (2, 130, 1536), (3, 5, 64)])
def test_q4_1_decode_product_in_integers_equals_the_product_with_the_dequantized_matrix(kernels: Kernels, T: int,
                                                                                      N: int, K: int):
    """x's blocks as three 8-bit digits (2^-16 of the block's largest |x|) times Q4_1's nibbles, in integers: the
    float product within the digits' rounding; a block of zeros, one of tiny values and one of huge ones included."""
    rng = np.random.default_rng(T * 1000 + N + K + 1)
    w = (0.05 * rng.standard_normal((N, K)) + 0.01).astype(np.float32)
    x = rng.standard_normal((T, K)).astype(np.float32)
    x[0, :32] = 0
    if K >= 128:
        x[0, 32:64] *= 1e-30
        x[-1, 64:96] *= 1e30
    stored = quantize(w, ggml_type("q4_1"))
    reference = np.asarray(dequantize(stored, ggml_type("q4_1")), np.float64)
    wp = put_bytes(kernels, stored.tobytes())
    xp = kernels.put(x)
    y0 = rng.standard_normal((T, N)).astype(np.float32)
    yp = kernels.put(y0)
    scratch = kernels.put(np.zeros(T * K, np.float32))
    kernels("f16_table", kernels.put(np.zeros(65536, np.float32)))
    kernels("matvec_q4_1_int", xp, wp, yp, T, N, K, 1, 4 * N, scratch)
    want = y0 + x.astype(np.float64) @ reference.T
    # An element's three digits are within 2^(e-17) of it, and the block's largest |x| is at least 63.5 · 2^e: each
    # element is off by at most 1.2e-7 of its block's largest, a few times that of a typical element here.
    scale = np.abs(x).astype(np.float64) @ np.abs(reference).T + np.abs(y0)
    assert np.all(np.abs(kernels.get(yp, (T, N)) - want) <= 2e-6 * scale + 1e-30)


@pytest.mark.parametrize("table", [False, True])
@pytest.mark.parametrize("fmt", ["q8_0", "q4_1"])
def test_embedding_row_is_llama_cpps_dequantized_row(kernels: Kernels, fmt: str, table: bool):
    if table:  # every half float's value looked up, as the browser does, instead of computed
        kernels("f16_table", kernels.put(np.zeros(65536, np.float32)))
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((10, 96)) * np.array([1e-6, 1, 100, 2e4, 1, 1, 1, 1, 1, 1])[:, None]).astype(np.float32)
    stored = quantize(w, ggml_type(fmt))
    wp = put_bytes(kernels, stored.tobytes())
    out = kernels.put(np.zeros(96, np.float32))
    for row in range(10):  # tiny scales (subnormal halves) and large ones
        kernels("dequantize_row", wp, row, 96, TYPE_CODES[fmt], out)
        want = np.asarray(dequantize(stored[row:row + 1], ggml_type(fmt)), np.float32)[0]
        np.testing.assert_allclose(kernels.get(out, (96,)), want, rtol=1e-6, atol=1e-30)


def test_chunks_are_the_file_in_order_each_named_by_its_digest_and_at_most_32_mb(tmp_path):
    source = tmp_path / "model.gguf"
    source.write_bytes(np.random.default_rng(0).integers(0, 256, 2_500_001, dtype=np.uint8).tobytes())
    chunks = model_chunks.split_file(source, tmp_path / "chunks", chunk_bytes=1_000_000)
    assert [c.size for c in chunks] == [1_000_000, 1_000_000, 500_001]
    assert b"".join(c.path.read_bytes() for c in chunks) == source.read_bytes()
    for c in chunks:
        assert c.name == hashlib.sha256(c.path.read_bytes()).hexdigest() + ".bin"
    assert model_chunks.CHUNK_BYTES <= 32_000_000


def test_manifest_of_the_tiny_model_lists_its_tensors_tokenizer_and_template(tmp_path, monkeypatch):
    monkeypatch.setenv("PD_CACHE_DIR", str(tmp_path))
    tiny = load_model("tiny")
    path = model_chunks.model_file(tiny)
    chunks = model_chunks.split_file(path, tmp_path / "chunks")
    manifest = json.loads(model_chunks.manifest_for(path, chunks)[0])
    assert manifest["config"]["n_layers"] == tiny.config.n_layers
    types = {name: t["type"] for name, t in manifest["tensors"].items()}
    assert types["token_embd.weight"] == "q8_0" and types["blk.0.ffn_down.weight"] == "q4_1"
    assert types["blk.0.attn_norm.weight"] == "f32"
    data = path.read_bytes()
    embd = manifest["tensors"]["token_embd.weight"]
    stored = np.frombuffer(data[embd["offset"]:embd["offset"] + embd["bytes"]], np.uint8).reshape(embd["shape"][0], -1)
    np.testing.assert_allclose(np.asarray(dequantize(stored, ggml_type("q8_0"))), tiny.weights.token_embedding,
                               atol=0.02)
    assert manifest["tokenizer"]["chat_template"] == tiny.tokenizer.chat_template
    # The file reads back as the same model (what the browser's result is compared with).
    again = convert(load_model(str(path)), "q4_1")
    assert again.tokenizer.encode("héllo") == tiny.tokenizer.encode("héllo")


def test_a_setting_leaves_the_model_out(monkeypatch):
    monkeypatch.setenv("PD_LIVE_MODEL", "0")
    assert model_chunks.descriptor(load_model("tiny")) == {"available": False}
    monkeypatch.setenv("PD_LIVE_MODEL", " ")
    with pytest.raises(ValueError, match="PD_LIVE_MODEL is empty: allowed values are 1"):
        model_chunks.enabled()
