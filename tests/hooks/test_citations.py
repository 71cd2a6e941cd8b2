"""Sources under a demo: a short title in the page's language on the page, the full citation (title with its
commits and notes, link) in a <details> the reader opens, which works without JavaScript."""

from __future__ import annotations

import re

from hooks.demos import render
from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.strings import Strings, load_strings
from simulations.projection_data import load_data
from tests.languages import DEFAULT_LANGUAGE, LANGUAGES

from .conftest import DOCS, REPO

TEMPLATES = REPO / "overrides" / "pd"


def timeline_markup(measurements, strings: Strings) -> str:
    block = parse_blocks("```demo\nkind: timeline\nprojections: [llama-3.1-8b/h100-sxm/fp16]\n```\n",
                         f"docs/{strings.lang}/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    demo = BUILDERS["timeline"](block, measurements, strings)
    return render.render_demo(TEMPLATES, "timeline", {**demo.context, "strings": strings, "kind": "timeline",
                                                      "lang": strings.lang, "trace_url": "t.json", "demo_id": "d"})


def test_the_source_line_names_short_titles_in_the_pages_language_and_the_full_citation_opens(measurements, zh):
    html = timeline_markup(measurements, zh)
    line = re.search(r'<p class="pd-demo__source".*?</p>', html, re.S).group(0)
    assert "NVIDIA H100 数据手册" in line and "Llama 3.1 8B 配置文件" in line
    assert "Datasheet" not in line and "Hugging Face" not in line  # the long English citations are not on the line
    details = re.search(r'<details class="pd-demo__citations">\s*<summary>完整出处</summary>.*?</details>', html, re.S)
    assert details, "the full citations are in a closed <details> after the line"
    assert "NVIDIA H100 Tensor Core GPU Datasheet (H100 SXM and H100 PCIe columns)" in details.group(0)
    assert re.search(r'<li><a href="https://[^"]+">', details.group(0))
    assert " open" not in details.group(0).split(">", 1)[0]


def test_a_demo_without_projected_sources_has_no_citation_list(measurements, en):
    block = parse_blocks("```demo\nkind: recap\n```\n", "docs/en/x.md")[0]
    demo = BUILDERS["recap"](block, measurements, en)
    html = render.render_demo(TEMPLATES, "recap", {**demo.context, "strings": en, "kind": "recap", "lang": "en",
                                                   "trace_url": "t.json", "demo_id": "d"})
    assert "pd-demo__citations" not in html


def test_every_cited_source_has_a_short_title_in_every_language():
    ids = {source_id for name in ("accelerators", "models") for source_id in load_data(name)["sources"]}
    for lang in LANGUAGES:
        strings = load_strings(DOCS, lang, DEFAULT_LANGUAGE, REPO)
        missing = sorted(i for i in ids if f"citations.titles.{i.replace('.', '_')}" not in strings.values)
        assert missing == [], f"docs/{lang}/demo-strings.yml: no short title for {missing}"
