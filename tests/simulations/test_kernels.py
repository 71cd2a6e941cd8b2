"""The compiled decode kernels compute what the numpy model defines (PD_KERNELS=numpy is the reference)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simulations.model as M
from simulations import kernels, machine
from simulations.generate import generate
from simulations.loader import load_model
from simulations.model import KVCache, decode_attention, decode_batch, prefill

REPO = Path(__file__).resolve().parents[2]
FORMATS_TESTS = str(Path(__file__).with_name("test_formats.py"))

RELATIVE = 2e-5  # float32: the kernels sum in another order (vectorised, in parts) than BLAS


def close(got: np.ndarray, want: np.ndarray) -> None:
    scale = float(np.abs(want).max()) or 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=RELATIVE * scale * np.sqrt(want.shape[-1]))


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


@pytest.fixture(autouse=True)
def kernel_path():
    """These tests compare the kernels with numpy whatever PD_KERNELS the suite runs under."""
    with kernels.use("numba"):
        yield


# every mix of the tiles' sizes, and a prompt's rows in pieces of MAX_KERNEL_ROWS (a whole piece and a partial one)
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 11, 12, 15, 17, 64, 65, 139])
@pytest.mark.parametrize(("n_out", "n_in"), [(960, 576), (7, 13), (1031, 577), (4, 1)])
def test_rows_times_weight_equals_numpy(rows, n_out, n_in):
    rng = np.random.default_rng(rows * 1000 + n_out)
    x = rng.standard_normal((rows, n_in), dtype=np.float32)
    w = rng.standard_normal((n_out, n_in), dtype=np.float32)
    got = kernels.rows_times_weight(x, w)
    assert got.dtype == np.float32 and got.shape == (rows, n_out)
    close(got, x @ w.T)


@pytest.mark.parametrize("shape", [(33, 20), (64, 64)])  # the fallback loop's and the tiles'
def test_rows_times_weight_reads_a_read_only_memory_map(tmp_path, shape):
    """Read-only arrays (a memory map opened "r") still work: the kernel only reads its weights."""
    w = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    np.save(tmp_path / "w.npy", w)
    mapped = np.load(tmp_path / "w.npy", mmap_mode="r").view(np.ndarray)
    x = np.ones((3, shape[1]), dtype=np.float32)
    close(kernels.rows_times_weight(x, mapped), x @ w.T)


def test_every_matrix_is_multiplied_by_its_own_tiles_and_they_go_with_it():
    """The tiles a matrix's first product makes are used for that matrix only: not for another part of the same
    array, nor for a later matrix that numpy allocates at the same address, and they are freed with it."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 64), dtype=np.float32)
    kept = len(kernels._weight_tiles)
    for _ in range(20):  # numpy's allocator hands a freed block of this size straight back
        w = rng.standard_normal((64, 64), dtype=np.float32)
        close(kernels.rows_times_weight(x, w), x @ w.T)
        close(kernels.rows_times_weight(x, w[32:]), x @ w[32:].T)  # another part: another address
        close(kernels.rows_times_weight(x, w.view(np.ndarray)), x @ w.T)  # a new view of the same matrix
        del w
    first, second = (rng.standard_normal((64, 64), dtype=np.float32) for _ in range(2))  # both alive
    for w in (first, second, first):
        close(kernels.rows_times_weight(x, w), x @ w.T)
    del first, second, w
    assert len(kernels._weight_tiles) == kept


