"""The article's pages in reading order, chapter labels and reading times — pure functions, no MkDocs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hooks.claims.syntax import find_claims
from hooks.markdown_blocks import open_by_default, without_fences

# Fixed slugs, the same in every language. The reading path is what a reader of the original expects,
# numbered 1-6; the landing page's reading time is its total.
READING_PATH: tuple[str, ...] = ("two-phases", "prefill", "decode", "ttft-tps", "bottleneck", "summary")
# Chapters beyond the path: unnumbered, marked with the language's `going_further` label.
GOING_FURTHER: tuple[str, ...] = ("batching", "weight-formats")
# Reference pages after the chapters, unnumbered and off the chapter cards.
APPENDICES: tuple[str, ...] = ("projections", "about-numbers")
CHAPTER_SLUGS: tuple[str, ...] = (*READING_PATH, *GOING_FURTHER)  # the chapter cards, in order
PAGE_SLUGS: tuple[str, ...] = ("index", *READING_PATH)  # the pages the landing page's reading time counts
SITE_SLUGS: tuple[str, ...] = ("index", *CHAPTER_SLUGS, *APPENDICES)  # every page, in nav order

# The key of MkDocs' config under which the demo hook leaves `printed(path)`: a page of this build as the
# reader gets it (each claim's printed phrasing), or None. Hooks share state through config, never by import.
PRINTED_MARKDOWN = "pd_printed_markdown"
Printed = Callable[[Path], "str | None"]

# Typical silent-reading speeds: Han characters per minute and words per minute.
HAN_CHARS_PER_MINUTE = 300
WORDS_PER_MINUTE = 200

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*(?:[.,]\d+)*")  # 1.25 and 4,096 are one word each
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FIGURE_REF = re.compile(r"\{\{.*?\}\}", re.S)
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
_LINK_TARGET = re.compile(r"(\]\s*)\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_ATTR_LIST = re.compile(r"\{:?\s*[.#:][^{}\n]*\}")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


@dataclass(frozen=True)
class Chapter:
    number: int | None  # None: a going-further chapter
    slug: str
    title: str
    minutes: int

    @property
    def going_further(self) -> bool:
        return self.number is None


def chapter_number(slug: str) -> int | None:
    """1-based number of a reading-path chapter, or None for every other page."""
    return READING_PATH.index(slug) + 1 if slug in READING_PATH else None


def is_going_further(slug: str) -> bool:
    return slug in GOING_FURTHER


def first_phrasings(markdown: str) -> str:
    """`markdown` with each checked claim replaced by its first phrasing (a reader sees one phrasing of each;
    the build knows which: `printed`)."""
    pieces, position = [], 0
    for claim in find_claims(markdown):
        text = claim.alternatives[0].text if claim.alternatives else ""
        pieces += [markdown[position:claim.start], text]
        position = max(position, claim.end)
    return "".join([*pieces, markdown[position:]])


def readable_text(markdown: str) -> str:
    """The prose a reader reads: front matter, code/demo fences, the bodies of closed details blocks,
    comments, link targets, attribute lists and tags removed; a figure reference counts as one word; a claim
    still in it counts as its first phrasing."""
    text = _FRONT_MATTER.sub("", first_phrasings(markdown))
    text = open_by_default(without_fences(text))
    text = _HTML_COMMENT.sub("", text)
    text = _FIGURE_REF.sub(" 0 ", text)
    text = _LINK_TARGET.sub(r"\1", text)
    return _HTML_TAG.sub(" ", _ATTR_LIST.sub("", text))


def reading_minutes(texts: list[str]) -> int:
    """Minutes to read the texts: Han characters and Latin words counted at their own speeds."""
    han = sum(len(_HAN.findall(t)) for t in texts)
    words = sum(len(_WORD.findall(_HAN.sub(" ", t))) for t in texts)
    return max(1, math.ceil(han / HAN_CHARS_PER_MINUTE + words / WORDS_PER_MINUTE))


def page_reading_minutes(markdown: str) -> int:
    """Reading time of one page's Markdown (as printed: see `printed`)."""
    return reading_minutes([readable_text(markdown)])


def first_heading(markdown: str, fallback: str) -> str:
    match = _H1.search(_FRONT_MATTER.sub("", markdown))
    return match.group(1).strip() if match else fallback


def page_text(language_dir: Path, slug: str, printed: Printed | None = None) -> str | None:
    """A page's Markdown as printed when `printed` knows it, else as written; None when it does not exist."""
    path = language_dir / f"{slug}.md"
    shown = printed(path) if printed else None
    if shown is not None:
        return shown
    return path.read_text(encoding="utf-8") if path.exists() else None


def chapters_of(language_dir: Path, printed: Printed | None = None) -> list[Chapter]:
    """The chapters one language folder has, in order, with titles from each file's first heading and
    each one's reading time."""
    texts = [(slug, page_text(language_dir, slug, printed)) for slug in CHAPTER_SLUGS]
    return [Chapter(chapter_number(slug), slug, first_heading(text, slug), page_reading_minutes(text))
            for slug, text in texts if text is not None]


def article_reading_minutes(language_dir: Path, printed: Printed | None = None) -> int:
    """Reading time of the reading path of one language (the landing page and chapters 1-6), as printed:
    `printed(path)` gives a page's Markdown with each claim replaced by the phrasing the build prints (None:
    not known, and each claim then counts as its first phrasing)."""
    texts = [page_text(language_dir, slug, printed) for slug in PAGE_SLUGS]
    return reading_minutes([readable_text(text) for text in texts if text is not None])
