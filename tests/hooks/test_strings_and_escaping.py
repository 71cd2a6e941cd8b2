"""Labels come from docs/<lang>/demo-strings.yml; text from Markdown and strings reaches pages escaped."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from markupsafe import escape
from mkdocs.exceptions import PluginError

from hooks.demos.blocks import parse_blocks, validate
from hooks.demos.render import fill_slots, render_demo
from hooks.demos.strings import load_strings
from hooks.markdown_blocks import demo_fences
from hooks.site import PageDemos
from tests.languages import LANGUAGES

from .conftest import DOCS, REPO, CountingSimulator

TEMPLATES = REPO / "overrides" / "pd"
HOSTILE = "</script><img src=x onerror=alert(1)>"


def test_every_language_has_every_key_of_the_reference_language(zh, en):
    assert set(en.values) == set(zh.values)


def test_labels_differ_per_language(zh, en):
    assert zh["common.play"] == "播放" and en["common.play"] == "Play"
    assert en.section("common", "decode")["decode.candidates"].startswith("Top 5")


def write_strings(root: Path, lang: str, data: dict) -> None:
    (root / lang).mkdir(parents=True, exist_ok=True)
    (root / lang / "demo-strings.yml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def test_a_missing_string_names_the_language_and_the_key(tmp_path: Path):
    write_strings(tmp_path, "zh", {"common": {"play": "播放", "pause": "暂停"}})
    write_strings(tmp_path, "fr", {"common": {"play": "Lecture"}})
    with pytest.raises(PluginError, match=r"language 'fr' is missing demo string\(s\) common\.pause"):
        load_strings(tmp_path, "fr", "zh", tmp_path)


def test_a_missing_strings_file_names_the_language(tmp_path: Path):
    write_strings(tmp_path, "zh", {"common": {"play": "播放"}})
    with pytest.raises(PluginError, match="missing demo strings file for language 'de'"):
        load_strings(tmp_path, "de", "zh", tmp_path)


def test_a_key_the_build_asks_for_but_nobody_wrote_is_an_error(tmp_path: Path):
    write_strings(tmp_path, "zh", {"common": {"play": "播放"}})
    strings = load_strings(tmp_path, "zh", "zh", tmp_path)
    with pytest.raises(PluginError, match="language 'zh' has no demo string 'decode.title'"):
        strings["decode.title"]


def test_an_unknown_placeholder_in_a_translation_is_an_error(tmp_path: Path):
    write_strings(tmp_path, "zh", {"common": {"measured_on": "实测于 {machine}"}})
    strings = load_strings(tmp_path, "zh", "zh", tmp_path)
    with pytest.raises(PluginError, match="unknown placeholder"):
        strings.format("common.measured_on", cpu="x")


def context(strings, **overrides):
    base = {"kind": "conversation", "lang": strings.lang, "trace_url": "../assets/traces/c.json",
            "demo_id": "pd-demo-conversation-1", "title": strings["conversation.title"], "note": None,
            "rows": [], "table": None, "source_measured": "Measured", "source_projected": None,
            "strings": strings, "prompt": "Hi", "answer": "Hello", "answer_parts": [{"text": "Hello"}],
            "prompt_summary": None, "notes": {"stopped": None, "caveat": None}}
    base.update(overrides)
    if "answer" in overrides and "answer_parts" not in overrides:
        base["answer_parts"] = [{"text": overrides["answer"]}]
    return base


def test_the_placeholder_has_the_contract_attributes_and_a_readable_fallback(en):
    html = render_demo(TEMPLATES, "conversation", context(en, rows=[("TTFT", "12 ms")]))
    assert html.startswith('<figure class="pd-demo pd-demo--conversation" data-pd-demo="conversation" '
                           'data-pd-trace="../assets/traces/c.json" data-pd-lang="en"')
    assert 'aria-labelledby="pd-demo-conversation-1-title"' in html
    assert "data-pd-stage" in html and "data-pd-fallback" in html
    assert "<dt>TTFT</dt><dd>12 ms</dd>" in html and ">Hello<" in html
    assert "\n\n" not in html  # one raw-HTML block: Markdown must not split it


def test_hostile_prompt_answer_note_and_strings_are_escaped(tmp_path: Path, en):
    values = {**{k: v for k, v in en.values.items()}, "common.prompt": HOSTILE}
    hostile_strings = type(en)(en.lang, en.path, values)
    html = render_demo(TEMPLATES, "conversation", context(
        hostile_strings, prompt=HOSTILE, answer=HOSTILE, note=HOSTILE, title=HOSTILE,
        rows=[(HOSTILE, HOSTILE)], source_measured=HOSTILE))
    assert "<script" not in html.replace("&lt;/script", "") and "<img" not in html
    assert html.count("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") >= 6


def test_hostile_token_texts_are_escaped_in_the_prefill_fallback(en):
    tokens = [{"id": 1, "text": HOSTILE, "partial": False, "bytes": "3C", "role": "user"},
              {"id": 2, "text": "\u00e4", "partial": True, "bytes": "C3", "role": "user"}]
    html = render_demo(TEMPLATES, "prefill", context(en, kind="prefill", prompt=HOSTILE, tokens=tokens))
    assert "<img" not in html and 'class="pd-token pd-token--user pd-token--partial"' in html


def test_the_prefill_fallback_shows_each_tokens_bytes_and_says_what_a_split_character_is(en):
    tokens = [{"id": 1, "text": "请", "partial": True, "bytes": "E8 AF", "role": "user"},
              {"id": 2, "text": "请", "partial": True, "bytes": "B7", "role": "user"}]
    html = render_demo(TEMPLATES, "prefill", context(en, kind="prefill", prompt="请", tokens=tokens))
    assert '请 <small class="pd-token__hex">E8 AF</small>' in html and ">B7<" in html
    assert en["prefill.partial_legend"].replace("'", "&#39;") in html


def test_an_answer_token_without_a_whole_character_shows_its_bytes_and_why(en):
    html = render_demo(TEMPLATES, "prefill", context(
        en, kind="prefill", tokens=[], answer="\ufffd", answer_parts=[{"bytes": "E8 AF"}],
        notes={"stopped": en["common.first_token_only"], "caveat": None}))
    assert "\ufffd</p>" not in html and '<span class="pd-token pd-token--partial pd-token--bytes">E8 AF</span>' in html
    assert "holds only part of a character" in html and "generates only the first token" in html


def test_the_fallback_says_an_answer_was_cut_off_and_counts_the_template_tokens(en):
    html = render_demo(TEMPLATES, "conversation", context(
        en, prompt_summary="Of the 37 tokens the model reads, 30 come from the template",
        notes={"stopped": "cut off at 64", "caveat": "may be wrong"}))
    for sentence in ("Of the 37 tokens", "cut off at 64", "may be wrong"):
        assert sentence in html


def test_the_answer_keeps_its_line_breaks(en):
    html = render_demo(TEMPLATES, "conversation", context(en, answer="One.\nTwo <b>."))
    assert "One.<br>Two &lt;b&gt;." in html


def test_the_repository_strings_files_are_valid_yaml_with_sections():
    for lang in LANGUAGES:
        data = yaml.safe_load((DOCS / lang / "demo-strings.yml").read_text(encoding="utf-8"))
        assert set(data) == {"common", "conversation", "prefill", "decode", "timeline", "roofline", "recap",
                             "validation", "device", "batching", "formats", "numbers", "validation_notes", "citations",
                             "live"}


# --- Text from prompts, answers, notes and strings files is never template syntax -------------------------

TEMPLATE_SYNTAX = "Say {{ machine.cpu }} and stop. {% claim ttft %} <b>bold</b> **stars** [link](x.md)"


class ParrotingSimulator(CountingSimulator):
    """The tiny model, except that its answer is whatever the test says."""

    def __init__(self, answer: str | None) -> None:
        super().__init__()
        self.answer = answer

    def record(self, prompt: str, **kwargs):
        trace = super().record(prompt, **kwargs)
        if self.answer is not None:
            trace["answer"] = self.answer
        return trace


def built_page(tmp_path: Path, strings, *, prompt: str = "Hello", note: str = "A note", answer: str | None = None):
    """One page through the demo hook's passes and Markdown, as `mkdocs build` runs them: the HTML."""
    import markdown
    from mkdocs.config.defaults import MkDocsConfig

    from hooks.demos.cache import ResultCache
    from hooks.demos.measurements import Measurements
    from hooks.site import DemoSite
    from tests.hooks.conftest import QUICK

    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(DOCS), "site_dir": str(tmp_path / "site")})
    config.validate()
    config.plugins._current_plugin = None  # File.generated records which plugin made a file
    measurements = Measurements(ParrotingSimulator(answer), ResultCache(tmp_path / "cache", memo={}), "code-v1", QUICK)
    source = ("# Title\n\nThe build machine has {{ machine.cores }} cores.\n\n"
              f"```demo\nkind: conversation\nmax_new_tokens: 3\nprompt: {json.dumps(prompt)}\nnote: {json.dumps(note)}\n```\n")
    page_path = DOCS / strings.lang / "literal-test.md"
    site = DemoSite(REPO, measurements, TEMPLATES)
    site.strings, site.lang = strings, strings.lang
    demos = PageDemos(f"docs/{strings.lang}/literal-test.md", "literal-test/", source, demo_fences(source))
    demos.places = [site._place(demos, validate(block, site.limits), config)
                    for block in parse_blocks(source, "literal-test.md")]
    site.pages = {demos.src_path: demos}
    page = SimpleNamespace(file=SimpleNamespace(url="literal-test/", abs_src_path=str(page_path)))
    body = markdown.markdown(site.page_markdown(source, page),
                             extensions=["md_in_html", "attr_list", "admonition", "pymdownx.superfences"])
    return site.page_content(body, page)


