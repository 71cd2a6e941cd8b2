"""What the demos tell readers beside the numbers, built from the trace: how many tokens the chat template
and system prompt add, why an answer stops, answer tokens that are no whole character, readable names."""

from __future__ import annotations

import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.builders.common import answer_notes, answer_parts, answer_pieces, prompt_summary, shown_steps
from hooks.demos.readouts import precision_name, projection_label
from hooks.demos.strings import Strings

PROJECTION = "llama-3.1-8b/h100-sxm/fp16"


def build(kind: str, options: str, measurements, strings: Strings):
    block = parse_blocks(f"```demo\nkind: {kind}\n{options}\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    return BUILDERS[kind](block, measurements, strings)


def token(text: str, role: str = "user", partial: bool = False, hex_bytes: str = "41") -> dict:
    return {"id": 1, "text": text, "partial": partial, "bytes": hex_bytes, "role": role}


def trace_with(roles: list[str], *, default: bool = True, answer: str = "Hi", steps: list[dict] | None = None,
               stop: str = "eos", limit: int = 64) -> dict:
    steps = steps or [{"phase": "prefill", "start_ms": 0, "end_ms": 1, "kv_tokens": len(roles), "kv_bytes": 1,
                       "token": token("Hi")}]
    return {"prompt": {"text": "x", "tokens": [token("t", role) for role in roles], "chars": 1},
            "settings": {"system_prompt_is_default": default, "max_new_tokens": limit},
            "steps": steps, "timing": {"runs": 1, "ttft_ms": {"value": steps[0].get("end_ms", 1)}}, "answer": answer, "answer_tokens": len(steps), "stop_reason": stop,
            "model": {"name": "SmolLM2-135M-Instruct"}}


def test_the_summary_counts_template_system_and_the_prompts_own_tokens(en, strings):
    roles = ["template"] * 14 + ["system"] * 16 + ["user"] * 7
    assert prompt_summary(trace_with(roles), en) == (
        "Of the 37 tokens the model reads, 14 come from the chat template and 16 from the default system prompt; "
        "the question itself is only 7.")
    assert "37" in prompt_summary(trace_with(roles), strings) and "16" in prompt_summary(trace_with(roles), strings)
    assert "default" not in prompt_summary(trace_with(roles, default=False), en)
    assert prompt_summary(trace_with(["template", "user"]), en).endswith("the question itself is 1.")
    assert prompt_summary(trace_with(["user"] * 5), en) is None  # the prompt alone (chat: false): nothing to say


def test_an_answer_cut_off_at_the_limit_says_so_and_a_finished_one_does_not(en):
    assert answer_notes(trace_with(["user"], stop="max_new_tokens", limit=64), en)["stopped"] == (
        "The answer was cut off at the limit of 64 tokens: it is not finished.")
    assert answer_notes(trace_with(["user"], stop="eos"), en)["stopped"] is None
    assert answer_notes(trace_with(["user"], stop="max_new_tokens", limit=1), en)["stopped"] == \
        en["common.first_token_only"]
    assert "SmolLM2-135M-Instruct" in answer_notes(trace_with(["user"]), en)["caveat"]
    assert answer_notes(trace_with(["user"]), en, caveat=False)["caveat"] is None


def test_answer_tokens_that_are_no_whole_character_are_shown_as_their_bytes():
    def step(text: str, hex_bytes: str, partial: bool = False) -> dict:
        return {"token": token(text, partial=partial, hex_bytes=hex_bytes)}

    def parts(trace: dict) -> list[dict]:
        return answer_parts(*answer_pieces(trace["steps"], trace["answer"]), trace["answer"])

    cut = trace_with(["user"], answer="Hi \ufffd", steps=[step("Hi", "48 69"), step(" ", "20"),
                                                          step("\ufffd", "E8 AF", True)])
    assert answer_pieces(cut["steps"], cut["answer"]) == ([{"text": "Hi"}, {"text": " "}, {"bytes": "E8 AF"}], True)
    assert parts(cut) == [{"text": "Hi "}, {"bytes": "E8 AF"}]
    whole = trace_with(["user"], answer="量", steps=[step("量", "E9 87", True), step("量", "8F", True)])
    assert answer_pieces(whole["steps"], "量") == ([{"text": "量"}, {"text": ""}], True)  # the repeat is dropped
    assert parts(whole) == [{"text": "量"}]
    run = trace_with(["user"], answer="A\ufffd", steps=[step("A", "41"), step("\ufffd", "E8"), step("\ufffd", "AF")])
    assert parts(run) == [{"text": "A"}, {"bytes": "E8 AF"}]  # a run of them is one box, as in the answer's text
    odd = trace_with(["user"], answer="Hello", steps=[step("Help", "48")])
    assert parts(odd) == [{"text": "Hello"}]  # pieces that do not spell the answer: the answer itself


def test_the_end_of_turn_token_is_not_shown_but_a_token_at_the_limit_is():
    steps = [{"token": token("Hi")}, {"token": token("<|im_end|>")}]
    assert shown_steps(trace_with(["user"], steps=steps, stop="eos")) == steps[:1]
    assert shown_steps(trace_with(["user"], steps=steps, stop="max_new_tokens")) == steps


def test_projections_are_named_for_readers(measurements):
    projections = measurements.projections()
    assert projection_label(projections, PROJECTION) == "Llama-3.1-8B · NVIDIA H100 SXM · FP16"
    assert [precision_name(d) for d in ("fp16", "q4", "q8_0", "q4_k_m")] == ["FP16", "Q4_0", "Q8_0", "Q4_K_M"]


@pytest.mark.parametrize("kind", ["timeline", "roofline"])
def test_fallback_tables_and_choices_show_names_never_ids(measurements, strings, kind):
    demo = build(kind, f"projections: [{PROJECTION}]", measurements, strings)
    cells = [cell for row in demo.context["table"]["rows"] for cell in row]
    assert not any(PROJECTION in str(cell) for cell in cells)
    assert any("Llama-3.1-8B · NVIDIA H100 SXM · FP16" in str(cell) for cell in cells)
    labels = {source["id"]: source["label"] for source in demo.data["sources"]}
    assert labels["measured"] == strings["common.measured_label"]
    assert labels[PROJECTION].startswith("Llama-3.1-8B · ")


def test_the_prefill_readout_names_the_projection(measurements, strings):
    demo = build("prefill", f"prompt: Hi\nprojection: {PROJECTION}", measurements, strings)
    labels = [label for label, _ in demo.context["rows"]]
    assert any("Llama-3.1-8B · NVIDIA H100 SXM · FP16" in label for label in labels)
    assert not any(PROJECTION in label for label in labels)
    assert (demo.data["projection"]["model"], demo.data["projection"]["device"]) == ("Llama-3.1-8B", "NVIDIA H100 SXM")
    assert demo.data["projection"]["prompt_tokens"] == 4096  # "the KV cache at 4k tokens", from the build


def test_the_demo_json_carries_the_summary_and_the_answer_notes(measurements, strings):
    data = build("conversation", "prompt: Hi\nmax_new_tokens: 3", measurements, strings).data
    assert data["prompt"]["summary"] and data["answer"]["notes"]["stopped"] and data["answer"]["notes"]["caveat"]
    assert {t["role"] for t in data["prompt"]["tokens"]} == {"template", "user"}
    assert all("bytes" in t for t in data["prompt"]["tokens"])
