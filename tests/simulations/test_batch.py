"""Batching: many sequences in one pass compute exactly what they compute alone; the measurement's contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

import simulations.model as M
from simulations.batch import measure, measured_knee, weights_only_knee
from simulations.cli import main
from simulations.cost import batch_cost, decode_batch_cost, first_compute_bound_batch, pass_cost
from simulations.errors import PromptError
from simulations.loader import load_model
from simulations.model import KVCache, decode_batch, decode_step, mixed_step, prefill
from tests.simulations.counting import Counting

RTOL = 1e-5  # float32: a B-row matrix product sums in another order than B matrix-vector products
FAKE_PEAKS = {"peak_gflops": 100.0, "peak_gbps": 20.0}  # the machine's peaks are measured elsewhere; tests need none


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal to RTOL of the logits' scale (a relative test per element fails on logits near zero)."""
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max()))


def users_with_prompts(model, lengths: list[int], spare: int = 4) -> list[KVCache]:
    """One cache per user, each prefilled with its own random prompt of the given length."""
    caches = []
    for user, n in enumerate(lengths):
        cache = KVCache.empty(model.config, n + spare)
        prefill(model.weights, model.config, np.random.default_rng(user).integers(3, 259, n), cache)
        caches.append(cache)
    return caches


def copies(caches: list[KVCache]) -> list[KVCache]:
    out = []
    for cache in caches:
        twin = KVCache(cache.k.copy(), cache.v.copy())
        twin.length = cache.length
        out.append(twin)
    return out


def test_batched_decode_gives_each_user_the_logits_of_its_own_decode(tiny):
    lengths = [9, 12, 10, 11, 9]  # similar, not equal: every user has its own cache and its own prompt
    together, alone = users_with_prompts(tiny, lengths), users_with_prompts(tiny, lengths)
    tokens = [40, 41, 42, 43, 44]
    for _ in range(3):  # a few steps: the caches grow in step
        batched = decode_batch(tiny.weights, tiny.config, tokens, together)
        for user, token in enumerate(tokens):
            assert_close(batched[user], decode_step(tiny.weights, tiny.config, token, alone[user]))
        tokens = [int(t) for t in np.argmax(batched, axis=-1)]
    for a, b in zip(together, alone, strict=True):
        assert a.length == b.length
        assert_close(a.k[:, :, : a.length], b.k[:, :, : b.length])


def test_a_batch_of_one_is_plain_decode(tiny):
    [cache] = users_with_prompts(tiny, [7])
    [twin] = copies([cache])
    np.testing.assert_array_equal(decode_batch(tiny.weights, tiny.config, [50], [cache])[0],
                                  decode_step(tiny.weights, tiny.config, 50, twin))


def test_many_decode_rows_sharing_the_cores_match_one_by_one(tiny, monkeypatch):
    """With more users than cores, their attention runs on all cores; the result does not change."""
    caches = users_with_prompts(tiny, [6 + u % 3 for u in range(9)])
    alone = copies(caches)
    tokens = list(range(60, 69))
    batched = decode_batch(tiny.weights, tiny.config, tokens, caches)
    for user, token in enumerate(tokens):
        assert_close(batched[user], decode_step(tiny.weights, tiny.config, token, alone[user]))


def users_in_one_block(model, lengths: list[int], spare: int = 4) -> list[KVCache]:
    """Like users_with_prompts, the caches being neighbouring slots of one block (KVCache.batch)."""
    caches = KVCache.batch(model.config, len(lengths), max(lengths) + spare)
    for user, (cache, n) in enumerate(zip(caches, lengths, strict=True)):
        prefill(model.weights, model.config, np.random.default_rng(user).integers(3, 259, n), cache)
    return caches


