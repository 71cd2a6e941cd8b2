"""`{{ NAME }}` / `{{ NAME@ARG }}` in prose: measured and projected values with units, errors at file:line."""

from __future__ import annotations

import pytest
from mkdocs.exceptions import PluginError

from hooks.demos import formatting as fmt
from hooks.demos.inline_figures import FigureResolver, figure_sources, find_refs, replace_figures

PAGE_READOUTS = {"conversation": {"prompt_tokens": 1234, "answer_tokens": 48, "ttft_ms": 261.4,
                                  "decode_ms_per_token": 34.12, "tps": 29.3}}


def resolver(measurements, lang: str = "en", page=PAGE_READOUTS) -> FigureResolver:
    return FigureResolver(lang, figure_sources(measurements), page)


TITLES = {"measured": lambda: "Measured on Test CPU", "projected": lambda: "Projected <from specs>"}


def fill(text: str, measurements, lang: str = "en", source: str | None = None) -> str:
    return replace_figures(text, source if source is not None else text, "docs/en/x.md",
                           resolver(measurements, lang), TITLES)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_numbers_use_units_and_thousands_separators_in_both_languages(lang):
    assert fmt.ms(1234.5, lang) == "1,234 ms" and fmt.ms(34.12, lang) == "34.1 ms" and fmt.ms(0.26, lang) == "0.26 ms"
    assert fmt.tps(29.31, lang) == "29.3 tok/s" and fmt.percent(0.523, lang) == "52%"
    assert fmt.percent(0.012, lang) == "1.2%"
    assert fmt.nbytes(1_572_864, lang) == "1.57 MB" and fmt.params(134_515_008, lang) == "135M"


def test_times_reads_bei_in_chinese_and_a_times_sign_in_english():
    assert fmt.times(23.94, "zh") == "23.9 倍" and fmt.times(23.94, "en") == "23.9×"
    assert fmt.times(32.0, "zh") == "32 倍" and fmt.times(102.4, "en") == "102×"


def test_page_figures_come_from_the_page_demo(measurements):
    html = fill("TTFT was {{ conversation.ttft_ms }} for {{conversation.prompt_tokens}} tokens.", measurements)
    assert html == ('TTFT was <span class="pd-figure" title="Measured on Test CPU">261 ms</span> for '
                    '<span class="pd-figure" title="Measured on Test CPU">1,234</span> tokens.')


def test_global_figures_with_arguments(measurements):
    html = fill("{{ sweep.ttft_ms@512 }} {{ cache.speedup@1024 }} {{ sweep.ttft_growth }}", measurements)
    sweep = measurements.sweep()
    ttft = {p["prompt_tokens"]: p["ttft_ms"] for p in sweep["prompt_lengths"]}
    assert f">{fmt.ms(ttft[512], 'en')}<" in html and ">102×<" in html  # 2048 / 20 ms, no decimals past 100
    assert f">{fmt.times(ttft[4096] / ttft[128], 'en')}<" in html


def test_projected_figures_say_so_in_their_title(measurements):
    html = fill("{{ proj.kv_share@llama-3.1-8b/h100-sxm/fp16/4096 }}", measurements)
    assert 'title="Projected &lt;from specs&gt;"' in html and html.endswith("%</span>")


def test_an_unknown_name_names_file_and_line_and_lists_the_names(measurements):
    with pytest.raises(PluginError) as caught:
        fill("line one\n\nThe {{ sweep.latency@512 }} here.", measurements)
    message = str(caught.value)
    assert message.startswith("docs/en/x.md:3: unknown figure name 'sweep.latency'")
    assert "sweep.ttft_ms@N" in message and "proj.kv_share@MODEL/DEVICE/DTYPE/N" in message


def test_an_unmeasured_argument_lists_the_measured_values(measurements):
    with pytest.raises(PluginError, match=r"x.md:1: @300 is not measured \(measured: 128, 512, 2048, 4096\)"):
        fill("{{ sweep.tps@300 }}", measurements)


def test_a_page_figure_without_its_demo_on_the_page_is_an_error(measurements):
    with pytest.raises(PluginError, match="decode.ms_per_token needs a `decode` demo block on this page"):
        fill("{{ decode.ms_per_token }}", measurements)


def test_the_reported_line_is_the_line_in_the_file_even_after_other_hooks_added_lines(measurements):
    source = "---\ntitle: X\n---\n\n# T\n\n{{ nope }}\n"
    markdown = "Chapter 01\n{ .pd-kicker }\n\n# T\n\n{{ nope }}\n"  # front matter gone, a kicker added
    with pytest.raises(PluginError, match=r"^docs/en/x.md:7: "):
        fill(markdown, measurements, source=source)


def test_references_inside_code_are_left_alone(measurements):
    text = "Write `{{ sweep.tps@512 }}` like this:\n\n```\n{{ anything }}\n```\n"
    assert find_refs(text) == []
    assert fill(text, measurements) == text


def test_malformed_reference_is_an_error(measurements):
    with pytest.raises(PluginError, match="is not a figure reference"):
        fill("{{ sweep.tps @ 512 }}", measurements)