@pytest.mark.parametrize("rows", [1, 3, 64, 300])
def test_element_wise_kernels_equal_numpy(rows, monkeypatch):
    """rms_norm and RoPE (both pair layouts) compute what the numpy path does."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 576), dtype=np.float32)
    weight = rng.standard_normal(576, dtype=np.float32)
    heads = rng.standard_normal((rows, 12, 64), dtype=np.float32)
    cos, sin = M.rope_angles(np.arange(100, 100 + rows), 64, 10000.0)
    assert kernels.elementwise(x)
    compiled = [M.rms_norm(x, weight, 1e-5), M.rope(heads, cos, sin, "half"), M.rope(heads, cos, sin, "interleaved")]
    with kernels.use("numpy"):
        assert not kernels.elementwise(x)
        reference = [M.rms_norm(x, weight, 1e-5), M.rope(heads, cos, sin, "half"), M.rope(heads, cos, sin, "interleaved")]
        for got, want in zip(compiled, reference, strict=True):
            assert got.dtype == np.float32 and got.shape == want.shape
            close(got, want)


def test_softmax_numerators_equal_numpy_and_give_exact_zeros_and_ones():
    """Prefill's softmax: exp(score - its row's maximum) within a few float32 roundings of numpy's, exactly 1 at the
    maximum and exactly 0 for a masked score (-inf) or one below float32's normal range; and each row's sum. (The
    exp's saturation, never inf, is the MLP gate's: below.)"""
    rng = np.random.default_rng(0)
    scores = 5 - 20 * rng.random((30, 100), dtype=np.float32)
    scores[0, :3] = [5, -np.inf, -110]  # row 0: its maximum first, then a masked score and one exp(-115) away
    want = np.exp((scores - scores.max(axis=-1, keepdims=True)).astype(np.float64))  # numpy's path subtracts in float32
    got = scores.copy()
    sums = kernels.softmax_numerators(got)
    assert got.dtype == np.float32 and sums.shape == (30, 1)
    assert (got[np.arange(30), scores.argmax(axis=-1)] == 1).all()
    assert got[0, 1] == 0 and got[0, 2] == 0
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6)
    np.testing.assert_allclose(got[0, 3:], want[0, 3:], rtol=1e-6)
    np.testing.assert_allclose(sums[:, 0], got.sum(axis=-1, dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(sums[:, 0], want.sum(axis=-1), rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 5, 300])
def test_the_mlp_gate_equals_numpy(rows):
    """silu(gate) * up, also where exp(-gate) over- and underflows (gate far from 0)."""
    rng = np.random.default_rng(rows)
    gate_up = 4 * rng.standard_normal((rows, 2 * 1537), dtype=np.float32)
    gate_up[0, :4] = [-200, -90, 90, 200]
    hidden = np.empty((rows, 1537), dtype=np.float32)
    kernels.silu_gate(gate_up, hidden)
    want = M.silu(gate_up[:, :1537]) * gate_up[:, 1537:]
    assert np.isfinite(hidden).all()
    close(hidden, want)


@pytest.mark.parametrize("path", ["numba", "numpy"])
def test_prefill_gives_the_same_logits_on_either_path(tiny, path, monkeypatch):
    """Prefill's attention and MLP gate go through the compiled exp on the kernel path: same logits."""
    ids = np.random.default_rng(5).integers(3, 259, 300)
    with kernels.use(path):
        logits = prefill(tiny.weights, tiny.config, ids, KVCache.empty(tiny.config, 300), all_logits=True)
    with kernels.use("numpy"):
        reference = prefill(tiny.weights, tiny.config, ids, KVCache.empty(tiny.config, 300), all_logits=True)
    close(logits, reference)


def test_linear_uses_the_kernel_for_any_rows_its_tiles_fit_and_blas_for_many_rows_of_others(monkeypatch):
    calls = []
    real = kernels.rows_times_weight
    monkeypatch.setattr(kernels, "rows_times_weight", lambda x, w: calls.append(x.shape) or real(x, w))
    tiled = np.ones((kernels.TILE_OUTPUTS, 8), dtype=np.float32)  # whole groups of rows, whole turns of columns
    other = np.ones((8, 4), dtype=np.float32)  # fewer rows than a group
    M.linear(np.ones((3 * kernels.MAX_KERNEL_ROWS + 1, tiled.shape[1]), dtype=np.float32), tiled)  # a prompt's rows
    M.linear(np.ones((kernels.MAX_KERNEL_ROWS, 4), dtype=np.float32), other)
    M.linear(np.ones((kernels.MAX_KERNEL_ROWS + 1, 4), dtype=np.float32), other)  # BLAS
    with kernels.use("numpy"):
        M.linear(np.ones((1, 4), dtype=np.float32), other)
        assert calls == [(3 * kernels.MAX_KERNEL_ROWS + 1, tiled.shape[1]), (kernels.MAX_KERNEL_ROWS, 4)]


