"""The strict build: every page at its URL, chapter order, language switcher, search and no other hosts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from hooks.chapters import CHAPTER_SLUGS, READING_PATH, SITE_SLUGS, chapter_number
from tests.languages import DEFAULT_LANGUAGE, PREFIXES
from tests.site.html_links import read_page

DOCS = Path(__file__).resolve().parents[2] / "docs"
LANGUAGE_PREFIXES = PREFIXES
# The landing page (None), the reading path, the going-further chapters, then the appendices: the pages the
# default language has (a page the writers have not made yet is not expected).
NAV_ORDER = tuple(None if slug == "index" else slug for slug in SITE_SLUGS
                  if (DOCS / DEFAULT_LANGUAGE / f"{slug}.md").exists())
CHAPTERS = tuple(slug for slug in CHAPTER_SLUGS if slug in NAV_ORDER)
SITE_HOST = "prefill-decode.example.org"  # site_url in mkdocs.yml: the site's own canonical host


def page_file(site: Path, lang: str, slug: str | None) -> Path:
    prefix = LANGUAGE_PREFIXES[lang]
    return site / prefix / (f"{slug}/index.html" if slug else "index.html")


def all_pages(site: Path) -> list[tuple[str, str | None, Path]]:
    return [(lang, slug, page_file(site, lang, slug)) for lang in LANGUAGE_PREFIXES for slug in NAV_ORDER]


def resolve(page_url: str, href: str) -> str:
    return urlparse(urljoin(page_url, href)).path


def url_path(lang: str, slug: str | None) -> str:
    return "/" + LANGUAGE_PREFIXES[lang] + (f"{slug}/" if slug else "")


def test_strict_build_has_no_warnings(site_build):
    warnings = [line for line in site_build.log.splitlines() if "WARNING" in line]
    assert warnings == []


def test_every_page_of_both_languages_exists_at_its_url(built_site):
    missing = [str(path) for _, _, path in all_pages(built_site) if not path.exists()]
    assert missing == []
    assert len(all_pages(built_site)) == len(NAV_ORDER) * len(LANGUAGE_PREFIXES) >= 18


def test_the_summary_closes_the_reading_path_and_batching_goes_further():
    assert READING_PATH[-2:] == ("bottleneck", "summary") and chapter_number("batching") is None


@pytest.mark.parametrize("lang", LANGUAGE_PREFIXES)
def test_the_batching_chapter_is_built_strict_with_its_demo_wired_to_its_json(built_site, lang):
    html = page_file(built_site, lang, "batching").read_text(encoding="utf-8")
    match = re.search(r'data-pd-demo="batching" data-pd-trace="([^"]+)"', html)
    assert match, "no batching demo in the page"
    data = json.loads((page_file(built_site, lang, "batching").parent / match.group(1)).read_text(encoding="utf-8"))
    assert data["kind"] == "batching" and data["lang"] == lang and data["batching"]["points"]
    assert "{{" not in html and "{%" not in html  # every figure filled in, every claim resolved
    summary = page_file(built_site, lang, "summary").read_text(encoding="utf-8")
    assert 'href="../batching/"' in summary  # the summary's card about batching


@pytest.mark.parametrize("lang", LANGUAGE_PREFIXES)
def test_previous_and_next_links_follow_the_chapter_order(built_site, lang):
    order = list(NAV_ORDER)
    for position, slug in enumerate(order):
        page = read_page(page_file(built_site, lang, slug))
        here = url_path(lang, slug)
        prev_links = [resolve(here, link.url) for link in page.links if "md-footer__link--prev" in link.classes]
        next_links = [resolve(here, link.url) for link in page.links if "md-footer__link--next" in link.classes]
        expected_prev = [url_path(lang, order[position - 1])] if position > 0 else []
        expected_next = [url_path(lang, order[position + 1])] if position + 1 < len(order) else []
        assert prev_links == expected_prev, f"{here}: previous link"
        assert next_links == expected_next, f"{here}: next link"


@pytest.mark.parametrize("lang", LANGUAGE_PREFIXES)
def test_language_switcher_lands_on_the_same_chapter(built_site, lang):
    for other in set(LANGUAGE_PREFIXES) - {lang}:
        for slug in NAV_ORDER:
            page = read_page(page_file(built_site, lang, slug))
            switch = [link for link in page.links
                      if "md-select__link" in link.classes and link.attrs.get("hreflang") == other]
            assert switch, f"{url_path(lang, slug)}: no link to the {other} version"
            assert resolve(url_path(lang, slug), switch[0].url) == url_path(other, slug)


@pytest.mark.parametrize("lang", LANGUAGE_PREFIXES)
def test_each_chapter_shows_its_number_and_the_html_lang(built_site, lang):
    for number, slug in enumerate(READING_PATH, start=1):
        path = page_file(built_site, lang, slug)
        html = path.read_text(encoding="utf-8")
        assert re.search(rf'class="pd-kicker"[^>]*>[^<]*\b0?{number}\b', html), f"{path}: chapter number"
        assert read_page(path).html_lang == lang


@pytest.mark.parametrize("lang", LANGUAGE_PREFIXES)
def test_landing_page_has_reading_time_tags_and_chapter_list(built_site, lang):
    html = page_file(built_site, lang, None).read_text(encoding="utf-8")
    assert re.search(r'class="pd-reading-time"[^>]*>[^<]*\d', html)
    for tag in ("Prefill", "Decode", "KV Cache", "TTFT"):
        assert tag in html
    chapter_list = html.split('class="pd-chapter-list"', 1)
    assert len(chapter_list) == 2, "chapter list is missing"
    for slug in CHAPTERS:
        assert f'href="{slug}/"' in html


def _search_docs(site: Path, lang: str) -> list[dict]:
    """The documents of one language in the site's search index (static-i18n writes one, shared)."""
    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    prefix = LANGUAGE_PREFIXES[lang]
    others = [p for p in LANGUAGE_PREFIXES.values() if p]
    return [doc for doc in docs
            if (doc["location"].startswith(prefix) if prefix else not any(doc["location"].startswith(p) for p in others))]


@pytest.mark.parametrize("word", ["延迟", "显存"])
def test_chinese_search_index_is_segmented_and_finds_words(built_site, word):
    docs = _search_docs(built_site, "zh")
    assert any("\u200b" in doc["text"] for doc in docs), "no jieba word boundaries (U+200B) in the zh index"
    boundary = r"(?:^|[\s\u200b\-_,:!=\[\]()\"`/.，。、；：！？「」（）])"
    pattern = re.compile(boundary + re.escape(word) + r"(?=$|[\s\u200b\-_,:!=\[\]()\"`/.，。、；：！？「」（）])")
    assert any(pattern.search(doc["text"]) for doc in docs), f"{word} is not a separate word in the index"


def test_no_page_loads_anything_from_another_host(built_site):
    offenders = []
    for html_file in built_site.rglob("*.html"):
        for link in read_page(html_file).links:
            host = urlparse(link.url).hostname
            outbound_prose_link = link.tag == "a" and link.in_article
            if host and host != SITE_HOST and not outbound_prose_link:
                offenders.append(f"{html_file.relative_to(built_site)}: <{link.tag} {link.attr}={link.url}>")
    assert offenders == []
