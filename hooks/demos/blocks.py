"""`demo` fenced blocks: parse their YAML and validate their options, per kind (hooks/markdown_blocks.py finds
them in a chapter's Markdown).

Every error is an AuthoringMistake (a PluginError) that names the source file, the line in that file
and what is allowed; hooks/site.py reports it at the block's place (hooks/authoring.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from hooks.authoring import AuthoringMistake
from hooks.markdown_blocks import Fence, demo_fences

KINDS: tuple[str, ...] = ("conversation", "prefill", "decode", "timeline", "roofline", "recap", "device", "batching",
                          "formats")
# Kinds that record a prompt (and so need one).
RECORDING_KINDS: frozenset[str] = frozenset({"conversation", "prefill", "decode"})

COMMON_OPTIONS: tuple[str, ...] = ("kind", "note")
KIND_OPTIONS: dict[str, tuple[str, ...]] = {
    "conversation": ("prompt", "max_new_tokens", "chat"),
    "prefill": ("prompt", "max_new_tokens", "chat", "prompt_lengths", "projection"),
    "decode": ("prompt", "max_new_tokens", "chat", "contexts"),
    # These kinds measure synthetic prompts of exact lengths; a `prompt` is accepted (chapters share one
    # block shape) but not recorded.
    "timeline": ("prompt", "prompt_lengths", "projections"),
    "roofline": ("prompt", "projections"),
    "recap": ("prompt", "prompt_lengths"),
    "device": ("prompt",),  # measured in the reader's browser, on a press; nothing recorded here
    "batching": ("prompt", "projections"),  # measured on synthetic caches; `projections`: the knees shown
    "formats": ("prompt",),  # measured on synthetic prompts and the chapter prompt's answer; nothing recorded
}
DEFAULT_MAX_NEW_TOKENS: dict[str, int] = {"conversation": 64, "prefill": 1, "decode": 32}
MAX_NEW_TOKENS_RANGE = (1, 256)
MAX_NOTE_CHARS = 400
MAX_LIST_ITEMS = 8
MIN_PROMPT_LENGTH = 8  # a sweep point shorter than this measures only noise
MIN_CONTEXT = 8


@dataclass
class DemoBlock:
    """One parsed `demo` block; `line` is the 1-based line of its opening fence in the source file."""

    kind: str
    options: dict[str, Any]
    src_path: str
    line: int
    index: int
    option_lines: dict[str, int] = field(default_factory=dict)

    @property
    def note(self) -> str | None:
        return self.options.get("note")

    @property
    def prompt(self) -> str | None:
        return self.options.get("prompt")

    def fail(self, option: str | None, what: str, allowed: str) -> AuthoringMistake:
        """The mistake at this option's line (the block's opening line when it has none)."""
        return fail(self.src_path, self.option_lines.get(option, self.line) if option else self.line, what, allowed)


def fail(src_path: str, line: int, what: str, allowed: str) -> AuthoringMistake:
    """The error every bad demo input raises: location, problem, what is allowed."""
    return AuthoringMistake(src_path, line, f"{what} — allowed: {allowed}")


def parse_blocks(source: str, src_path: str) -> list[DemoBlock]:
    """Every `demo` block of a page's raw source; the first bad one raises its AuthoringMistake."""
    lines = source.split("\n")
    return [parse_block(lines, fence, src_path, index) for index, fence in enumerate(demo_fences(source))]


def parse_block(lines: list[str], fence: Fence, src_path: str, index: int) -> DemoBlock:
    """The YAML of the demo block `fence` of a page's raw source `lines` (front matter included, so lines
    match the file) as a DemoBlock (the index-th block of its page), or its AuthoringMistake."""
    body_lines, line = fence.body(lines), fence.start + 1
    body = "\n".join(body_lines)
    allowed_kinds = ", ".join(KINDS)
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = line + 1 + mark.line if mark is not None else line
        problem = getattr(error, "problem", None) or str(error).split("\n")[0]
        raise fail(
            src_path, at, f"malformed YAML in demo block ({problem})",
            "a YAML mapping such as `kind: conversation` and `prompt: ...`, one key per line",
        ) from None
    if not isinstance(data, dict):
        raise fail(src_path, line, "a demo block must be a YAML mapping of options",
                   f"`kind:` ({allowed_kinds}) and the options of that kind")
    option_lines = _option_lines(body_lines, line)
    kind = data.get("kind")
    if kind not in KINDS:
        what = "demo block has no `kind`" if kind is None else f"unknown demo kind {kind!r}"
        raise fail(src_path, option_lines.get("kind", line), what, allowed_kinds)
    return DemoBlock(kind=kind, options=dict(data), src_path=src_path, line=line, index=index,
                     option_lines=option_lines)


