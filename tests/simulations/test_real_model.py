"""The real SmolLM2-135M-Instruct: coherent English, the right RoPE, the real token counts.

These need the pretrained model in the per-user cache (`python -m simulations fetch`, about a
minute the first time); they are marked `real_model`.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from simulations.generate import generate
from simulations.loader import load_model
from simulations.model import KVCache, prefill

pytestmark = pytest.mark.real_model

PROMPT = "Explain quantum computing in three sentences."
COMMON_WORDS = {"the", "of", "a", "is", "to", "and", "that", "in", "can", "are", "computers", "information"}


@pytest.fixture(scope="module")
def smollm():
    return load_model("smollm2-135m")


def greedy_answer(model, prompt: list[int]) -> list[int]:
    """The generated tokens, a final end-of-turn token left out."""
    tokens = [step.token for step in generate(model, prompt, max_new_tokens=48)]
    return tokens[:-1] if tokens[-1] in model.tokenizer.stop_ids else tokens


@pytest.fixture(scope="module")
def answer_ids(smollm):
    prompt = smollm.tokenizer.encode(smollm.tokenizer.render_chat(PROMPT).text)
    return prompt, greedy_answer(smollm, prompt)


def is_coherent_english_about_quantum(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    if len(words) < 20:
        return False
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    repetitive = len(set(trigrams)) < 0.8 * len(trigrams)
    return "quantum" in words and len(COMMON_WORDS & set(words)) >= 5 and not repetitive


def mean_log_likelihood(model, prompt: list[int], answer: list[int]) -> float:
    """Average log-probability the model gives each answer token, teacher-forced."""
    ids = np.array(prompt + answer)
    logits = prefill(model.weights, model.config, ids, KVCache.empty(model.config, len(ids)), all_logits=True)
    logits = logits[len(prompt) - 1 : -1].astype(np.float64)
    top = logits.max(axis=1)
    log_z = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    return float((logits[np.arange(len(answer)), answer] - log_z).mean())


def test_the_model_is_smollm2_135m_as_published(smollm):
    c = smollm.config
    assert (c.arch, c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff, c.vocab_size) == (
        "llama", 30, 576, 9, 3, 64, 1536, 49152)
    assert c.tied_embeddings and c.rope_theta == 100000.0 and c.max_context == 8192
    assert smollm.fingerprint == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def test_greedy_answer_is_coherent_english_about_quantum_computing(smollm, answer_ids):
    text = smollm.tokenizer.decode(answer_ids[1])
    assert is_coherent_english_about_quantum(text), text


def test_neox_half_split_rope_would_fail_the_same_check(smollm, answer_ids):
    """llama.cpp permutes Llama's Q/K, so only the interleaved-pairs rotation is right."""
    wrong = dataclasses.replace(smollm, config=dataclasses.replace(smollm.config, rope_style="half"))
    prompt, good_answer = answer_ids
    wrong_text = smollm.tokenizer.decode(greedy_answer(wrong, prompt))
    assert not is_coherent_english_about_quantum(wrong_text), wrong_text
    right_ll = mean_log_likelihood(smollm, prompt, good_answer)
    wrong_ll = mean_log_likelihood(wrong, prompt, good_answer)
    assert right_ll > -1.5 and wrong_ll < right_ll - 2.0, (right_ll, wrong_ll)


def test_the_cost_models_shape_is_the_one_projections_use_for_smollm2(smollm):
    from simulations.cost import ModelShape
    from simulations.projection_data import load_data

    assert ModelShape.from_models_json(load_data("models")["models"]["smollm2-135m"]) == smollm.config.shape


def test_chinese_prompt_is_19_tokens_and_28_in_the_bare_chatml_template(smollm):
    tokenizer = smollm.tokenizer
    text = "请用三句话介绍量子计算"
    assert len(tokenizer.encode(text)) == 19
    assert len(tokenizer.encode(tokenizer.render_chat(text, system_prompt="").text)) == 28


def test_chinese_tokens_carry_their_bytes_and_show_which_split_a_character(smollm):
    shown = smollm.tokenizer.display(smollm.tokenizer.encode("请用三句话介绍量子计算"))
    assert len(shown) == 19
    assert [(s["text"], s["bytes"], s["partial"]) for s in shown[:3]] == [
        ("请", "E8 AF", True), ("请", "B7", True), ("用", "E7 94 A8", False)]
    assert [s["text"] for s in shown if not s["partial"]] == ["用", "量", "子"]  # 8 characters are split in two
    # The prefill chapter's answer: one token holding the first 2 bytes of a 3-byte character.
    assert smollm.tokenizer.display([14483]) == [{"id": 14483, "text": "\ufffd", "partial": True, "bytes": "E6 9C"}]


def test_the_template_and_default_system_prompt_are_most_of_a_short_question(smollm):
    from collections import Counter

    from simulations.trace import prepare_prompt

    prompt, ids, _ = prepare_prompt(smollm, PROMPT, chat=True, system_prompt=None)
    assert len(ids) == 37
    assert Counter(token["role"] for token in prompt["tokens"]) == {"user": 7, "system": 16, "template": 14}


def test_default_system_prompt_comes_from_the_gguf_template(smollm):
    chat = smollm.tokenizer.render_chat(PROMPT)
    assert chat.system_prompt_is_default
    assert chat.system_prompt == "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    ids = smollm.tokenizer.encode(chat.text)
    assert ids[0] == 1 and ids.count(1) == 3  # <|im_start|> is one special id; no BOS added


def test_digits_are_split_one_by_one(smollm):
    tokenizer = smollm.tokenizer
    assert [tokenizer.decode([i]) for i in tokenizer.encode("2048")] == ["2", "0", "4", "8"]
    for text in (PROMPT, "请用三句话介绍量子计算", "x = 3.14159; print(f'{x:.2f}')\n"):
        assert tokenizer.decode(tokenizer.encode(text)) == text


def test_the_recorded_answer_is_the_same_on_every_run(smollm):
    from simulations.trace import record

    answers = {record(smollm, PROMPT, max_new_tokens=24)["answer"] for _ in range(2)}
    assert len(answers) == 1, answers