@pytest.mark.parametrize("order", ["neighbours", "shuffled", "two blocks and a lone cache"])
def test_caches_in_one_block_are_attended_together_and_give_each_user_its_own_logits(tiny, order):
    """Neighbouring slots of one block are attended with one product (their lengths differ: the rows past
    a user's length are masked); any other order or mix falls back to one user at a time. Same logits."""
    lengths = [9, 12, 10, 11, 9, 14, 8]
    block = users_in_one_block(tiny, lengths)
    if order == "shuffled":
        block = [block[i] for i in (3, 0, 1, 2, 6, 5, 4)]
    elif order == "two blocks and a lone cache":
        block = block[:3] + users_with_prompts(tiny, [13]) + users_in_one_block(tiny, [7, 10, 9])
    alone = copies(block)
    tokens = [40 + user for user in range(len(block))]
    for _ in range(3):  # a few steps: each slot's rows fill in turn
        batched = decode_batch(tiny.weights, tiny.config, tokens, block)
        for user, token in enumerate(tokens):
            assert_close(batched[user], decode_step(tiny.weights, tiny.config, token, alone[user]))
        tokens = [int(t) for t in np.argmax(batched, axis=-1)]
    for a, b in zip(block, alone, strict=True):
        assert_close(a.k[:, :, : a.length], b.k[:, :, : b.length])


def test_a_rewound_slot_ignores_the_rows_it_wrote_before(tiny):
    """A measurement rewinds caches between repeats; rows past a slot's length still hold old keys,
    which must count for nothing."""
    block = users_in_one_block(tiny, [9, 11, 10])
    alone = copies(block)
    decode_batch(tiny.weights, tiny.config, [50, 51, 52], block)
    decode_batch(tiny.weights, tiny.config, [53, 54, 55], block)
    for cache, length in zip(block, [9, 11, 10], strict=True):
        cache.length = length
    batched = decode_batch(tiny.weights, tiny.config, [60, 61, 62], block)
    for user, token in enumerate([60, 61, 62]):
        assert_close(batched[user], decode_step(tiny.weights, tiny.config, token, alone[user]))


@pytest.mark.parametrize("chunk_tokens,chunk_past", [(1, 0), (16, 0), (20, 13)])
def test_a_mixed_step_equals_the_chunks_prefill_and_the_decode_apart(tiny, chunk_tokens, chunk_past):
    config, weights = tiny.config, tiny.weights
    decoding = users_with_prompts(tiny, [10, 8])
    decoding_alone = copies(decoding)
    chunk_cache, chunk_alone = KVCache.empty(config, 40), KVCache.empty(config, 40)
    prompt = np.random.default_rng(7).integers(3, 259, chunk_past + chunk_tokens)
    if chunk_past:  # a chunk in the middle of its prompt: earlier chunks already in its cache
        prefill(weights, config, prompt[:chunk_past], chunk_cache)
        prefill(weights, config, prompt[:chunk_past], chunk_alone)
    chunk = prompt[chunk_past:]

    decode_logits, chunk_logits = mixed_step(weights, config, [70, 71], decoding, chunk, chunk_cache)

    assert decode_logits.shape == (2, config.vocab_size) and chunk_logits.shape == (config.vocab_size,)
    assert_close(chunk_logits, prefill(weights, config, chunk, chunk_alone)[-1])
    for user, token in enumerate([70, 71]):
        assert_close(decode_logits[user], decode_step(weights, config, token, decoding_alone[user]))
    assert chunk_cache.length == chunk_past + chunk_tokens
    np.testing.assert_allclose(chunk_cache.k[:, :, : chunk_cache.length], chunk_alone.k[:, :, : chunk_alone.length],
                               rtol=RTOL, atol=1e-6)


def test_a_prompt_prefilled_in_chunks_alongside_decode_gives_the_same_first_token(tiny):
    config, weights = tiny.config, tiny.weights
    prompt = np.random.default_rng(3).integers(3, 259, 50)
    whole = prefill(weights, config, prompt, KVCache.empty(config, 50))[-1]
    streaming, chunked = users_with_prompts(tiny, [12], spare=8)[0], KVCache.empty(config, 50)
    token = 33
    for start in range(0, 50, 16):
        decode_logits, last = mixed_step(weights, config, [token], [streaming], prompt[start:start + 16], chunked)
        token = int(np.argmax(decode_logits[0]))
    assert_close(last, whole)


