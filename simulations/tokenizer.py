"""Byte-level BPE tokenizer built from a GGUF's vocabulary and merges, plus the chat template.

The `tokenizers` library does the BPE; this module only assembles it the way llama.cpp does for
each pre-tokenizer type, registers control tokens as special (so `<|im_start|>` is one id), and
renders chat prompts. No BOS token is prepended (SmolLM2 and Qwen2 set add_bos_token = false).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import groupby

from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from .errors import ModelFileError

TOKEN_TYPE_CONTROL = 3  # gguf.TokenType.CONTROL

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by the GGUF's `tokenizer.ggml.pre` value.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# A UTF-8 character, or what there is of one: a lead byte and up to as many continuation bytes as it
# announces (so a cut-off character keeps its bytes together); any other byte alone.
UTF8_CHARACTER = re.compile(rb"[\xc0-\xdf][\x80-\xbf]?|[\xe0-\xef][\x80-\xbf]{0,2}|[\xf0-\xf7][\x80-\xbf]{0,3}|.",
                            re.DOTALL)


def _pre_tokenizer(pre: str) -> pre_tokenizers.PreTokenizer:
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":  # digits one by one, then the GPT-2 split (HF's tokenizer.json for SmolLM2)
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    if pre in ("gpt2", "default", "bytes"):
        return byte_level
    split = {"qwen2": QWEN2_SPLIT, "llama-bpe": LLAMA3_SPLIT, "llama3": LLAMA3_SPLIT}.get(pre)
    if split is None:
        raise ValueError(f"unsupported pre-tokenizer {pre!r} (supported: smollm, gpt2, qwen2, llama-bpe)")
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


@lru_cache(maxsize=1)
def _byte_of_char() -> dict[str, int]:
    """GPT-2's reversible byte -> printable character map, inverted: printable bytes stand for
    themselves, the others (control bytes, space, 0x7F-0xA0, 0xAD) for code points 256, 257, … in order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    return {chr(c): b for c, b in zip([*printable, *range(256, 256 + len(others))], [*printable, *others], strict=True)}


def byte_level_alphabet() -> list[str]:
    """The 256 characters byte-level BPE uses for the 256 byte values, in byte order."""
    return sorted(_byte_of_char(), key=_byte_of_char().get)


def _utf8_characters(data: bytes) -> list[tuple[int, int, str | None]]:
    """Split bytes into UTF-8 characters: (start, end, text); an invalid byte or a cut-off character gets None."""
    chars = []
    for match in UTF8_CHARACTER.finditer(data):
        try:
            text = match.group().decode("utf-8")
        except UnicodeDecodeError:
            text = None
        chars.append((match.start(), match.end(), text))
    return chars


def _hex_by_character(piece: bytes, characters: list[int]) -> str:
    """A token's bytes in hex, " | " where one character ends and the next begins: "E8 AF | B7"."""
    by_character = groupby(zip(piece, characters, strict=True), key=lambda byte_and_char: byte_and_char[1])
    return " | ".join(" ".join(f"{byte:02X}" for byte, _ in group) for _, group in by_character)


@dataclass
class ChatPrompt:
    text: str
    system_prompt: str | None  # the system prompt actually placed in the text
    system_prompt_is_default: bool  # True when it came from the template's built-in default
    # Where the reader's message and the system prompt sit in `text` (character offsets, end excluded).
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)


