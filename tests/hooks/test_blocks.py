"""Demo blocks: found in the raw file (front matter counted), parsed, and rejected with file:line."""

from __future__ import annotations

import pytest
from mkdocs.exceptions import PluginError

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.markdown_blocks import demo_fences

SRC = "docs/zh/x.md"
LIMITS = Limits(model_name="tiny-random", max_context=100, count_prompt_tokens=lambda text: len(text.split()),
                projection_ids=frozenset({"llama-3.1-8b/h100-sxm/fp16", "qwen2.5-7b/l4/q4"}))


def page(*body: str, front_matter: bool = True) -> str:
    head = "---\ntitle: X\n---\n\n# Title\n\n" if front_matter else "# Title\n\n"
    return head + "\n".join(body)


def block(text: str) -> str:
    return f"```demo\n{text}\n```\n"


def error_of(source: str) -> str:
    with pytest.raises(PluginError) as caught:
        for found in parse_blocks(source, SRC):
            validate(found, LIMITS)
    return str(caught.value)


def test_blocks_are_found_in_order_with_their_file_line_counting_front_matter():
    source = page("Intro.\n", block("kind: conversation\nprompt: Hi there"), "Prose.\n",
                  block("kind: timeline\nprompt_lengths: [16, 32]"))
    found = parse_blocks(source, SRC)
    assert [b.kind for b in found] == ["conversation", "timeline"]
    assert found[0].line == 9 and source.split("\n")[8] == "```demo"
    assert found[1].line == source.split("\n").index("```demo", 9) + 1
    assert found[0].prompt == "Hi there" and found[1].index == 1


def test_a_demo_fence_shown_inside_a_longer_fence_is_not_a_block():
    source = page("````markdown", block("kind: conversation\nprompt: Hi").rstrip(), "````", "")
    assert parse_blocks(source, SRC) == []
    assert demo_fences(source) == []


def test_tilde_fences_and_indented_blocks_are_parsed():
    source = page("~~~demo\nkind: recap\n~~~\n", "    ```demo\n    kind: recap\n    ```\n")
    assert [b.kind for b in parse_blocks(source, SRC)] == ["recap", "recap"]


def test_defaults_are_filled_per_kind():
    found = parse_blocks(page(block("kind: decode\nprompt: Hi")), SRC)[0]
    assert validate(found, LIMITS).options["max_new_tokens"] == 32


def test_unknown_kind_names_file_line_and_the_allowed_kinds():
    message = error_of(page(block("kind: teleport\nprompt: Hi")))
    assert message.startswith(f"{SRC}:8: unknown demo kind 'teleport'")
    assert "conversation, prefill, decode, timeline, roofline, recap" in message


def test_a_block_without_kind_is_rejected():
    assert "has no `kind`" in error_of(page(block("prompt: Hi")))


def test_malformed_yaml_names_the_line_of_the_problem():
    message = error_of(page(block("kind: conversation\nprompt: [Hi")))
    assert message.startswith(f"{SRC}:") and "malformed YAML" in message and "allowed:" in message
    line = int(message.split(":")[1])
    assert 8 <= line <= 10


def test_a_block_that_is_not_a_mapping_is_rejected():
    assert "must be a YAML mapping" in error_of(page(block("- just\n- a list")))


def test_missing_prompt_names_the_block_line():
    message = error_of(page(block("kind: conversation\nnote: no prompt here")))
    assert message.startswith(f"{SRC}:7: a conversation demo needs a `prompt`")


def test_a_prompt_longer_than_the_context_names_the_prompt_line_and_the_limit():
    long_prompt = " ".join(["word"] * 90)
    message = error_of(page(block(f"kind: conversation\nprompt: {long_prompt}\nmax_new_tokens: 20")))
    assert message.startswith(f"{SRC}:9: the prompt is 90 tokens")
    assert "context of tiny-random (100 tokens)" in message and "at most 80 prompt tokens" in message


@pytest.mark.parametrize("value", [0, 257, "many", True])
def test_max_new_tokens_out_of_range_names_its_line_and_range(value):
    message = error_of(page(block(f"kind: decode\nprompt: Hi\nmax_new_tokens: {value}")))
    assert message.startswith(f"{SRC}:10:") and "an integer from 1 to 256" in message


def test_chat_defaults_on_and_accepts_only_yes_or_no():
    found = validate(next(iter(parse_blocks(page(block("kind: prefill\nprompt: Hi")), SRC))), LIMITS)
    assert found.options["chat"] is True
    found = validate(next(iter(parse_blocks(page(block("kind: prefill\nprompt: Hi\nchat: false")), SRC))), LIMITS)
    assert found.options["chat"] is False
    message = error_of(page(block("kind: prefill\nprompt: Hi\nchat: sometimes")))
    assert message.startswith(f"{SRC}:10:") and "chat: false" in message


@pytest.mark.parametrize("values, problem", [
    ("[4, 16]", "out of range"), ("[16, 8000]", "out of range"), ("[32, 16]", "increasing"),
    ("16", "must be a list"), ("[]", "must be a list"),
])
def test_prompt_lengths_out_of_range_are_rejected(values, problem):
    message = error_of(page(block(f"kind: timeline\nprompt_lengths: {values}")))
    assert message.startswith(f"{SRC}:9:") and problem in message and "from 8 to 50" in message


def test_unknown_projection_lists_the_known_ids():
    message = error_of(page(block("kind: roofline\nprojections: [llama-3.1-8b/tpu/fp16]")))
    assert message.startswith(f"{SRC}:9: unknown projection 'llama-3.1-8b/tpu/fp16'")
    assert "llama-3.1-8b/h100-sxm/fp16, qwen2.5-7b/l4/q4" in message


def test_an_unknown_option_lists_the_options_of_that_kind():
    message = error_of(page(block("kind: decode\nprompt: Hi\ncolour: red")))
    assert message.startswith(f"{SRC}:10: unknown option 'colour' for a decode demo")
    assert "kind, note, prompt, max_new_tokens, chat, contexts" in message


def test_a_long_note_is_rejected():
    assert "`note` must be a short text" in error_of(page(block(f"kind: recap\nnote: {'x' * 500}")))


def test_without_front_matter_lines_still_match_the_file():
    message = error_of(page(block("kind: nope"), front_matter=False))
    assert message.startswith(f"{SRC}:4:")