def _option_lines(body_lines: list[str], fence_line: int) -> dict[str, int]:
    """1-based file line of each top-level key in the block body."""
    found = {}
    for offset, text in enumerate(body_lines, start=1):
        match = re.match(r"^([A-Za-z_][\w-]*)\s*:", text)
        if match and match.group(1) not in found:
            found[match.group(1)] = fence_line + offset
    return found


@dataclass(frozen=True)
class Limits:
    """What the loaded model and the projections data allow; the hook builds it once per build."""

    model_name: str
    max_context: int
    count_prompt_tokens: Callable[[str], int]
    projection_ids: frozenset[str]


def validate(block: DemoBlock, limits: Limits) -> DemoBlock:
    """Check a block's options against its kind and the model; fill defaults. Returns the block."""
    allowed = COMMON_OPTIONS + KIND_OPTIONS[block.kind]
    for key in block.options:
        if key not in allowed:
            raise block.fail(key, f"unknown option {key!r} for a {block.kind} demo", ", ".join(allowed))
    options = block.options
    note = options.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
        raise block.fail("note", "`note` must be a short text", f"a string of at most {MAX_NOTE_CHARS} characters")
    if block.kind in RECORDING_KINDS:
        _validate_prompt(block, limits)
    if "prompt_lengths" in options:
        options["prompt_lengths"] = _int_list(block, "prompt_lengths", MIN_PROMPT_LENGTH, limits.max_context // 2)
    if "contexts" in options:
        options["contexts"] = _int_list(block, "contexts", MIN_CONTEXT, limits.max_context // 2)
    if "projection" in options:
        options["projection"] = _projection_id(block, "projection", options["projection"], limits)
    if "projections" in options:
        ids = options["projections"]
        if not isinstance(ids, list) or not ids or len(ids) > MAX_LIST_ITEMS:
            raise block.fail("projections", "`projections` must be a list of projection ids",
                       f"1 to {MAX_LIST_ITEMS} of: {', '.join(sorted(limits.projection_ids))}")
        options["projections"] = [_projection_id(block, "projections", value, limits) for value in ids]
    return block


def _validate_prompt(block: DemoBlock, limits: Limits) -> None:
    options = block.options
    prompt = options.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise block.fail("prompt", f"a {block.kind} demo needs a `prompt`",
                   "a non-empty text, e.g. `prompt: Explain quantum computing in three sentences.`")
    low, high = MAX_NEW_TOKENS_RANGE
    max_new = options.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS[block.kind])
    if isinstance(max_new, bool) or not isinstance(max_new, int) or not low <= max_new <= high:
        raise block.fail("max_new_tokens", f"`max_new_tokens: {max_new!r}` is out of range",
                   f"an integer from {low} to {high}")
    # `chat: false` feeds the prompt as plain text, without the chat template (e.g. to show its tokens).
    chat = options.setdefault("chat", True)
    if not isinstance(chat, bool):
        raise block.fail("chat", f"`chat: {chat!r}` is not a yes/no value",
                   "`chat: true` (the default: the model's chat template) or `chat: false` (the bare prompt)")
    prompt_tokens = limits.count_prompt_tokens(prompt)  # with the template: an upper bound either way
    if prompt_tokens + max_new > limits.max_context:
        raise block.fail("prompt",
                   f"the prompt is {prompt_tokens} tokens; with max_new_tokens {max_new} it exceeds "
                   f"the context of {limits.model_name} ({limits.max_context} tokens)",
                   f"at most {limits.max_context - max_new} prompt tokens (chat template included)")


def _int_list(block: DemoBlock, key: str, low: int, high: int) -> list[int]:
    values = block.options[key]
    allowed = f"a list of 1 to {MAX_LIST_ITEMS} increasing integers from {low} to {high}"
    if not isinstance(values, list) or not 1 <= len(values) <= MAX_LIST_ITEMS:
        raise block.fail(key, f"`{key}` must be a list", allowed)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise block.fail(key, f"`{key}` value {value!r} is out of range", allowed)
    if values != sorted(set(values)):
        raise block.fail(key, f"`{key}` must be increasing without repeats", allowed)
    return values


def _projection_id(block: DemoBlock, key: str, value: Any, limits: Limits) -> str:
    if not isinstance(value, str) or value not in limits.projection_ids:
        raise block.fail(key, f"unknown projection {value!r}",
                   "MODEL/DEVICE/DTYPE ids: " + ", ".join(sorted(limits.projection_ids)))
    return value