@pytest.mark.parametrize("source", ["prompt", "answer", "note", "strings file"])
def test_text_from_every_source_reaches_the_page_literally_never_as_template_syntax(tmp_path, en, source):
    strings = en
    if source == "strings file":
        strings = type(en)(en.lang, en.path, {**en.values, "conversation.title": TEMPLATE_SYNTAX,
                                              "common.answer": TEMPLATE_SYNTAX})
    html = built_page(tmp_path, strings, prompt=TEMPLATE_SYNTAX if source == "prompt" else "Hello",
                      note=TEMPLATE_SYNTAX if source == "note" else "A note",
                      answer=TEMPLATE_SYNTAX if source == "answer" else None)
    assert str(escape(TEMPLATE_SYNTAX)) in html  # {{ … }}, {% … %}, HTML and Markdown all as typed
    assert "Say AMD" not in html and "Say Test CPU" not in html and "<b>bold</b>" not in html and "<strong>" not in html
    assert "{{ machine.cores }}" not in html and 'class="pd-figure"' in html  # the prose's own figure was filled in
    assert "pd-demo-slot" not in html and html.count('data-pd-demo="conversation"') == 1


def test_a_demo_placeholder_lost_on_the_way_through_markdown_is_an_error():
    with pytest.raises(PluginError, match=r"docs/en/x\.md: the page's 1 demo placeholder\(s\) did not come through"):
        fill_slots("<p>nothing here</p>", ["<figure></figure>"], "docs/en/x.md")


