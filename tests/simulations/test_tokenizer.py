"""Tokenizer: round trips, special tokens, partial multi-byte display, chat template."""

from __future__ import annotations

import pytest

from simulations.loader import load_model

TEXTS = ["Explain quantum computing in three sentences.", "请用三句话介绍量子计算", "Mixed: 量子 bits 123, émigré 🚀!\n"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_model("tiny").tokenizer


@pytest.mark.parametrize("text", TEXTS)
def test_encode_then_decode_gives_back_the_text(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_chinese_splits_into_more_tokens_than_characters(tokenizer):
    text = "请用三句话介绍量子计算"
    assert len(tokenizer.encode(text)) == len(text.encode("utf-8")) > len(text)


def test_display_marks_pieces_of_a_multibyte_character_as_partial(tokenizer):
    shown = tokenizer.display(tokenizer.encode("a量"))
    assert shown[0] == {"id": shown[0]["id"], "text": "a", "partial": False, "bytes": "61"}
    assert [s["text"] for s in shown[1:]] == ["量"] * 3
    assert all(s["partial"] for s in shown[1:])
    assert [s["bytes"] for s in shown[1:]] == ["E9", "87", "8F"]  # the tiny model: every byte is a token


def test_bytes_of_different_characters_in_one_token_are_separated():
    from simulations.tokenizer import _hex_by_character

    assert _hex_by_character(bytes.fromhex("E8AFB7"), [0, 0, 1]) == "E8 AF | B7"


def test_a_cut_off_character_is_one_character_not_one_per_byte():
    from simulations.tokenizer import _utf8_characters

    assert _utf8_characters(bytes.fromhex("E69C")) == [(0, 2, None)]  # the first 2 of a 3-byte character
    assert _utf8_characters(bytes.fromhex("9C41")) == [(0, 1, None), (1, 2, "A")]  # a stray continuation byte


def test_a_character_that_never_completes_shows_as_a_replacement_mark_with_its_bytes(tokenizer):
    cut = tokenizer.encode("量")[:2]
    assert [(s["text"], s["bytes"], s["partial"]) for s in tokenizer.display(cut)] == [
        ("\ufffd", "E9", True), ("\ufffd", "87", True)]


def test_display_of_a_lone_partial_token_is_marked_partial(tokenizer):
    first_byte = tokenizer.encode("量")[0]
    assert tokenizer.display([first_byte])[0]["partial"] is True


def test_control_tokens_are_single_special_ids(tokenizer):
    ids = tokenizer.encode("<|im_start|>user\nhi<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2
    assert tokenizer.display([1])[0]["text"] == "<|im_start|>"
    assert tokenizer.display([1])[0]["bytes"] == ""  # a control token is not text
    assert 2 in tokenizer.stop_ids


def test_chatml_prompt_ends_where_the_assistant_answer_begins(tokenizer):
    chat = tokenizer.render_chat("hi")
    assert chat.text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert chat.system_prompt is None and not chat.system_prompt_is_default
    with_system = tokenizer.render_chat("hi", system_prompt="Be brief.")
    assert with_system.text.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi")


def test_each_prompt_token_is_marked_template_system_or_user(tokenizer):
    chat = tokenizer.render_chat("hi 量", system_prompt="Be brief.")
    assert chat.text[slice(*chat.spans["user"])] == "hi 量"
    assert chat.text[slice(*chat.spans["system"])] == "Be brief."
    ids = tokenizer.encode(chat.text)
    roles = tokenizer.roles(ids, chat.text, chat.spans)
    spelled = {role: tokenizer.decode([i for i, r in zip(ids, roles, strict=True) if r == role])
               for role in ("user", "system")}
    assert spelled == {"user": "hi 量", "system": "Be brief."}
    assert roles[0] == roles[-1] == "template"


def test_state_round_trip_keeps_the_same_encoding(tokenizer):
    from simulations.tokenizer import Tokenizer

    again = Tokenizer.from_state(tokenizer.to_state())
    for text in TEXTS:
        assert again.encode(text) == tokenizer.encode(text)
    assert again.stop_ids == tokenizer.stop_ids