def test_sharing_one_cache_between_two_sequences_is_refused(tiny):
    [cache] = users_with_prompts(tiny, [5])
    with pytest.raises(ValueError, match="its own KV cache"):
        decode_batch(tiny.weights, tiny.config, [1, 2], [cache, cache])


def test_batched_and_mixed_passes_counted_on_real_passes_equal_the_cost_model(tiny):
    config, weights = tiny.config, tiny.weights
    users = users_with_prompts(tiny, [9, 12, 10])
    counted, kv_before = Counting(), sum(c.nbytes for c in users)
    decode_batch(weights, config, [5, 6, 7], users, observer=counted)
    cost = batch_cost(config.shape, [(1, 9), (1, 12), (1, 10)])
    assert counted.flops == cost.flops and counted.kv_read == cost.kv_read_bytes
    assert sum(c.nbytes for c in users) - kv_before == cost.kv_written_bytes

    chunk_cache = KVCache.empty(config, 30)
    prefill(weights, config, np.arange(3, 10), chunk_cache)
    counted = Counting()
    mixed_step(weights, config, [8, 9], users[:2], np.arange(20, 36), chunk_cache, observer=counted)
    cost = batch_cost(config.shape, [(1, 10), (1, 13), (16, 7)])
    assert counted.flops == cost.flops and counted.kv_read == cost.kv_read_bytes


def test_batching_reads_the_weights_once_and_the_caches_per_user(tiny):
    shape = tiny.config.shape
    one, eight = pass_cost(shape, 1, 512), batch_cost(shape, [(1, 512)] * 8)
    embedding_row = shape.d_model * 4
    assert eight.weight_bytes == one.weight_bytes + 7 * embedding_row  # the same weights; 8 embedding rows
    assert eight.kv_read_bytes == 8 * one.kv_read_bytes
    assert eight.flops == 8 * one.flops
    assert batch_cost(shape, [(20, 4)], logits_rows=3) == pass_cost(shape, 20, 4, logits_rows=3)


def test_the_knee_is_the_first_batch_one_and_a_half_times_slower():
    rows = [{"batch": b, "step_ms": ms} for b, ms in ((1, 10.0), (2, 10.5), (4, 14.9), (8, 15.0), (16, 30.0))]
    assert measured_knee(rows) == 8
    assert measured_knee(rows[:3]) is None
    assert weights_only_knee(ridge=4.0, bytes_per_weight=4) == 8.0
    assert weights_only_knee(ridge=295.0, bytes_per_weight=2) == 295.0  # fp16 on an H100: hundreds of users


def test_counting_each_users_kv_cache_moves_the_predicted_knee_later_or_away(tiny):
    shape = tiny.config.shape
    for ridge in (1.0, 2.0, 4.0):
        knee = first_compute_bound_batch(shape, 16, ridge)
        assert decode_batch_cost(shape, knee, 16).intensity >= ridge > decode_batch_cost(shape, knee - 1, 16).intensity
        assert knee >= weights_only_knee(ridge, 4)  # the KV cache only adds bytes
        longer = first_compute_bound_batch(shape, 256, ridge)
        assert longer is None or longer >= knee  # a longer context, a later knee
    assert first_compute_bound_batch(shape, 4096, 4.0) is None  # its cache alone outweighs what a user computes


SMALL = dict(batch_sizes=(1, 2, 4), context_tokens=24, chunk_sizes=(0, 8, 16), two_users_prompt_tokens=40,
             two_users_chunk_tokens=16, repeats=3, peaks=FAKE_PEAKS)


@pytest.fixture(scope="module")
def measured(tiny):
    messages = []
    result = measure(tiny, progress=lambda message, fraction: messages.append((message, fraction)), **SMALL)
    return result, messages


def tiny_shape():
    return load_model("tiny").config.shape


