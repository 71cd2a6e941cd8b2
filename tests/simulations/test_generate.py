"""The one generation loop: prefill then decode, one step per pass, with or without a KV cache."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from simulations.cost import kv_bytes_per_token, pass_cost
from simulations.generate import choose_token, generate
from simulations.loader import load_model
from simulations.model import KVCache, decode_step, forward_without_cache, prefill


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


PROMPT = [5, 6, 7, 8, 9, 10, 11]


def test_a_prefill_step_then_one_decode_step_per_token_each_consuming_the_previous_token(tiny):
    steps = list(generate(tiny, PROMPT, max_new_tokens=6, stop_at_eos=False))
    assert [s.phase for s in steps] == ["prefill"] + ["decode"] * 5
    assert [s.index for s in steps] == list(range(6))
    assert steps[0].token_ids == PROMPT and steps[0].kv_tokens == len(PROMPT)
    for before, step in zip(steps, steps[1:], strict=False):
        assert step.token_ids == [before.token]
        assert step.kv_tokens == before.kv_tokens + 1
        assert step.kv_bytes == step.kv_tokens * kv_bytes_per_token(tiny.config.shape)
        assert step.start_ms >= before.end_ms and step.ms > 0
        assert step.cost == pass_cost(tiny.config.shape, 1, before.kv_tokens)
    assert steps[0].cost == pass_cost(tiny.config.shape, len(PROMPT), 0)


def test_the_steps_are_the_models_own_prefill_and_decode_logits(tiny):
    steps = list(generate(tiny, PROMPT, max_new_tokens=4, stop_at_eos=False))
    cache = KVCache.empty(tiny.config, 16)
    np.testing.assert_array_equal(steps[0].logits, prefill(tiny.weights, tiny.config, np.array(PROMPT), cache)[-1])
    for step in steps[1:]:
        np.testing.assert_array_equal(step.logits, decode_step(tiny.weights, tiny.config, step.token_ids[0], cache))
    assert [s.token for s in steps] == [int(np.argmax(s.logits)) for s in steps]  # greedy by default


def test_generation_stops_after_the_end_of_turn_token_unless_told_not_to(tiny):
    tokens = [s.token for s in generate(tiny, PROMPT, max_new_tokens=6, stop_at_eos=False)]
    tokenizer = copy.copy(tiny.tokenizer)
    tokenizer.stop_ids = {tokens[2]}  # make the third answer token end the turn
    model = dataclasses.replace(tiny, tokenizer=tokenizer)
    assert [s.token for s in generate(model, PROMPT, max_new_tokens=6)] == tokens[: tokens.index(tokens[2]) + 1]
    assert [s.token for s in generate(model, PROMPT, max_new_tokens=6, stop_at_eos=False)] == tokens


def test_recompute_yields_the_same_greedy_tokens_without_a_cache(tiny):
    cached = [s.token for s in generate(tiny, PROMPT, max_new_tokens=8, stop_at_eos=False)]
    steps = list(generate(tiny, PROMPT, max_new_tokens=8, stop_at_eos=False, recompute=True))
    assert [s.token for s in steps] == cached
    assert {s.phase for s in steps} == {"recompute"}
    assert [len(s.token_ids) for s in steps] == list(range(len(PROMPT), len(PROMPT) + 8))
    assert all(s.kv_tokens == s.kv_bytes == 0 and s.cost.kv_written_bytes == 0 for s in steps)
    np.testing.assert_array_equal(steps[-1].logits,
                                  forward_without_cache(tiny.weights, tiny.config, np.array(steps[-1].token_ids)))


def test_decode_steps_carry_attention_over_every_cached_position_when_asked(tiny):
    steps = list(generate(tiny, PROMPT, max_new_tokens=5, stop_at_eos=False, attention=True))
    assert steps[0].attention is None
    for step in steps[1:]:
        assert step.attention.shape == (step.kv_tokens,)
        assert step.attention.sum() == pytest.approx(1.0, abs=1e-5)
    assert all(s.attention is None for s in generate(tiny, PROMPT, max_new_tokens=3, stop_at_eos=False))


def test_the_callers_cache_receives_the_prompts_keys_and_values(tiny):
    cache = KVCache.empty(tiny.config, 16)
    steps = list(generate(tiny, PROMPT, max_new_tokens=3, stop_at_eos=False, cache=cache))
    assert cache.length == steps[-1].kv_tokens == len(PROMPT) + 2


def test_sampling_is_seeded_and_top_k_limits_the_choice(tiny):
    first = [s.token for s in generate(tiny, PROMPT, max_new_tokens=6, temperature=1.0, seed=3, stop_at_eos=False)]
    again = [s.token for s in generate(tiny, PROMPT, max_new_tokens=6, temperature=1.0, seed=3, stop_at_eos=False)]
    assert first == again
    logits = np.array([0.0, 5.0, 4.0, -1.0])
    rng = np.random.default_rng(0)
    assert {choose_token(logits, 2.0, top_k=2, rng=rng) for _ in range(200)} == {1, 2}


def test_bad_arguments_are_refused_with_what_is_allowed(tiny):
    with pytest.raises(ValueError, match="at least 1"):
        next(generate(tiny, PROMPT, max_new_tokens=0))
    with pytest.raises(ValueError, match="without a KV cache"):
        next(generate(tiny, PROMPT, max_new_tokens=2, recompute=True, cache=KVCache.empty(tiny.config, 9)))
