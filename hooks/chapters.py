"""The article's chapter order, chapter labels and reading time — pure functions, no MkDocs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hooks.claims.syntax import find_claims
from hooks.markdown_blocks import without_fences

# Fixed slugs, the same in every language; the order is the reading order.
CHAPTER_SLUGS: tuple[str, ...] = ("two-phases", "prefill", "decode", "ttft-tps", "bottleneck", "batching", "summary")
# The reading path. The appendices (mkdocs.yml's nav puts them after the chapters, unnumbered) are reference
# tables a reader consults, so the landing page's reading time leaves them out.
PAGE_SLUGS: tuple[str, ...] = ("index", *CHAPTER_SLUGS)

# Typical silent-reading speeds: Han characters per minute and words per minute.
HAN_CHARS_PER_MINUTE = 300
WORDS_PER_MINUTE = 200

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FIGURE_REF = re.compile(r"\{\{.*?\}\}")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)


@dataclass(frozen=True)
class Chapter:
    number: int
    slug: str
    title: str


def chapter_number(slug: str) -> int | None:
    """1-based chapter number of a slug, or None for pages that are not chapters."""
    return CHAPTER_SLUGS.index(slug) + 1 if slug in CHAPTER_SLUGS else None


def first_phrasings(markdown: str) -> str:
    """`markdown` with each checked claim replaced by its first phrasing (a reader sees one phrasing of each;
    the build knows which, see `article_reading_minutes`)."""
    pieces, position = [], 0
    for claim in find_claims(markdown):
        text = claim.alternatives[0].text if claim.alternatives else ""
        pieces += [markdown[position:claim.start], text]
        position = max(position, claim.end)
    return "".join([*pieces, markdown[position:]])


def readable_text(markdown: str) -> str:
    """The prose a reader reads: front matter, code/demo fences, comments and figure refs removed; a claim
    still in it counts as its first phrasing."""
    text = _FRONT_MATTER.sub("", first_phrasings(markdown))
    text = without_fences(text)
    text = _HTML_COMMENT.sub("", text)
    return _FIGURE_REF.sub("", text)


def reading_minutes(texts: list[str]) -> int:
    """Minutes to read the texts: Han characters and Latin words counted at their own speeds."""
    han = sum(len(_HAN.findall(t)) for t in texts)
    words = sum(len(_WORD.findall(_HAN.sub(" ", t))) for t in texts)
    return max(1, math.ceil(han / HAN_CHARS_PER_MINUTE + words / WORDS_PER_MINUTE))


def first_heading(markdown: str, fallback: str) -> str:
    match = _H1.search(_FRONT_MATTER.sub("", markdown))
    return match.group(1).strip() if match else fallback


def _page_text(language_dir: Path, slug: str, printed: Callable[[Path], str | None] | None = None) -> str:
    path = language_dir / f"{slug}.md"
    shown = printed(path) if printed else None
    return shown if shown is not None else path.read_text(encoding="utf-8") if path.exists() else ""


def chapters_of(language_dir: Path) -> list[Chapter]:
    """The chapters of one language folder, with titles read from each file's first heading."""
    return [Chapter(number, slug, first_heading(_page_text(language_dir, slug), slug))
            for number, slug in enumerate(CHAPTER_SLUGS, start=1)]


def article_reading_minutes(language_dir: Path, printed: Callable[[Path], str | None] | None = None) -> int:
    """Reading time of the landing page plus every chapter of one language, as printed: `printed(path)` gives
    a page's Markdown with each claim replaced by the phrasing the build prints (None: not known, and each
    claim then counts as its first phrasing)."""
    return reading_minutes([readable_text(_page_text(language_dir, slug, printed)) for slug in PAGE_SLUGS])