def test_measure_returns_the_contract(measured):
    result, _ = measured
    assert result["schema"] == "prefill-decode-batch/2"
    assert result["kernels"].startswith(("numba", "numpy"))
    assert result["model"] == "tiny-random" and result["context_tokens"] == 24
    assert result["machine"] == {"peak_flops": 1e11, "bandwidth": 2e10, "ridge": 5.0}
    assert [row["batch"] for row in result["batch_sizes"]] == [1, 2, 4]
    for row in result["batch_sizes"]:
        assert set(row) == {"batch", "step_ms", "tokens_per_s", "ms_per_token", "flops", "bytes", "intensity",
                            "weight_bytes", "kv_bytes", "floor_ms", "compute_utilization",
                            "bandwidth_utilization"}
        floor_s = max(row["flops"] / 1e11, row["bytes"] / 2e10)  # FAKE_PEAKS: 100 GFLOP/s, 20 GB/s
        assert row["floor_ms"] == pytest.approx(1000 * floor_s, rel=1e-3)
        assert row["ms_per_token"] == row["step_ms"] > 0
        assert row["tokens_per_s"] == pytest.approx(row["batch"] * 1000 / row["step_ms"], rel=1e-3)
        assert row["bytes"] == pytest.approx(row["weight_bytes"] + row["kv_bytes"], rel=1e-3)
        assert row["bandwidth_utilization"] > 0 and row["compute_utilization"] > 0
    intensities = [row["intensity"] for row in result["batch_sizes"]]
    assert intensities == sorted(intensities)  # more users per weight read: more FLOPs per byte
    knee = result["knee"]
    assert knee["weights_only_batch"] == 10.0 and knee["bytes_per_weight"] == 4
    assert knee["predicted_batch"] == first_compute_bound_batch(tiny_shape(), 24, 5.0)
    assert result["kv_bytes_per_user"] == 24 * 2 * 2 * 2 * 16 * 4  # tokens × K,V × layers × kv heads × hd × 4
    json.dumps(result, allow_nan=False)


def test_projected_knees_are_labelled_and_name_their_projection(measured):
    knees = measured[0]["projected_knees"]
    h100 = next(k for k in knees if k["device"] == "h100-sxm" and k["dtype"] == "fp16")
    assert h100["projected"] is True and h100["id"] == f"{h100['model']}/h100-sxm/fp16"
    assert 100 < h100["weights_only_batch"] < 1000  # hundreds of users, by spec sheet, the weights alone
    # Each user's fp16 KV cache: at 4096 tokens Llama 3.1 8B never turns compute-bound on an H100
    by_context = {row["context"]: row for row in h100["by_context"]}
    assert by_context[4096]["predicted_batch"] is None and by_context[4096]["intensity_limit"] < h100["ridge"]


def test_chunked_rows_compare_one_mixed_step_with_separate_passes(measured):
    rows = measured[0]["chunked"]
    assert [(r["decode_rows"], r["chunk_tokens"]) for r in rows] == [(1, 0), (1, 8), (1, 16)]
    assert rows[0]["step_ms"] == rows[0]["separate_ms"]  # no chunk: the same decode pass
    assert all(r["step_ms"] > 0 and r["separate_ms"] > 0 for r in rows)


def test_two_users_timelines_are_consistent_with_their_events(measured):
    users = measured[0]["two_users"]
    assert users["prompt_tokens"] == 40 and users["chunk_tokens"] == 16
    for mode in ("unchunked", "chunked"):
        timeline = users[mode]
        events = timeline["events"]
        assert [e["t_ms"] for e in events] == sorted(e["t_ms"] for e in events)
        streamed = [e["t_ms"] for e in events if e["user"] == "streaming"]
        assert streamed[0] < 0 < streamed[-1]  # streaming before the arrival (t = 0) and after it
        gaps = [later - earlier for earlier, later in zip(streamed, streamed[1:], strict=False)]
        assert timeline["stall_ms"] == pytest.approx(max(gaps), rel=2e-3)  # both rounded to 4 digits
        first = next(e for e in events if e["user"] == "arriving" and e["what"] == "token")
        assert timeline["ttft_ms"] == first["t_ms"] > 0
        assert {e["what"] for e in events} <= {"token", "prefill"}
    # unchunked: the whole prompt, then a token for each; chunked: 40 tokens in 3 chunks, 2 of them not yet a token
    unchunked_arriving = [e["what"] for e in users["unchunked"]["events"] if e["user"] == "arriving"]
    chunked_arriving = [e["what"] for e in users["chunked"]["events"] if e["user"] == "arriving"]
    assert unchunked_arriving[0] == "token" and chunked_arriving[:3] == ["prefill", "prefill", "token"]
    # the streaming user is served during the chunks: a token at every pass
    chunk_passes = [e["t_ms"] for e in users["chunked"]["events"] if e["user"] == "arriving"][:3]
    assert all(any(e["t_ms"] == t and e["user"] == "streaming" for e in users["chunked"]["events"])
               for t in chunk_passes)