def test_compiled_code_goes_to_the_per_user_cache_even_when_numba_was_imported_first(tmp_path):
    """A script that imports numba before the simulations (a benchmark, an experiment) must not leave numba's cache
    files beside the sources."""
    env = {**os.environ, "PD_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    code = "import numba\nfrom simulations import kernels\nkernels.configure()\nprint(numba.config.CACHE_DIR)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == str(tmp_path / "numba"), result.stdout + result.stderr


def test_an_unknown_kernel_setting_names_the_allowed_values(monkeypatch):
    monkeypatch.setenv("PD_KERNELS", "cuda")
    with pytest.raises(ValueError, match="PD_KERNELS='cuda'.*numba, numpy"):
        kernels.path_setting()


# SmolLM2's heads (9 query heads, 3 KV heads of 64) at contexts shorter than a block of keys, of whole blocks and
# not, in one part and in several; then other shapes: the tiny model's (2 heads of 16 to a KV head), a head dimension
# of no whole vectors (48), 8 vectors with AVX-512 (128), one query head a KV head.
@pytest.mark.parametrize(("sequences", "context", "heads", "kv_heads", "hd"), [
    (1, 1, 9, 3, 64), (1, 2, 9, 3, 64), (1, 255, 9, 3, 64), (1, 257, 9, 3, 64), (1, 4096, 9, 3, 64), (3, 100, 9, 3, 64),
    (8, 513, 9, 3, 64), (64, 512, 9, 3, 64), (2, 300, 4, 2, 16), (3, 77, 8, 2, 48), (2, 600, 8, 1, 128),
    (2, 40, 4, 4, 32)])
def test_one_token_attention_equals_numpy(sequences, context, heads, kv_heads, hd):
    rng = np.random.default_rng(sequences * 7 + context)
    layers, spare = 2, 5
    shape = (layers, sequences + 2, kv_heads, context + spare, hd)
    keys, values = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
    keys[..., context:, :] = np.nan  # rows past every sequence's length must not be read
    q = 4 * rng.standard_normal((sequences, heads, hd), dtype=np.float32)  # sharp softmax: the max matters
    lengths = rng.integers(1, context + 1, sequences)
    lengths[0] = context
    got = kernels.one_token_attention(q, keys, values, 1, 2, lengths)
    end = int(lengths.max())
    want = decode_attention(q, np.nan_to_num(keys[1, 2:2 + sequences, :, :end]), values[1, 2:2 + sequences, :, :end],
                            lengths)
    assert np.isfinite(got).all()
    close(got, want)


def test_one_token_attention_of_a_nan_query_is_nan_as_in_numpy():
    """A model gone wrong (a NaN in its queries) gets NaN back, as from the numpy path, not an exception."""
    rng = np.random.default_rng(5)
    keys = rng.standard_normal((1, 2, 3, 40, 64), dtype=np.float32)
    q = rng.standard_normal((2, 9, 64), dtype=np.float32)
    q[1] = np.nan
    got = kernels.one_token_attention(q, keys, keys, 0, 0, np.array([40, 40]))
    want = decode_attention(q, keys[0], keys[0], np.array([40, 40]))
    assert np.isnan(got[1]).all() and np.isnan(want[1]).all()
    close(got[0], want[0])


# (new tokens, keys before them, query heads, KV heads, head dimension): one token; a prompt shorter than a key block,
# across several and not a whole number of them; a chunk after earlier ones; grouped queries 3 and 4 to a KV head,
# one (multi-head), and one KV head for all; head dimensions of 1 to 4 vectors and more.
@pytest.mark.parametrize(("new", "past", "heads", "kv_heads", "hd"), [
    (1, 0, 9, 3, 64), (5, 0, 9, 3, 64), (64, 0, 9, 3, 64), (139, 0, 9, 3, 64), (300, 0, 4, 2, 16),
    (7, 100, 9, 3, 64), (70, 200, 8, 2, 48), (33, 0, 4, 4, 32), (17, 3, 8, 1, 80), (20, 0, 2, 2, 128)])
def test_prompt_attention_equals_numpy(new, past, heads, kv_heads, hd, monkeypatch):
    """As the model calls it: queries a view into the fused QKV product, keys and values views of a cache whose
    rows after the last token hold NaN (never read)."""
    rng = np.random.default_rng(new * 1000 + past)
    fused = 3 * rng.standard_normal((new, heads + 2 * kv_heads, hd), dtype=np.float32)  # sharp softmax: the max matters
    q = fused[:, :heads]
    cache = rng.standard_normal((2, kv_heads, past + new + 70, hd), dtype=np.float32)
    cache[:, :, past + new:] = np.nan
    keys, values = cache[0, :, :past + new], cache[1, :, :past + new]
    got = kernels.prompt_attention(q, keys, values)
    with kernels.use("numpy"):
        want = M.attention(q, keys, values)
        assert got.shape == (new, heads * hd) and np.isfinite(got).all()
        close(got, want)


def test_the_model_attends_over_a_prompt_with_the_kernel(monkeypatch):
    calls = []
    real = kernels.prompt_attention
    monkeypatch.setattr(kernels, "prompt_attention", lambda q, k, v: calls.append(q.shape) or real(q, k, v))
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((5, 4, 32), dtype=np.float32), rng.standard_normal((2, 5, 32), dtype=np.float32)
    M.attention(q, k, k)
    with kernels.use("numpy"):
        M.attention(q, k, k)
        assert calls == [(5, 4, 32)]


def test_decode_steps_with_kernels_equal_the_numpy_path(tiny, monkeypatch):
    config, weights = tiny.config, tiny.weights
    ids = np.random.default_rng(3).integers(3, 259, 40)

    def logits_of_every_step() -> np.ndarray:
        cache = KVCache.empty(config, len(ids))
        prefill(weights, config, ids[:9], cache)
        return np.stack([M.decode_step(weights, config, int(t), cache) for t in ids[9:]])

    with_kernels = logits_of_every_step()
    with kernels.use("numpy"):
        close(with_kernels, logits_of_every_step())


def test_batched_decode_with_kernels_equals_the_numpy_path(tiny, monkeypatch):
    config, weights = tiny.config, tiny.weights
    rng = np.random.default_rng(4)

    def step(users: int) -> np.ndarray:
        caches = KVCache.batch(config, users, 40)
        for user, cache in enumerate(caches):
            prefill(weights, config, rng.integers(3, 259, 5 + 3 * user), cache)  # unequal lengths
        return decode_batch(weights, config, list(range(3, 3 + users)), caches)

    for users in (1, 2, 7):
        rng = np.random.default_rng(users)
        with_kernels = step(users)
        with kernels.use("numpy"):
            rng = np.random.default_rng(users)
            close(with_kernels, step(users))


def greedy_tokens(model, prompt_text: str, steps: int) -> list[int]:
    prompt = model.tokenizer.encode(model.tokenizer.render_chat(prompt_text).text)
    return [step.token for step in generate(model, prompt, max_new_tokens=steps, stop_at_eos=False)]


def test_generation_with_kernels_gives_the_numpy_paths_tokens_on_the_tiny_model(tiny, monkeypatch):
    with_kernels = greedy_tokens(tiny, "Explain quantum computing in three sentences.", 24)
    with kernels.use("numpy"):
        assert greedy_tokens(tiny, "Explain quantum computing in three sentences.", 24) == with_kernels


CHAPTER_PROMPTS = ("Explain quantum computing in three sentences.", "请用三句话介绍量子计算")


@pytest.mark.real_model
@pytest.mark.parametrize("prompt", CHAPTER_PROMPTS)
def test_generation_with_kernels_gives_the_numpy_paths_tokens_on_smollm2(prompt, monkeypatch):
    model = load_model("smollm2-135m")
    with_kernels = greedy_tokens(model, prompt, 48)
    with kernels.use("numpy"):
        assert greedy_tokens(model, prompt, 48) == with_kernels


def child_run_passes(env: dict[str, str], files: list[str], *select: str) -> None:
    """Run these test files in a child process with `env` (the kernels compiled for other threads or another CPU),
    `select` narrowing them (-m / -k), and require that some ran and none failed."""
    command = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *select]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.slow
