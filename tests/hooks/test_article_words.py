"""What a careful reader found (issue 25, section 3), checked where the build makes it: the reading time
counts the text printed, headings' anchors and the appendix speak the page's language, the appendix's
summary leaves out the anomalous run, the Neural Engine's rows show only the format it runs, the build
machine is named with what places its peaks, and the words around numbers come from the strings files."""

from __future__ import annotations

from pathlib import Path

import pytest

from hooks.chapters import PAGE_SLUGS, article_reading_minutes, first_phrasings, readable_text
from hooks.demos import formatting as fmt
from hooks.demos.builders.common import cores_text, measured_source
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.strings import read_strings
from hooks.markup_hook import translate_permalinks
from hooks.validation_view import crossover_context, summary_context, table_context
from simulations.machine import vector_extension
from tests.languages import LANGUAGES

from .conftest import DOCS


def strings_of(lang: str):
    return read_strings(DOCS / lang / "demo-strings.yml", lang, f"docs/{lang}/demo-strings.yml")


def test_a_claim_counts_as_one_phrasing_in_the_reading_time(tmp_path: Path):
    long = " ".join(["word"] * 400)
    page = f"# T\n\n{{% claim sweep.tps@128 > 1 %}}short{{% elif sweep.tps@128 <= 1 %}}{long}{{% endclaim %}}\n"
    assert readable_text(first_phrasings(page)).split() == ["#", "T", "short"]
    (tmp_path / "index.md").write_text(page, encoding="utf-8")
    assert article_reading_minutes(tmp_path) == 1  # not the 400 words never printed together
    # the build says which phrasing is printed: that one is counted
    assert article_reading_minutes(tmp_path, lambda path: long if path.name == "index.md" else None) == 2


def test_the_landing_pages_reading_time_counts_what_is_printed_not_every_alternative():
    for lang in LANGUAGES:
        raw = [(DOCS / lang / f"{slug}.md").read_text(encoding="utf-8") for slug in PAGE_SLUGS]
        printed = article_reading_minutes(DOCS / lang)
        from hooks.chapters import reading_minutes
        from hooks.markdown_blocks import without_fences

        everything = reading_minutes([without_fences(text) for text in raw])
        assert printed < everything, lang


def test_heading_anchors_tooltip_is_in_the_pages_language():
    html = '<h2 id="x">Title<a class="headerlink" href="#x" title="Permanent link">¶</a></h2>'
    assert 'title="本节链接"' in translate_permalinks(html, "本节链接")
    assert translate_permalinks(html, None) == html


def test_the_palette_toggle_speaks_each_language():
    config = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    assert "/ Follow system" not in config and "name: 跟随系统" in config and "name: Follow system" in config


def test_the_summary_leaves_out_the_anomalous_run_and_says_so():
    for lang in LANGUAGES:
        context = summary_context(strings_of(lang), lang)
        assert context["footnote"] and "1" in context["footnote"]


def test_the_appendix_notes_are_in_the_pages_language():
    notes = [row["note"] for row in table_context(strings_of("zh"), "zh")["rows"] if row["note"]]
    assert notes and all(any("\u4e00" <= ch <= "\u9fff" for ch in note) or note.startswith("codellama")
                         for note in notes)
    assert table_context(strings_of("zh"), "zh")["footnote"].startswith("每个权重的位数")


def test_the_neural_engine_row_shows_only_the_format_it_runs():
    strings = strings_of("en")
    context = crossover_context(strings, "en")
    ane = next(row for row in context["rows"] if "Neural Engine" in row["device"])
    assert ane["cells"][0] != strings["validation.not_run"]
    assert ane["cells"][1:] == [strings["validation.not_run"]] * (len(ane["cells"]) - 1)
    assert "not a bound" in context["caption"]


@pytest.mark.parametrize(("flags", "name"), [({"avx512f", "avx2", "hypervisor"}, "AVX-512"), ({"avx2"}, "AVX2"),
                                             ({"asimd"}, "NEON")])
def test_the_build_machine_is_named_with_its_widest_vector_extension(flags, name):
    assert vector_extension(flags) == name


def test_the_source_note_says_the_cores_are_virtual():
    machine = {"cpu": "Intel(R) Xeon(R) Processor", "vector": "AVX-512", "virtual": True, "cores": 2,
               "date": "2026-12-04"}
    assert cores_text(machine, strings_of("zh")) == "2 个虚拟核"
    assert measured_source(machine, "m", strings_of("en")).startswith(
        "Measured on Intel(R) Xeon(R) Processor (AVX-512, 2 virtual cores)")


def test_the_words_around_numbers_come_from_the_strings_files():
    assert fmt.times(23.94, "zh") == "23.9 倍" and fmt.times(23.94, "en") == "23.9×"
    assert fmt.number_word("numbers.above", "zh", n="64") == "64 以上"
    assert fmt.with_unit(11.9, "FLOP/byte", "zh") == "11.9 FLOP/字节"  # the zh pages' unit (issue 49, section 2)
    assert fmt.with_unit(11.9, "FLOP/byte", "en") == "11.9 FLOP/byte"
    python = (DOCS.parent / "hooks" / "demos" / "formatting.py").read_text(encoding="utf-8")
    python += (DOCS.parent / "hooks" / "demos" / "batch_figures.py").read_text(encoding="utf-8")
    assert "以上" not in python and '" 倍"' not in python


def test_the_cost_model_figures_say_what_grows_how_for_which_model(measurements):
    resolver = FigureResolver("en", measurements, None)
    llama = "llama-3.1-8b/h100-sxm/fp16"
    assert resolver.figure(f"proj.attention_share@{llama}/4096").value == pytest.approx(0.07, abs=0.01)
    assert resolver.figure(f"proj.prefill_work_growth@{llama}").value == pytest.approx(34.4, abs=0.5)
    assert resolver.figure(f"proj.knee@{llama}").value == pytest.approx(295, abs=1)
    assert resolver.figure(f"proj.prefill_crossover_tokens@{llama}").value > resolver.figure(f"proj.knee@{llama}").value
    ane, gpu = "llama-3.1-8b/apple-ane-m3-max/fp16/4096", "llama-3.1-8b/apple-m3-max-gpu/fp16/4096"
    assert resolver.figure(f"proj.ttft_worst_ms@{ane}").value > resolver.figure(f"proj.ttft_ms@{gpu}").value
