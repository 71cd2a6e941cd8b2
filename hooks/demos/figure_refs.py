"""Finding `{{ … }}` figure references (and other inline markup) in prose, outside fenced and inline code.

`{{ … }}` inside code (fences or `backticks`) is left alone, so the syntax can be shown. Chapters, claims
and demo notes all find their references here, so they agree on what is prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate

from hooks.markdown_blocks import iter_fences

_REF = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))|\{\{(?P<body>.*?)\}\}", re.S)


def find_refs(markdown: str) -> list[re.Match[str]]:
    """Every `{{ … }}` outside fenced code and inline code, in order: its offsets and its "body"."""
    return [match for match in prose_matches(_REF, markdown) if match["body"] is not None]


def prose_matches(pattern: re.Pattern[str], markdown: str) -> list[re.Match[str]]:
    """Matches of `pattern` outside fenced code, in order. `pattern` must match inline code spans itself
    (as a group the caller ignores), so that what is inside backticks is skipped too."""
    lines = markdown.split("\n")
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]  # where each line starts
    found = []
    cursor = 0
    for fence in [*iter_fences(lines), None]:
        stop = offsets[fence.start] if fence else len(markdown)
        found += pattern.finditer(markdown, cursor, stop)
        if fence:
            cursor = offsets[min(fence.end + 1, len(lines))]
    return found


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1



def source_lines(markdown: str, source: str, refs: list[re.Match[str]]) -> Iterator[int]:
    """The line in the raw file of each reference of `markdown`: that of the source's next reference with
    the same text (claims may have dropped references of phrasings that were not printed)."""
    source_refs = iter(find_refs(source))
    for ref in refs:
        same = next((found for found in source_refs if found["body"] == ref["body"]), None)
        yield line_of(source, same.start()) if same else line_of(markdown, ref.start())

