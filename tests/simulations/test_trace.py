"""record(): the trace follows its schema and tells a consistent story of prefill then decode."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from simulations.errors import PromptError
from simulations.loader import load_model
from simulations.trace import record


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


@pytest.fixture(scope="module")
def trace(tiny):
    return json.loads(json.dumps(record(tiny, "Explain quantum computing. 量子", max_new_tokens=8)))


def schema() -> dict:
    return json.loads(resources.files("simulations").joinpath("trace.schema.json").read_text())


def test_the_trace_validates_against_its_json_schema(trace):
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(trace, schema())


def test_a_broken_trace_does_not_validate(trace):
    broken = {**trace, "steps": [{**trace["steps"][0], "phase": "thinking"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema())


def test_prefill_consumes_the_prompt_and_each_decode_step_one_token(trace):
    steps, prompt_ids = trace["steps"], [t["id"] for t in trace["prompt"]["tokens"]]
    assert steps[0]["phase"] == "prefill" and steps[0]["token_ids"] == prompt_ids
    assert steps[0]["kv_tokens"] == len(prompt_ids)
    for before, step in zip(steps, steps[1:], strict=False):
        assert step["phase"] == "decode"
        assert step["token_ids"] == [before["token"]["id"]]
        assert step["kv_tokens"] == before["kv_tokens"] + 1
        assert len(step["attention"]["weights"]) == step["kv_tokens"]
        assert sum(step["attention"]["weights"]) == pytest.approx(1.0, abs=1e-3)
        assert step["start_ms"] >= before["end_ms"]


def test_answer_is_the_generated_tokens_and_stops_at_the_limit(trace, tiny):
    steps = trace["steps"]
    assert trace["stop_reason"] == "max_new_tokens"
    assert len(steps) == trace["answer_tokens"] == 8
    assert trace["answer"] == tiny.tokenizer.decode([s["token"]["id"] for s in steps])
    assert steps[0]["top"][0]["id"] == steps[0]["token"]["id"]  # greedy picks the most likely


def test_kv_bytes_grow_by_one_token_per_step(trace):
    per_token = trace["model"]["kv_bytes_per_token"]
    for step in trace["steps"]:
        assert step["kv_bytes"] == step["kv_tokens"] * per_token
        assert step["bytes"]["kv_written"] == len(step["token_ids"]) * per_token


def test_kv_slice_holds_one_row_per_prompt_token(trace):
    kv = trace["kv_slice"]
    assert len(kv["k"]) == len(kv["v"]) == len(trace["prompt"]["tokens"])
    assert all(len(row) == kv["dims"] for row in kv["k"] + kv["v"])


def test_prompt_records_the_template_and_real_token_count(trace):
    prompt = trace["prompt"]
    assert prompt["rendered"].startswith("<|im_start|>user\nExplain quantum computing. 量子<|im_end|>")
    assert prompt["chars"] == len("Explain quantum computing. 量子")
    assert any(t["partial"] for t in prompt["tokens"])  # 量 and 子 are three byte tokens each


def test_greedy_recording_is_reproducible(tiny):
    first = record(tiny, "Hello", max_new_tokens=5)
    second = record(tiny, "Hello", max_new_tokens=5)
    assert first["answer"] == second["answer"]


def test_sampling_with_a_seed_is_reproducible(tiny):
    kwargs = dict(max_new_tokens=6, temperature=1.5, top_k=20)
    a, b = record(tiny, "Hello", seed=3, **kwargs), record(tiny, "Hello", seed=3, **kwargs)
    assert a["answer"] == b["answer"]
    assert a["settings"]["top_k"] == 20


def test_empty_prompt_is_refused(tiny):
    with pytest.raises(PromptError, match="empty"):
        record(tiny, "   ")


def test_prompt_longer_than_the_context_is_refused(tiny):
    with pytest.raises(PromptError, match="8192"):
        record(tiny, "x" * 9000, chat=False)


def test_each_step_and_the_timing_are_medians_of_five_timed_generations(trace):
    timing = trace["timing"]
    assert timing["runs"] == 5 and len(timing["ttft_ms"]["samples"]) == 5
    assert timing["ttft_ms"]["value"] == pytest.approx(trace["steps"][0]["end_ms"], abs=1e-3)
    decode = timing["decode_ms_per_token"]
    assert decode["low"] <= decode["value"] <= decode["high"] and decode["repeats"] == 5
