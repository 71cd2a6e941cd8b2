"""Fenced code and collapsible blocks in a page's Markdown: the one parser every hook uses to find ``` and ~~~
blocks, and `???` blocks (pymdownx.details).

Demo blocks (hooks/demos/blocks.py), translation parity (hooks/parity.py), reading time (hooks/chapters.py)
and inline figures (hooks/demos/figure_refs.py) must agree on what is a fence, so a block shown inside a
longer fence, an indented block or a tilde fence counts the same everywhere. Pure functions, no MkDocs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# pymdownx.details: `??? type "title"` is closed by default, `???+` open; admonitions (`!!!`) are always open.
_BLOCK_START = re.compile(r'^(?P<indent>[ \t]*)(?P<mark>\?\?\?\+?|!!!)[ \t]*(?P<kind>[^"\n]*?)[ \t]*(?:"(?P<title>[^"\n]*)")?[ \t]*$')
_HTML_DETAILS = re.compile(r"<details(?P<attrs>[^>]*)>(?P<body>.*?)</details>", re.S | re.I)
_SUMMARY = re.compile(r"<summary[^>]*>(.*?)</summary>", re.S | re.I)
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*?)[ \t]*$")


@dataclass(frozen=True)
class Fence:
    """A fenced code region: 0-based line indices of its opening and closing fence lines."""

    start: int
    end: int  # index of the closing fence line (or the last line when the fence is never closed)
    info: str
    indent: str

    @property
    def is_demo(self) -> bool:
        """A ```demo block (its info string's first word is `demo`)."""
        return self.info.split()[:1] == ["demo"]

    def body(self, lines: list[str]) -> list[str]:
        """The lines between the fences, with the opening fence's indentation removed."""
        return [line[len(self.indent) :] if self.indent and line.startswith(self.indent) else line
                for line in lines[self.start + 1 : self.end]]


def iter_fences(lines: list[str]) -> Iterator[Fence]:
    """Top-level fenced regions, in order (a fence inside another fence is content, not a fence).
    A fence closes on a line of at least as many of its own characters; an unclosed one runs to the end."""
    i = 0
    while i < len(lines):
        match = _FENCE_OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent = match.group("fence"), match.group("indent")
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        yield Fence(i, min(end, len(lines) - 1), match.group("info").strip(), indent)
        i = end + 1


def demo_fences(markdown: str) -> list[Fence]:
    """The ```demo blocks of a page, in order; line indices count from the first line of `markdown`."""
    return [fence for fence in iter_fences(markdown.split("\n")) if fence.is_demo]


def without_fences(markdown: str) -> str:
    """The Markdown with every fenced region (fence lines included) removed: the prose around the code."""
    lines = markdown.split("\n")
    for fence in reversed(list(iter_fences(lines))):
        del lines[fence.start : fence.end + 1]
    return "\n".join(lines)


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def collapsible_marks(markdown: str) -> list[str]:
    """The marker lines of the `???` blocks outside fences, in order ("???" closed, "???+" open), for parity."""
    return [match["mark"] for line in without_fences(markdown).split("\n")
            if (match := _BLOCK_START.match(line)) and match["mark"] != "!!!"]


def open_by_default(markdown: str) -> str:
    """What a reader sees before opening anything: a closed `???` block keeps only its title (its body,
    indented under it, goes); an open one (`???+`) or an admonition keeps its body, its marker line becomes
    its title. A raw `<details>` without `open` keeps its `<summary>`."""
    lines, kept, i = markdown.split("\n"), [], 0
    while i < len(lines):
        match = _BLOCK_START.match(lines[i])
        if not match:
            kept.append(lines[i])
            i += 1
            continue
        kept.append(match["indent"] + (match["title"] if match["title"] is not None else match["kind"]))
        i += 1
        if match["mark"] == "???":
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > _indent(match["indent"])):
                i += 1
            kept.append("")
    text = "\n".join(kept)

    def details(match: re.Match[str]) -> str:
        if re.search(r"\bopen\b", match["attrs"]):
            return match["body"]
        summary = _SUMMARY.search(match["body"])
        return summary.group(1) if summary else ""

    return _HTML_DETAILS.sub(details, text)
