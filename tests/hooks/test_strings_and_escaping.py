"""Labels come from docs/<lang>/demo-strings.yml; text from Markdown and strings reaches pages escaped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mkdocs.exceptions import PluginError

from hooks.demos.render import render_demo
from hooks.demos.strings import load_strings

from .conftest import DOCS, REPO

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
            "strings": strings, "prompt": "Hi", "answer": "Hello"}
    return {**base, **overrides}


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
    tokens = [{"id": 1, "text": HOSTILE, "partial": False}, {"id": 2, "text": "\u00e4", "partial": True}]
    html = render_demo(TEMPLATES, "prefill", context(en, kind="prefill", prompt=HOSTILE, tokens=tokens))
    assert "<img" not in html and 'class="pd-token pd-token--partial"' in html


def test_the_answer_keeps_its_line_breaks(en):
    html = render_demo(TEMPLATES, "conversation", context(en, answer="One.\nTwo <b>."))
    assert "One.<br>Two &lt;b&gt;." in html


def test_the_repository_strings_files_are_valid_yaml_with_sections():
    for lang in ("zh", "en"):
        data = yaml.safe_load((DOCS / lang / "demo-strings.yml").read_text(encoding="utf-8"))
        assert set(data) == {"common", "conversation", "prefill", "decode", "timeline", "roofline", "recap", "device"}