def test_a_chart_title_is_escaped_for_plotly_and_plain_as_the_charts_accessible_name(en):
    from hooks.demos.figures import recap
    from hooks.demos.strings import Strings

    strings = Strings(en.lang, en.path, {**en.values, "recap.title": "TTFT <|im_start|> & TPS"})
    sweep = {"prompt_lengths": [{"prompt_tokens": n, "ttft_ms": n / 2, "decode_ms_per_token": 20.0, "tps": 50.0}
                                for n in (128, 512)]}
    figure = recap.recap(sweep, strings, "source")
    assert figure["label"] == "TTFT <|im_start|> & TPS"  # set as an attribute by the page: nothing to un-escape
    assert figure["layout"]["title"]["text"] == "TTFT &lt;|im_start|&gt; &amp; TPS"  # Plotly reads tags in labels


def test_a_page_is_built_from_the_text_its_demos_were_found_in(tmp_path: Path):
    """A file saved again while a build runs (`mkdocs serve`, an author typing): the page's source is the text
    the demo hook read when it found the page's demos, not the file as it is when MkDocs gets to the page."""
    from hooks.site import DemoSite

    page_path = tmp_path / "docs" / "en" / "page.md"
    page_path.parent.mkdir(parents=True)
    page_path.write_text("# Read first\n", encoding="utf-8")
    site = DemoSite(tmp_path, None, TEMPLATES)
    file = SimpleNamespace(abs_src_path=str(page_path), url="page/")
    source = page_path.read_text(encoding="utf-8")
    site.pages = {site.shown_path(file): PageDemos(site.shown_path(file), "page/", source, demo_fences(source))}
    page_path.write_text("# Saved during the build\n\n```demo\nkind: conversation\nprompt: hi\n```\n", encoding="utf-8")
    assert site.source_of(file) == "# Read first\n"
    assert site.source_of(SimpleNamespace(abs_src_path=str(tmp_path / "docs" / "en" / "other.md"), url="other/")) is None
