"""The appendix 'projections': generated tables of published measurements beside their bounds, in both languages."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from simulations import projection_data
from tests.languages import PREFIXES
from simulations import projections as pj

PAGES = {lang: f"{prefix}projections/index.html" for lang, prefix in PREFIXES.items()}


class _Tables(HTMLParser):
    """Every <table> of the article: its caption and its rows of cell texts, plus the links in it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"caption": "", "rows": [], "links": []})
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = []
        elif tag == "a" and self.tables and self._cell is not None:
            self.tables[-1]["links"].append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "caption":
            self._in_caption = False
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_caption:
            self.tables[-1]["caption"] += data
        elif self._cell is not None:
            self._cell.append(data)


def tables_of(site: Path, lang: str) -> list[dict]:
    html = (site / PAGES[lang]).read_text(encoding="utf-8")
    parser = _Tables()
    parser.feed(html[html.index("<article"):html.index("</article>")])
    return parser.tables


@pytest.mark.parametrize("lang", PAGES)
def test_the_appendix_has_no_chapter_number_and_every_marker_is_replaced(built_site, lang):
    html = (built_site / PAGES[lang]).read_text(encoding="utf-8")
    assert 'class="pd-kicker"' not in html
    assert "<!-- pd:" not in html  # every marker was replaced


@pytest.mark.parametrize("lang", PAGES)
def test_every_published_row_is_on_the_page_with_its_source_link_and_readable_names(built_site, lang):
    rows = pj.validate()
    table = next(t for t in tables_of(built_site, lang) if len(t["rows"]) == len(rows) + 1)
    body = table["rows"][1:]
    assert all(len(cells) == 9 for cells in body)
    assert {row["source"]["url"] for row in rows} == set(table["links"])
    shown = " ".join(" ".join(cells) for cells in body)
    assert "Llama 3 8B" in shown and "NVIDIA H100 PCIe" in shown and "Q4_K_M" in shown
    for row in rows:
        assert row["id"] not in shown  # ids stay in the data; the page shows names
    fractions = [float(cells[6].rstrip("%")) for cells in body]
    assert max(fractions) <= 100 and len(fractions) >= 20


@pytest.mark.parametrize("lang", PAGES)
def test_the_summary_crossover_and_neural_engine_tables_are_generated(built_site, lang):
    tables = tables_of(built_site, lang)
    summary = next(t for t in tables if len(t["rows"]) == 1 + 2 * len(pj.DEVICE_CLASSES))
    counts = [int(cells[2]) for cells in summary["rows"][1:]]
    rows = pj.validate()  # an anomalous published run stays in the table, out of the summary
    assert sum(counts) == len([r for r in rows if not r["anomalous"]])
    crossover = next(t for t in tables if len(t["rows"]) == 1 + len(projection_data.load_data("accelerators")["devices"]))
    h100 = next(cells for cells in crossover["rows"] if cells[0] == "NVIDIA H100 SXM")
    assert h100[1] == f"{pj.prefill_crossover_tokens('llama-3.1-8b', 'h100-sxm', 'fp16'):,}"
    neural_engine = tables[-1]
    best, worst = (float(re.sub(r"[^\d.]", "", cell)) for cell in neural_engine["rows"][-1][1:])
    assert worst > 3 * best  # the decode time of the Neural Engine is stated as a range