class Tokenizer:
    """Encode/decode text, show each token as a reader sees it, and render chat prompts."""

    def __init__(self, tokens: list[str], merges: list[str], token_types: list[int], pre: str, eos_id: int,
                 chat_template: str | None) -> None:
        self.tokens = tokens
        self.eos_id = eos_id
        self.chat_template = chat_template or ""
        vocab = {tok: i for i, tok in enumerate(tokens)}
        pairs = [tuple(m.split(" ", 1)) for m in merges]
        bpe = models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, ignore_merges=False)
        self.hf = HFTokenizer(bpe)
        self.hf.pre_tokenizer = _pre_tokenizer(pre)
        self.hf.decoder = decoders.ByteLevel()
        self.special_ids = {i for i, t in enumerate(token_types) if t == TOKEN_TYPE_CONTROL}
        self.hf.add_special_tokens(
            [AddedToken(tokens[i], special=True, normalized=False) for i in sorted(self.special_ids)]
        )

    @cached_property
    def stop_ids(self) -> set[int]:
        """Generation stops at the end of the assistant's turn, whatever the model calls it."""
        ends = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>")
        return {self.eos_id} | {i for i, token in enumerate(self.tokens) if token in ends}

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> bytes:
        if token_id in self.special_ids:
            return self.tokens[token_id].encode("utf-8")
        table = _byte_of_char()
        return bytes(table[c] for c in self.tokens[token_id] if c in table)

    def display(self, ids: list[int]) -> list[dict]:
        """[{id, text, partial, bytes}] per token, decoding the byte pieces of the whole sequence.

        A token that carries only part of a multi-byte UTF-8 character (common for Chinese) shows
        the whole character(s) it contributes to, with partial=True; a character that never completes
        in the sequence shows as U+FFFD. `bytes` is the token's own bytes in hex, with " | " between
        bytes of different characters ("E8 AF | B7"); empty for control tokens, which are not text.
        """
        pieces = [self.token_bytes(i) for i in ids]
        chars = _utf8_characters(b"".join(pieces))  # (start byte, end byte, text or None if invalid)
        char_of_byte = [n for n, (a, b, _) in enumerate(chars) for _ in range(a, b)]
        out, offset = [], 0
        for token_id, piece in zip(ids, pieces, strict=True):
            begin, end = offset, offset + len(piece)
            offset = end
            if not piece:
                out.append({"id": int(token_id), "text": "", "partial": False, "bytes": ""})
                continue
            covered = chars[char_of_byte[begin] : char_of_byte[end - 1] + 1]
            whole = covered[0][0] == begin and covered[-1][1] == end and all(c[2] is not None for c in covered)
            text = "".join(c[2] if c[2] is not None else "\ufffd" for c in covered)
            shown_bytes = "" if token_id in self.special_ids else _hex_by_character(piece, char_of_byte[begin:end])
            out.append({"id": int(token_id), "text": text, "partial": not whole, "bytes": shown_bytes})
        return out

    def roles(self, ids: list[int], text: str, spans: dict[str, tuple[int, int]]) -> list[str]:
        """Each token's role in `text`: the name of the span (character offsets) holding any of its
        bytes, "user" first, else "template" (the chat template's own markup)."""
        def byte_span(span: tuple[int, int]) -> tuple[int, int]:
            return len(text[: span[0]].encode("utf-8")), len(text[: span[1]].encode("utf-8"))

        byte_spans = [(role, byte_span(span)) for role, span in sorted(spans.items(), key=lambda s: s[0] != "user")]
        out, offset = [], 0
        for token_id in ids:
            begin, offset = offset, offset + len(self.token_bytes(token_id))
            out.append(next((role for role, (a, b) in byte_spans if begin < b and a < offset), "template"))
        return out

    # --- chat template ------------------------------------------------------------------------

    @property
    def chat_format(self) -> str | None:
        if "<|im_start|>" in self.chat_template or (not self.chat_template and "<|im_start|>" in self.tokens):
            return "chatml"
        if "<|start_header_id|>" in self.chat_template:
            return "llama3"
        return None

    @property
    def default_system_prompt(self) -> str | None:
        """The system prompt the GGUF's template inserts when the conversation has none."""
        match = re.search(r"<\|im_start\|>system(?:\n|\\n)([^<{'\"]+?)<\|im_end\|>", self.chat_template)
        return match.group(1) if match else None

    def render_chat(self, user_message: str, system_prompt: str | None = None) -> ChatPrompt:
        """The prompt as the model sees it, ending where the assistant's answer begins."""
        is_default = system_prompt is None and self.default_system_prompt is not None
        system = self.default_system_prompt if system_prompt is None else system_prompt
        # (role, text) in order: the template's own markup, the system prompt, the reader's message.
        if self.chat_format == "chatml":
            head = [("template", "<|im_start|>system\n"), ("system", system), ("template", "<|im_end|>\n")]
            head = head if system else []
            tail = [("template", "<|im_start|>user\n"), ("user", user_message),
                    ("template", "<|im_end|>\n<|im_start|>assistant\n")]
        elif self.chat_format == "llama3":
            head = [("template", "<|begin_of_text|>")]
            if system:
                head += [("template", "<|start_header_id|>system<|end_header_id|>\n\n"), ("system", system),
                         ("template", "<|eot_id|>")]
            tail = [("template", "<|start_header_id|>user<|end_header_id|>\n\n"), ("user", user_message),
                    ("template", "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")]
        else:
            raise ModelFileError("this model's chat template is not ChatML or Llama 3; "
                                 "record without the template (--no-chat)")
        text, spans = "", {}
        for role, piece in head + tail:
            if role != "template":
                spans[role] = (len(text), len(text) + len(piece))
            text += piece
        return ChatPrompt(text=text, system_prompt=system or None, system_prompt_is_default=is_default, spans=spans)

    # --- persistence (so a warm load does not re-parse the GGUF) ------------------------------

    def to_state(self) -> dict:
        return {
            "tokenizer_json": self.hf.to_str(),
            "tokens": self.tokens,
            "special_ids": sorted(self.special_ids),
            "eos_id": self.eos_id,
            "chat_template": self.chat_template,
        }

    @classmethod
    def from_state(cls, state: dict) -> Tokenizer:
        self = cls.__new__(cls)
        self.tokens = state["tokens"]
        self.eos_id = state["eos_id"]
        self.chat_template = state["chat_template"]
        self.special_ids = set(state["special_ids"])
        self.hf = HFTokenizer.from_str(state["tokenizer_json"])
        return self
