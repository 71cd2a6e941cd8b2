"""On the strict build: the reading time each page shows agrees with its printed text within a minute (the
landing page's is the reading path's total, each chapter card's is its chapter's), and the article's terms
are the same word for the same idea on every page (issue 49, section 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hooks.chapters import GOING_FURTHER, PAGE_SLUGS, SITE_SLUGS, reading_minutes
from tests.languages import LANGUAGES, PREFIXES
from tests.site.html_text import printed_prose

DOCS = Path(__file__).resolve().parents[2] / "docs"
_SHOWN = re.compile(r'class="pd-reading-time"[^>]*>[^<]*?(\d+)')
_CARD = re.compile(r'<a href="([a-z0-9-]+)/">([^<]*)</a>\s*<span class="pd-chapter-list__time">[^<\d]*(\d+)')


def page_html(site: Path, lang: str, slug: str) -> str | None:
    path = site / PREFIXES[lang] / ("index.html" if slug == "index" else f"{slug}/index.html")
    return path.read_text(encoding="utf-8") if path.exists() else None


def pages(site: Path, lang: str) -> dict[str, str]:
    return {slug: html for slug in SITE_SLUGS if (html := page_html(site, lang, slug)) is not None}


def shown_minutes(html: str) -> int:
    match = _SHOWN.search(html)
    assert match, "no reading time on the page"
    return int(match.group(1))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_pages_reading_time_agrees_with_its_printed_text_within_a_minute(built_site, lang):
    for slug, html in pages(built_site, lang).items():
        if slug == "index":
            continue
        counted = reading_minutes([printed_prose(html)])
        assert abs(shown_minutes(html) - counted) <= 1, f"{lang}/{slug}: shows {shown_minutes(html)} min, prints {counted}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_landing_page_shows_the_reading_paths_total_and_each_card_its_chapters_time(built_site, lang):
    built = pages(built_site, lang)
    path_text = [printed_prose(built[slug]) for slug in PAGE_SLUGS if slug in built]
    total = reading_minutes(path_text)
    assert abs(shown_minutes(built["index"]) - total) <= 1, f"{lang}: the reading path prints {total} min"
    cards = {slug: (label, int(minutes)) for slug, label, minutes in _CARD.findall(built["index"])}
    assert set(cards) == {slug for slug in built if slug not in ("index", "projections", "about-numbers")}
    for slug, (label, minutes) in cards.items():
        assert minutes == shown_minutes(built[slug]), f"{lang}: the card of {slug}"
    going_further = {slug for slug, (label, _) in cards.items() if not re.search(r"\d", label)}
    assert going_further == set(GOING_FURTHER) & set(built), "going-further cards carry no chapter number"


# -- terms -------------------------------------------------------------------------------------------

def site_text(site: Path, lang: str) -> dict[str, str]:
    """Every page's printed text, demos and generated tables included, in reading order."""
    return {slug: printed_prose(html, consulted=True) for slug, html in pages(site, lang).items()}


def where(texts: dict[str, str], pattern: str, flags: int = 0) -> list[str]:
    """Each occurrence as 'page: …context…'."""
    found = []
    for slug, text in texts.items():
        for match in re.finditer(pattern, text, flags):
            context = " ".join(text[max(0, match.start() - 15):match.end() + 15].split())
            found.append(f"{slug}: …{context}…")
    return found


def test_zh_terms_are_one_word_for_one_idea(built_site):
    texts = site_text(built_site, "zh")
    problems = []
    if len(knee := where(texts, "拐点")) > 1:
        problems.append(f"拐点 (the ridge point is 平衡点; 拐点 said once): {knee}")
    roofline = where(texts, r"(?<![A-Za-z])[Rr]oofline(?![A-Za-z])")
    if len(roofline) > 1:
        problems.append(f"Roofline beside 屋顶线 only at first use: {roofline}")
    for wrong, right in (("FLOP/byte", "FLOP/字节"), ("构建机器", "我们的测试机 or a plain word"), ("来源行", "no such word")):
        if found := where(texts, re.escape(wrong)):
            problems.append(f"{wrong} (use {right}): {found}")
    assert problems == [], "\n".join(problems)


BRITISH = (r"centre|quantis|utilis|optimis|minimis|maximis|normalis|summaris|visualis|recognis|organis|"
           r"behaviour|colour|favour|neighbour|analys(?:e|ed|es|ing)\b|modell(?:ed|ing)|labell(?:ed|ing)|\bgrey\b")


def test_en_terms_are_one_word_for_one_idea_in_us_spelling(built_site):
    texts = site_text(built_site, "en")
    problems = []
    for wrong in ("build machine", "source line"):
        if found := where(texts, re.escape(wrong), re.I):
            problems.append(f"'{wrong}' (use a plain word: the machine that built this page): {found}")
    if found := where(texts, BRITISH, re.I):
        problems.append(f"British spelling (US throughout): {found}")
    spellings = {form for form in ("datacenter", "data center", "data-center") if where(texts, re.escape(form), re.I)}
    if len(spellings) > 1:
        problems.append(f"one spelling of data center, not {sorted(spellings)}")
    if len(knee := where(texts, r"\bknees?\b", re.I)) > 1:
        problems.append(f"'knee' (the ridge point; said once, the measured turning point is another idea): {knee}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_demos_phase_labels_match_the_subtitles_words(built_site, lang):
    """The landing page's subtitle names the two phases in quotes; the demos' legends use the same words."""
    subtitle = re.search(r'<p class="pd-subtitle">(.*?)</p>', page_html(built_site, lang, "index"), re.S).group(1)
    words = re.findall(r"[「“\"]([^」”\"]+)[」”\"]", subtitle)
    assert len(words) == 2, subtitle
    demo_file = next(built_site.rglob(f"assets/traces/conversation-{lang}-*.json"))
    strings = json.loads(demo_file.read_text(encoding="utf-8"))["strings"]
    labels = (strings["common.phase_prefill"], strings["common.phase_decode"])
    assert all(word in label for word, label in zip(words, labels, strict=True)), f"{labels} against {words}"