def test_measure_reports_its_progress(measured):
    _, messages = measured
    fractions = [f for _, f in messages if f is not None]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("batched decode" in m for m, _ in messages) and any("two users" in m for m, _ in messages)


def test_sizes_the_model_cannot_hold_are_a_clear_error(tiny):
    with pytest.raises(PromptError, match="batch sizes must be at least 1"):
        measure(tiny, **{**SMALL, "batch_sizes": (0, 2)})
    with pytest.raises(PromptError, match="more than tiny-random's 8192 — allowed"):
        measure(tiny, **{**SMALL, "two_users_prompt_tokens": 9000})


def test_batch_command_prints_json_and_a_table(capsys, monkeypatch):
    import simulations.roofline as R

    monkeypatch.setattr(R, "measure_peaks", lambda repeats=5: FAKE_PEAKS)
    args = ["batch", "--model", "tiny", "--batch-sizes", "1,2", "--context-tokens", "16", "--chunk-sizes", "0,8",
            "--prompt-tokens", "24", "--chunk-tokens", "8", "--repeats", "2"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"batch_sizes", "knee", "chunked", "two_users", "projected_knees"} <= result.keys()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tokens_per_s" in out and "knee: measured" in out and "stall_ms" in out and "projected" in out


def test_batch_command_refuses_a_batch_of_zero(capsys):
    assert main(["batch", "--model", "tiny", "--batch-sizes", "0"]) == 2
    err = capsys.readouterr().err
    assert "error: batch sizes must be at least 1" in err and "Traceback" not in err


@pytest.mark.real_model
def test_real_model_batched_decode_and_mixed_step_match_separate_passes():
    model = load_model("smollm2-135m")
    config, weights = model.config, model.weights
    users, alone = KVCache.batch(config, 3, 34 + 40), []  # the users' caches in one block, as a server keeps them
    for user, n in enumerate([30, 34, 31]):
        prompt = np.random.default_rng(user).integers(100, 40000, n)
        alone.append(KVCache.empty(config, n + 40))
        for cache in (users[user], alone[user]):
            prefill(weights, config, prompt, cache)
    batched = decode_batch(weights, config, [1000, 2000, 3000], users)
    for user, token in enumerate([1000, 2000, 3000]):
        assert_close(batched[user], decode_step(weights, config, token, alone[user]))
    chunk = np.random.default_rng(9).integers(100, 40000, 24)
    chunk_cache, chunk_alone = KVCache.empty(config, 24), KVCache.empty(config, 24)
    decode_logits, chunk_logits = mixed_step(weights, config, [4000], users[:1], chunk, chunk_cache)
    assert_close(chunk_logits, prefill(weights, config, chunk, chunk_alone)[-1])
    assert_close(decode_logits[0], decode_step(weights, config, 4000, alone[0]))


def test_an_observer_sees_every_users_attention_in_order_on_the_calling_thread(tiny):
    """Observers need no locks: a batch's users are reported one after another, where the pass was called."""
    import threading

    class Seen(M.Observer):
        def __init__(self) -> None:
            self.calls: list[tuple[int, str]] = []

        def attention(self, q, k, v):
            self.calls.append((k.shape[1], threading.current_thread().name))

    lengths = [5, 9, 6, 8, 7]
    seen = Seen()
    decode_batch(tiny.weights, tiny.config, [1, 2, 3, 4, 5], users_with_prompts(tiny, lengths), observer=seen)
    here = threading.current_thread().name
    assert seen.calls == [(n + 1, here) for _ in range(tiny.config.n_layers) for n in lengths]
