"""Search finds the article's own words: every glossary term, in both languages, finds the chapter that
defines it — typed whole, as a reader types it (Chinese terms are kept whole by search/terms.zh.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LANGS = {"": "zh", "en/": "en"}  # URL prefix → docs folder
GLOSSARY_HEADING = {"zh": "## 术语表", "en": "## Glossary"}

# Where each term is defined (the chapter that introduces it in bold).
DEFINED_IN = {
    "zh": {"提示词": "two-phases", "Prompt": "two-phases", "Token": "two-phases", "Prefill": "two-phases", "预填充": "two-phases", "Decode": "two-phases",
           "解码": "two-phases", "自回归": "decode", "KV Cache": "prefill", "TTFT": "ttft-tps", "TPS": "ttft-tps",
           "首 token 延迟": "ttft-tps", "算术强度": "bottleneck", "计算密集型": "bottleneck",
           "内存密集型": "bottleneck", "算力": "bottleneck", "带宽": "bottleneck", "ANE": "bottleneck",
           "批处理": "batching", "分块 Prefill": "batching", "屋顶线": "bottleneck", "Roofline": "bottleneck",
           "平衡点": "bottleneck", "转折点": "bottleneck"},
    "en": {"Prompt": "two-phases", "Token": "two-phases", "Prefill": "two-phases", "Decode": "two-phases", "Autoregressive": "decode",
           "KV cache": "prefill", "TTFT": "ttft-tps", "TPS": "ttft-tps", "Time to first token": "ttft-tps",
           "Arithmetic intensity": "bottleneck", "Compute-bound": "bottleneck", "memory-bound": "bottleneck",
           "ANE": "bottleneck", "Batching": "batching", "Chunked prefill": "batching", "Roofline": "bottleneck",
           "Ridge point": "bottleneck", "Turning point": "bottleneck"},
}


def glossary_terms(lang: str) -> list[str]:
    """The terms of the summary chapter's glossary: "TTFT / TPS" is two terms, "Prefill（预填充）" too."""
    text = (REPO / "docs" / lang / "summary.md").read_text(encoding="utf-8")
    section = text.split(GLOSSARY_HEADING[lang], 1)[1].split("\n## ", 1)[0]
    lines = section.split("\n")
    terms = []
    for line, following in zip(lines, lines[1:], strict=False):
        if line.strip() and following.startswith(":"):
            terms += [t.strip() for t in re.split(r"\s/\s|[（）()]", line) if t.strip()]
    return terms


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_glossary_term_has_a_chapter_to_find(lang):
    assert set(glossary_terms(lang)) <= set(DEFINED_IN[lang]), set(glossary_terms(lang)) - set(DEFINED_IN[lang])


def test_the_search_dictionary_keeps_every_chinese_glossary_term_whole():
    listed = {line.split()[0] for line in (REPO / "search" / "terms.zh.txt").read_text(encoding="utf-8").splitlines()}
    chinese = {term for term in DEFINED_IN["zh"] if re.fullmatch(r"[\u4e00-\u9fff]{3,}", term)}
    assert chinese <= listed, chinese - listed


RESULT_LINKS = ".md-search-result__item a"
# True once a result links to the chapter; else scroll the results, as a reader would, to render more.
# Material renders 10 results, then 4 more each time the list *reaches* its bottom: a list parked at the
# bottom renders nothing more, so each poll either scrolls to the bottom or, once there, halfway back up.
FOUND_OR_MORE = """([selector, chapter]) => {
  const links = [...document.querySelectorAll(selector)];
  const page = (link) => { const url = new URL(link.href); return url.origin + url.pathname; };  // no ?h=, no #
  if (links.some((link) => page(link) === chapter)) return true;
  const list = document.querySelector(".md-search__scrollwrap");
  if (list) {
    const end = list.scrollHeight - list.clientHeight;
    list.scrollTop = list.scrollTop >= end - 2 ? end / 2 : end;
  }
  return false;
}"""


@pytest.mark.browser
@pytest.mark.parametrize("prefix", list(LANGS))
def test_every_glossary_term_finds_the_chapter_that_defines_it(open_page, site_url, prefix):
    page, log = open_page(prefix + "summary/", wait_until="networkidle")
    page.keyboard.press("/")  # the gesture that starts Material, replayed to it: search opens
    page.wait_for_function("() => document.activeElement.classList.contains('md-search__input')")
    box = page.locator(".md-search__input")
    missed = []
    for term, chapter in DEFINED_IN[LANGS[prefix]].items():
        box.fill("")
        box.press("End")  # Material reads the query on keyup
        page.wait_for_function(f"() => document.querySelectorAll('{RESULT_LINKS}').length === 0")
        # Typed whole; an input method commits Chinese with a key, whose keyup Material reads.
        box.press_sequentially(term)
        box.press("End")
        try:
            page.wait_for_function(FOUND_OR_MORE, arg=[RESULT_LINKS, f"{site_url}{prefix}{chapter}/"],
                                   timeout=5000, polling=200)
        except Exception:  # noqa: BLE001 — collect every miss, then report them together
            missed.append(f"{term} → {chapter}")
    assert not missed, f"search does not find: {missed}"
    log.assert_clean()
