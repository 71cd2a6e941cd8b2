"""`{{ NAME }}` / `{{ NAME@ARG }}` in prose: measured and projected values with units, errors at file:line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from hooks.demos import formatting as fmt
from hooks.demos.figure_refs import find_refs
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.inline_figures import replace_figures

PAGE_READOUTS = {"conversation": {"prompt_tokens": 1234, "answer_tokens": 48, "ttft_ms": 261.4,
                                  "decode_ms_per_token": 34.12, "tps": 29.3}}


def resolver(measurements, lang: str = "en", page=PAGE_READOUTS) -> FigureResolver:
    return FigureResolver(lang, measurements, page)


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


def figure(measurements, body: str, lang: str = "en"):
    return resolver(measurements, lang).figure(body)


def test_every_figure_has_its_raw_number_and_the_text_it_prints(measurements):
    tps = figure(measurements, "sweep.tps@512")
    assert tps.value == pytest.approx(1000 / 20.512) and tps.text == "48.8 tok/s" and tps.source == "measured"
    util = figure(measurements, "roofline.prefill.compute_util")
    assert (util.value, util.text) == (0.5, "50%")
    weights = figure(measurements, "model.weight_mb")
    assert weights.text.endswith(" MB") and weights.value == measurements.simulator.model_summary()["weight_bytes"]
    assert figure(measurements, "model.name").value is None and figure(measurements, "machine.cpu").text == "Test CPU"
    assert figure(measurements, "proj.kv_share@llama-3.1-8b/h100-sxm/fp16/4096").source == "projected"


def test_sweep_growths_and_the_tps_drop(measurements):
    points = {p["prompt_tokens"]: p for p in measurements.sweep()["prompt_lengths"]}
    length = figure(measurements, "sweep.length_growth", "zh")
    assert (length.value, length.text) == (32, "32 倍")
    decode = figure(measurements, "sweep.decode_growth")
    assert decode.value == pytest.approx(points[4096]["decode_ms_per_token"] / points[128]["decode_ms_per_token"])
    drop, change = figure(measurements, "sweep.tps_drop_pct"), figure(measurements, "sweep.tps_change_pct")
    assert drop.value == pytest.approx(1 - points[4096]["tps"] / points[128]["tps"]) and drop.value > 0
    assert change.value == pytest.approx(-drop.value) and drop.text == "16%" and change.text == "-16%"


def test_prefill_work_and_utilisation_come_from_the_cost_model(measurements):
    flops = {n: measurements.simulator.pass_cost(n, 0).flops for n in (128, 512, 4096)}
    assert figure(measurements, "sweep.prefill_work_growth").value == pytest.approx(flops[4096] / flops[128])
    ttft_512 = 0.5 * 512 + 512 * 512 / 4000  # the test sweep's TTFT in ms
    util = figure(measurements, "sweep.prefill_util@512")
    assert util.value == pytest.approx(flops[512] / (ttft_512 / 1000) / 200e9) and util.text.endswith("%")


def test_decode_bytes_growth_counts_weights_and_the_whole_cache_from_the_cost_model(measurements):
    def step_bytes(context: int) -> float:
        step = measurements.simulator.pass_cost(1, context)
        return step.weight_bytes + step.kv_read_bytes + step.kv_written_bytes

    growth = figure(measurements, "sweep.decode_bytes_growth", "zh")
    assert growth.value == pytest.approx(step_bytes(4096) / step_bytes(128)) and growth.value > 1
    assert growth.text.endswith(" 倍")


def test_the_ridge_and_where_prefill_crosses_it_on_the_build_machine(measurements):
    ridge = figure(measurements, "machine.ridge")
    assert (ridge.value, ridge.text) == (8.0, "8 FLOP/byte")  # 200 GFLOP/s ÷ 25 GB/s
    crossover = figure(measurements, "machine.prefill_crossover_tokens").value

    def intensity(n: int) -> float:
        c = measurements.simulator.pass_cost(n, 0)
        return c.flops / (c.weight_bytes + c.kv_read_bytes + c.kv_written_bytes)

    assert intensity(int(crossover)) >= 8.0 > intensity(int(crossover) - 1)
    assert figure(measurements, "roofline.prompt_tokens").value == 512


VALIDATION = [{"id": "llama-2-7b/apple-m2-ultra/q4_0/tg128", "model": "llama-2-7b", "device": "apple-m2-ultra",
               "dtype": "q4_0", "phase": "decode", "test": "tg128", "published_tps": 94.27, "bound_tps": 180.5,
               "fraction": 0.5223, "source": {"id": "llama-cpp-4167", "title": "llama.cpp discussion #4167",
                                              "url": "https://github.com/ggml-org/llama.cpp/discussions/4167"}}]


def fake_resolver(rows: list[dict], validation: list[dict] = VALIDATION) -> FigureResolver:
    return FigureResolver("en", SimpleNamespace(projections=lambda: {"projections": rows, "validation": validation}), {})


def test_published_measurements_by_id_with_their_source_as_the_title():
    figures = fake_resolver([])
    rid = VALIDATION[0]["id"]
    published = figures.figure(f"pub.published_tps@{rid}")
    assert (published.value, published.text) == (94.27, "94.3 tok/s")
    assert published.title == "llama.cpp discussion #4167 https://github.com/ggml-org/llama.cpp/discussions/4167"
    assert figures.figure(f"pub.bound_tps@{rid}").source == "projected"
    assert figures.figure(f"pub.fraction@{rid}").text == "52%"
    source = figures.figure(f"pub.source@{rid}")
    assert (source.value, source.text) == (None, "llama.cpp discussion #4167")
    with pytest.raises(LookupError, match=r"no published measurement 'nope' \(known: llama-2-7b/apple-m2-ultra"):
        figures.figure("pub.fraction@nope")
    old_keys = [{**VALIDATION[0], "measured_tps": 94.27}]
    del old_keys[0]["published_tps"]
    with pytest.raises(LookupError, match="validation rows have no 'published_tps'"):
        fake_resolver([], old_keys).figure(f"pub.published_tps@{rid}")


def projection_rows(**extra) -> list[dict]:
    return [{"id": "m/d/fp16", "model": "m", "device": "d", "dtype": "fp16", "prompt_tokens": n, "tps": tps, **extra}
            for n, tps in ((128, 50.0), (4096, 40.0))]


def test_projected_tps_drop_and_prefill_crossover():
    figures = fake_resolver(projection_rows(prefill_crossover_tokens=312))
    assert figures.figure("proj.tps_drop_pct@m/d/fp16").value == pytest.approx(0.2)
    crossover = figures.figure("proj.prefill_crossover_tokens@m/d/fp16")
    assert (crossover.value, crossover.text, crossover.source) == (312, "312", "projected")


def test_a_projection_without_its_crossover_says_the_data_lacks_the_key():
    with pytest.raises(LookupError, match="has no prefill_crossover_tokens for m/d/fp16"):
        fake_resolver(projection_rows()).figure("proj.prefill_crossover_tokens@m/d/fp16")


def test_an_error_in_a_figure_reference_shows_in_place_under_serve(measurements, monkeypatch):
    from hooks import authoring

    monkeypatch.setattr(authoring, "show_in_page", True)
    html = fill("A {{ sweep.nope }} B {{ sweep.tps@512 }}", measurements)
    assert html.startswith('A <span class="pd-authoring-error"') and "unknown figure name" in html
    assert html.endswith("48.8 tok/s</span>")