def test_the_kernel_tests_pass_with_the_work_split_over_two_threads():
    """The suite runs the kernels on one thread (tests/conftest.py); this file's tests run again on two, where
    the kernels split rows, outputs and attention parts between threads."""
    if machine.available_cores() < 2:
        pytest.skip("one core: nothing to split")
    child_run_passes({**os.environ, "NUMBA_NUM_THREADS": "2"}, [__file__], "-m", "not real_model and not slow")


@pytest.mark.slow
def test_the_block_products_equal_numpy_when_compiled_for_avx512_without_vnni():
    """Where AVX-512 has no VNNI (Intel's Skylake servers) the GGUF formats' blocks are multiplied in float32 and laid
    out a byte of each row at a time (`kernels.interleaved_blocks`), not in runs of four: the formats' product tests
    run again as compiled for this CPU with VNNI taken away."""
    from llvmlite import binding as llvm

    features = llvm.get_host_cpu_features()
    if not features.get("avx512f") or not features.get("avx512vnni"):
        pytest.skip("this CPU has no AVX-512 VNNI to take away")
    features["avx512vnni"] = False
    env = {**os.environ, "NUMBA_CPU_NAME": llvm.get_host_cpu_name(), "NUMBA_CPU_FEATURES": features.flatten()}
    flags = subprocess.run([sys.executable, "-c", "from simulations import kernels; print(kernels.TILE_LANES, kernels.VNNI)"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert flags.stdout.split() == ["16", "False"], flags.stdout + flags.stderr
    child_run_passes(env, [FORMATS_TESTS], "-k", "kernel_equals_dequantize or float32_precision or non_finite")


@pytest.mark.slow
def test_the_products_equal_numpy_when_compiled_for_a_cpu_without_avx512():
    """Without AVX-512 the tiled products use 8-float vectors and 6 input rows a tile, not 16 and 12 (a prompt's
    attention panels 3 query rows, not 6; a decode step's attention blocks of 8 keys, not 16), and the GGUF formats'
    blocks go in groups of 8 rows, not 16: the product and attention tests of this file and the formats' product
    tests run again as compiled for such a CPU (Haswell's AVX2)."""
    env = {**os.environ, "NUMBA_CPU_NAME": "haswell"}
    env.pop("NUMBA_CPU_FEATURES", None)
    lanes = subprocess.run([sys.executable, "-c", "from simulations import kernels; print(kernels.TILE_LANES)"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert lanes.stdout.strip() == "8", lanes.stdout + lanes.stderr
    child_run_passes(env, [__file__, FORMATS_TESTS],
                     "-k", "rows_times_weight or prompt_attention or one_token_attention or kernel_equals_dequantize"
                     " or half_rows_of_any_length or non_finite")
