"""Weights in GGUF's formats (F16, Q8_0, Q4_0, Q4_1): the kernels compute what llama.cpp's reference
dequantization (`gguf.quants`) then numpy computes, and the model runs the same in every format."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simulations.model as M
from simulations import kernels, quantized
from simulations.convert import convert
from simulations.errors import WeightFormatError
from simulations.formats import (
    CHAPTER_PROMPT,
    agreement,
    answer_ids,
    measure,
    teacher_forced_logits,
)
from simulations.loader import bytes_per_weight, load_model, weights_nbytes
from simulations.model import KVCache, Weights, prefill
from simulations.quantized import BLOCK_BYTES, QuantizedWeight, quantize

BLOCK_FORMATS = ("q8_0", "q4_0", "q4_1")
RELATIVE = 2e-5  # float32 sums in another order than BLAS's


def close(got: np.ndarray, want: np.ndarray) -> None:
    scale = float(np.abs(want).max()) or 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=RELATIVE * scale * np.sqrt(want.shape[-1]))


def random_blocks(fmt: str, n_out: int, n_in: int, seed: int) -> QuantizedWeight:
    """Random stored bytes: scales (and Q4_1's minimums) of both signs, every weight value possible."""
    rng = np.random.default_rng(seed)
    if fmt == "f16":
        return QuantizedWeight("f16", (n_out, n_in), rng.standard_normal((n_out, n_in)).astype(np.float16))
    blocks = rng.integers(0, 256, size=(n_out, n_in // 32, BLOCK_BYTES[fmt]), dtype=np.uint8)
    halves = 2 if fmt == "q4_1" else 1  # d, and Q4_1's m
    scales = (rng.standard_normal((n_out, n_in // 32, halves)) * 0.05).astype(np.float16)
    scales[0, 0, 0] = -abs(scales[0, 0, 0]) or np.float16(-0.01)  # a negative scale, whatever the seed
    blocks[:, :, : 2 * halves] = scales.view(np.uint8)
    return QuantizedWeight(fmt, (n_out, n_in), blocks.reshape(n_out, -1))


@pytest.fixture(autouse=True)
def kernel_path():
    """The kernels are compared with numpy whatever PD_KERNELS the suite runs under."""
    with kernels.use("numba"):
        yield


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


# 3, 18, 1, 48 blocks a row; the last two shapes fill whole groups of rows (`kernels.interleaved_blocks`), the
# others leave the last group short
@pytest.mark.parametrize("fmt", ["f16", *BLOCK_FORMATS])
@pytest.mark.parametrize("rows", [1, 2, 5, 64])
@pytest.mark.parametrize(("n_out", "n_in"), [(70, 96), (257, 576), (3, 32), (5, 1536), (96, 576), (48, 1536)])
def test_kernel_equals_dequantize_then_numpy(fmt, rows, n_out, n_in):
    w = random_blocks(fmt, n_out, n_in, seed=rows * 7 + n_out)
    x = np.random.default_rng(rows).standard_normal((rows, n_in), dtype=np.float32)
    got = kernels.rows_times_blocks(x, w)
    assert got.dtype == np.float32 and got.shape == (rows, n_out)
    close(got, x @ w.dequantize().T)


@pytest.mark.parametrize("rows", [1, 3])
def test_half_rows_of_any_length_equal_dequantize_then_numpy(rows):
    """F16 rows whose length is no multiple of 32 (the kernel takes 32 halves at a time) have a loop of their own."""
    w = random_blocks("f16", 9, 40, seed=rows)
    x = np.random.default_rng(rows).standard_normal((rows, 40), dtype=np.float32)
    close(kernels.rows_times_blocks(x, w), x @ w.dequantize().T)


@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
def test_kernel_keeps_float32_precision_for_any_block_of_inputs(fmt):
    """With AVX-512 VNNI the kernel multiplies integers: each block of 32 inputs becomes three 8-bit digits under a
    power of two chosen from its largest |x| (`kernels._digits_of_rows`). Blocks whose largest |x| sits at the edges
    of that choice (127 · 2^-6 and just under 127.5 · 2^-6, where a digit could round to 128; a power of two), zeros,
    tiny and huge values, and one large input among small ones all give the reference's products, row by row."""
    rng = np.random.default_rng(5)
    small = rng.uniform(-1, 1, size=32).astype(np.float32)
    blocks = []
    for largest in (127 / 64, np.nextafter(np.float32(127.5 / 64), np.float32(0)), 127.499 / 64, 1.0, 0.5, -2.0):
        block = small.copy()
        block[7] = largest
        blocks.append(block)
    outlier = small * np.float32(1e-3)
    outlier[3] = 1e4
    blocks += [np.zeros(32, np.float32), small * np.float32(1e-30), small * np.float32(1e20), outlier]
    x = np.stack([np.concatenate([block, np.roll(block, 5) * np.float32(0.75)]) for block in blocks])  # 2 blocks a row
    w = random_blocks(fmt, 20, 64, seed=11)
    got = kernels.rows_times_blocks(x, w)
    want = (x.astype(np.float64) @ w.dequantize().astype(np.float64).T).astype(np.float32)
    for row in range(len(blocks)):
        close(got[row:row + 1], want[row:row + 1])


@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_non_finite_input_gives_non_finite_outputs(fmt, bad):
    """An overflowing activation is not hidden: a block holding an infinity or a NaN makes its row's outputs non-finite,
    as dequantize-then-numpy's are, whichever arithmetic the kernel uses; the other rows are untouched."""
    x = np.random.default_rng(2).standard_normal((3, 64), dtype=np.float32)
    x[1, 40] = bad
    w = random_blocks(fmt, 20, 64, seed=12)
    got = kernels.rows_times_blocks(x, w)
    assert not np.isfinite(got[1]).any()
    with np.errstate(invalid="ignore", over="ignore"):
        want = x @ w.dequantize().T
    close(got[[0, 2]], want[[0, 2]])


@pytest.mark.parametrize("fmt", ["f16", *BLOCK_FORMATS])
def test_tile_dequantization_is_the_reference_exactly(fmt):
    w = random_blocks(fmt, 90, 160, seed=3)
    np.testing.assert_array_equal(kernels.dequantize(w, 7, 61), w.dequantize(slice(7, 61)))


@pytest.mark.parametrize("fmt", ["f16", *BLOCK_FORMATS])
def test_dequantization_into_the_kernels_tiles_is_the_reference_regrouped(fmt):
    """A prompt's product with a quantized matrix dequantizes straight into the float32 kernel's tile order: the
    reference's values, each where `weight_tiles` would have put it."""
    w = random_blocks(fmt, 90, 160, seed=4)
    reference = np.ascontiguousarray(w.dequantize(slice(8, 48)))
    np.testing.assert_array_equal(kernels.dequantize(w, 8, 48, "tiles"), kernels.weight_tiles(reference))


@pytest.mark.parametrize("fmt", ["f16", *BLOCK_FORMATS])
@pytest.mark.parametrize("rows", [3, 100])
@pytest.mark.parametrize("path", ["numba", "numpy"])
def test_linear_dispatches_on_the_weight_type(monkeypatch, fmt, rows, path):
    """model.linear takes a QuantizedWeight as it takes a float32 matrix: decode rows and prefill tiles."""
    with kernels.use(path):
        monkeypatch.setattr(quantized, "TILE_ROWS", 40)  # several tiles, the last one short
        w = random_blocks(fmt, 130, 64, seed=rows)
        x = np.random.default_rng(1).standard_normal((rows, 64), dtype=np.float32)
        bias = np.arange(130, dtype=np.float32)
        close(M.linear(x, w, bias), x @ w.dequantize().T + bias)


def test_block_formats_need_whole_blocks():
    """GGUF stores rows in whole blocks of 32: another input dimension is refused, saying so."""
    matrix = np.ones((4, 40), dtype=np.float32)
    for fmt in BLOCK_FORMATS:
        with pytest.raises(WeightFormatError, match="multiple of 32, got 40"):
            quantize(matrix, fmt)
    assert quantize(matrix, "f16").shape == (4, 40)  # a float format has no blocks
    with pytest.raises(WeightFormatError, match="allowed: f32, f16, q8_0, q4_0, q4_1"):
        quantize(matrix, "q4_k")
    with pytest.raises(WeightFormatError, match="65504"):
        quantize(np.full((2, 32), 1e6, dtype=np.float32), "f16")


def test_bytes_per_weight_count_the_block_scales():
    matrix = np.random.default_rng(0).standard_normal((8, 64), dtype=np.float32)
    expected = {"f16": 2, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32}
    for fmt, width in expected.items():
        w = quantize(matrix, fmt)
        assert w.bytes_per_weight == width and w.nbytes == 8 * 64 * width


def test_quantized_values_are_llama_cpps(tiny):
    """Quantizing and dequantizing goes through gguf.quants: Q8_0 of a matrix is within half a step of it
    (and the f16 rounding of the step itself, up to 127 × 2⁻¹¹ of a step)."""
    matrix = tiny.weights.layers[0].wo
    w = quantize(matrix, "q8_0")
    step = np.abs(matrix).reshape(matrix.shape[0], -1, 32).max(axis=2, keepdims=True) / 127
    error = np.abs(w.dequantize() - matrix).reshape(step.shape[0], -1, 32)
    assert (error <= step * (0.5 + 127 * 2.0**-11) + 1e-7).all()


@pytest.mark.parametrize("fmt", ["f16", "q8_0", "q4_0", "q4_1"])
def test_a_converted_model_runs_the_same_forward_as_its_dequantized_weights(tiny, fmt, monkeypatch):
    """The model in a format gives the logits of a float32 model holding its dequantized weights, on the
    compiled path and on numpy's; no second copy: the norms are the float32 model's own arrays."""
    model = convert(tiny, fmt)
    assert model.weight_format == fmt and model.config is tiny.config
    assert model.weights.final_norm is tiny.weights.final_norm
    layers = [dataclasses.replace(layer, **{name: getattr(layer, name).dequantize() for name in
                                            ("wqkv", "wo", "w_gate_up", "w_down")}) for layer in model.weights.layers]
    table = model.weights.token_embedding.dequantize()
    dense = Weights(token_embedding=table, layers=layers, final_norm=tiny.weights.final_norm, lm_head=table)
    ids = np.arange(3, 40)
    want = prefill(dense, tiny.config, ids, KVCache.empty(tiny.config, 64), all_logits=True)
    for path in ("numba", "numpy"):
        with kernels.use(path):
            cache = KVCache.empty(tiny.config, 64)
            got = prefill(model.weights, tiny.config, ids[:-1], cache, all_logits=True)
            close(got, want[:-1])
            close(M.decode_step(model.weights, tiny.config, int(ids[-1]), cache), want[-1])


def test_the_cost_model_reads_the_formats_bytes(tiny):
    """Bytes per weight as held, block scales and float32 norms counted: between the format's nominal width
    and float32's, and the weights' bytes are what the arrays occupy."""
    assert bytes_per_weight(tiny) == 4
    for fmt, nominal in (("f16", 2), ("q8_0", 34 / 32), ("q4_1", 20 / 32)):
        model = convert(load_model("tiny"), fmt)
        assert model is convert(load_model("tiny"), fmt)  # converted once
        width = bytes_per_weight(model)
        assert nominal < width < nominal * 1.2
        assert width * tiny.config.shape.params == pytest.approx(weights_nbytes(model.weights))


def test_agreement_measures():
    logits = np.random.default_rng(0).standard_normal((5, 50)).astype(np.float32)
    same = agreement(logits, logits)
    assert same["top1_agreement"] == 1 and same["mean_kl"] == pytest.approx(0, abs=1e-12)
    flipped = agreement(logits, -logits)
    assert flipped["top1_agreement"] == 0 and flipped["mean_kl"] > 1


def test_measure_reports_every_format(tiny):
    result = measure(tiny, prompt_lengths=(16, 48), context_tokens=48, decode_steps=2, repeats=1,
                     accuracy_steps=6, peaks={"peak_gflops": 50.0, "peak_gbps": 10.0})
    formats = {row["format"]: row for row in result["formats"]}
    assert list(formats) == ["f32", "f16", "q8_0", "q4_1"]
    for row in formats.values():
        for key in ("name", "bits_per_weight", "weight_bytes", "ttft_ms", "decode_ms_per_token",
                    "bandwidth_utilization", "compute_utilization", "top1_agreement", "mean_kl"):
            assert key in row
        assert set(row["ttft_ms"]) == {"16", "48"}
        cached = row["cached_product"]  # the kernel with one matrix's bytes in the caches, beside their reading
        assert cached["matrix"] == "w_gate_up" and cached["us"] > 0
        assert cached["read_us"] == pytest.approx(1e6 * cached["bytes"] / 10e9)
        assert (row["dequantize_ms"] == 0) == (row["format"] == "f32")  # float32's copy is made once, not per prompt
        assert row["products_ms"] > 0 and row["products_spread_ms"][0] <= row["products_ms"]  # a step's products alone
    bits = [formats[f]["bits_per_weight"] for f in ("f32", "f16", "q8_0", "q4_1")]
    assert bits == sorted(bits, reverse=True) and bits[0] == 32
    assert formats["f32"]["top1_agreement"] == 1 and formats["f32"]["mean_kl"] == 0
    assert result["accuracy"]["prompt"] == CHAPTER_PROMPT and result["accuracy"]["answer_tokens"] == 6


def test_measure_without_peaks_takes_the_best_of_the_peaks_before_and_after_its_rounds(tiny, monkeypatch):
    """As the roofline does: F32's steps once ran at 1.15 times a stream measured only before them."""
    import simulations.formats as formats

    measured = iter([{"peak_gflops": 50.0, "peak_gbps": 10.0}, {"peak_gflops": 40.0, "peak_gbps": 12.0}])
    monkeypatch.setattr(formats, "measure_peaks", lambda: next(measured))
    result = measure(tiny, formats=["q8_0"], prompt_lengths=(16,), context_tokens=16, decode_steps=2, repeats=1,
                     accuracy_steps=2)
    assert (result["machine"]["peak_gflops"], result["machine"]["peak_gbps"]) == (50.0, 12.0)
    for row in result["formats"]:
        assert row["bandwidth_utilization"] == pytest.approx(row["decode"]["gbps"] / 12.0)


@pytest.mark.real_model
def test_the_files_4_bit_blocks_give_the_reference_logits():
    """SmolLM2's Q4_1 file, read as stored (Q4_1 layers, the Q8_0 embedding / LM head), gives the logits of
    the float32 model dequantized from the same file by gguf.quants, up to float32 rounding."""
    f32 = load_model("smollm2-135m")
    q4 = convert(f32, "q4_1")
    assert "121 of 121 matrices as the GGUF file stores them" in q4.source
    assert q4.weights.token_embedding.format == "q8_0" and q4.weights.layers[0].wqkv.format == "q4_1"
    ids, answer = answer_ids(f32, CHAPTER_PROMPT, 16)
    want = teacher_forced_logits(f32, ids, answer)
    got = teacher_forced_logits(q4, ids, answer)
    close(got, want)
    assert agreement(want, got)["top1_agreement"] == 1
