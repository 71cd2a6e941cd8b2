"""Figure builders: results in, Plotly figure structure out — traces, frames and what each shows,
labels from strings, and none of Plotly's own controls (the page's player is the only one)."""

from __future__ import annotations

import json

import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.figures import decode, prefill, recap, roofline, timeline
from hooks.demos.figures.common import BOTTOM
from hooks.demos.strings import Strings

SOURCE = "Measured on Test CPU (2 cores)"


@pytest.fixture
def trace(measurements):
    return measurements.trace("Explain quantum computing in three sentences.", 6)


def axis_title(figure: dict, axis: str = "xaxis") -> str:
    return figure["layout"][axis]["title"]["text"]


def test_kv_heatmap_shows_k_and_v_side_by_side_and_fills_in_one_step(trace, strings: Strings):
    figure = prefill.kv_heatmap(trace, strings, SOURCE)
    assert [t["type"] for t in figure["data"]] == ["heatmap", "heatmap"]
    # Every row is written in the one prefill pass: the figure holds them all, and the page's player
    # fades both heatmaps in at once (no frames).
    assert "frames" not in figure
    assert [len(t["z"]) for t in figure["data"]] == [len(trace["kv_slice"]["k"])] * 2
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert strings["prefill.k_title"] in titles and strings["prefill.v_title"] in titles
    assert axis_title(figure) == strings["prefill.axis_dim"]
    assert SOURCE in titles  # every chart states its source


def test_prefill_time_plots_measured_time_over_linear_and_attention_work(measurements, strings: Strings, trace):
    figure = prefill.prefill_time(measurements.sweep(), trace["model"], strings, SOURCE)
    names = [t["name"] for t in figure["data"]]
    assert names == [strings["prefill.legend_linear"], strings["prefill.legend_attention"],
                     strings["prefill.legend_measured"]]
    assert axis_title(figure) == strings["common.axis_prompt_tokens"]
    assert axis_title(figure, "yaxis2") == strings["prefill.axis_gflop"]


def test_prefill_linear_work_grows_with_every_block_matrix_per_token_and_counts_the_lm_head_once(trace):
    """The model runs the LM head on the last position only, so the chart charges it once."""
    m = trace["model"]
    (linear_100, attention_100), (linear_200, _) = prefill.prefill_flops_split(m, 100), prefill.prefill_flops_split(m, 200)
    q, kv = m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    block_matrices = m["layers"] * (m["d_model"] * (2 * q + 2 * kv) + 3 * m["d_model"] * m["d_ff"])
    assert (linear_200 - linear_100) / 100 == 2 * block_matrices
    assert linear_100 == 100 * 2 * block_matrices + 2 * m["vocab_size"] * m["d_model"]
    assert attention_100 == 4 * m["layers"] * m["heads"] * m["head_dim"] * (100 * 101 // 2)


def test_attention_heatmap_has_one_row_per_decode_step_and_its_cells_travel_once_in_the_steps(
        trace, strings: Strings, measurements):
    figure = decode.attention(trace, strings, SOURCE)
    decode_steps = [s for s in trace["steps"] if s["phase"] == "decode"]
    assert figure["data"][0]["z"] == []  # decode.js fills it from the steps' attention
    yaxis = figure["layout"]["yaxis"]
    assert yaxis["range"] == [len(decode_steps) - 0.5, -0.5]  # a row per step, the first on top
    # numbered from 1, the first row and every fifth: a number on every row overlapped its neighbours
    assert [int(text) for text in yaxis["ticktext"]] == [row + 1 for row in yaxis["tickvals"]]
    assert yaxis["tickvals"][0] == 0 and all((row + 1) % 5 == 0 for row in yaxis["tickvals"][1:])
    block = parse_blocks("```demo\nkind: decode\nprompt: Explain quantum computing in three sentences.\n"
                         "max_new_tokens: 6\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    steps = BUILDERS["decode"](block, measurements, strings).data["steps"]
    rows = [step["attention"] for step in steps if step["attention"]]
    assert len(rows) == len(decode_steps)
    for row, step in zip(rows, decode_steps, strict=True):
        assert row == pytest.approx(step["attention"]["weights"], abs=1e-3)
    # No frames: the player moves a mask over the rows not decoded yet, hidden until it does.
    assert "frames" not in figure
    [mask] = figure["layout"]["shapes"]
    assert mask["name"] == decode.MASK_SHAPE and mask["visible"] is False
    assert axis_title(figure) == strings["decode.axis_position"]


def test_cache_vs_recompute_has_both_lines_over_every_context(measurements, strings: Strings):
    figure = decode.cache_vs_recompute(measurements.sweep(), strings, SOURCE)
    assert [t["name"] for t in figure["data"]] == [strings["decode.legend_recompute"], strings["decode.legend_cached"]]
    assert [t["x"] for t in figure["data"]] == [[64, 128, 256, 512, 1024]] * 2
    assert figure["layout"]["yaxis"]["type"] == "log"


def test_timeline_draws_each_point_in_the_frame_the_point_names(strings: Strings):
    sources = [{"id": "measured", "points": [{"prompt_tokens": 128, "ttft_ms": 10.0, "decode_ms_per_token": 5.0, "frame": 0},
                                             {"prompt_tokens": 512, "ttft_ms": 40.0, "decode_ms_per_token": 5.5, "frame": 1}]},
               {"id": "llama-3.1-8b/h100-sxm/fp16",
                "points": [{"prompt_tokens": 128, "ttft_ms": 1.0, "decode_ms_per_token": 2.0, "frame": 2}]}]
    figure = timeline.timeline(sources, strings, SOURCE)
    assert [f["name"] for f in figure["frames"]] == ["0", "1", "2"]  # plain indices: the page never parses a name
    assert figure["frames"][2]["data"][0]["x"] == [1.0]
    frame = figure["frames"][1]
    assert frame["data"][0]["x"] == [40.0]  # prefill block as long as TTFT, to scale
    assert len(frame["data"][1]["base"]) == timeline.ANSWER_TOKENS
    assert frame["layout"]["xaxis"]["range"][1] >= 40.0 + timeline.ANSWER_TOKENS * 5.5
    assert axis_title(figure) == strings["timeline.axis_time"]


def test_roofline_has_the_roof_and_both_phases_with_a_frame_per_prompt_length(measurements, strings: Strings):
    result = measurements.roofline()
    points = [{"prompt_tokens": n, "prefill": result["prefill"], "decode": result["decode"]} for n in (128, 512)]
    figure = roofline.roofline(result["machine"], points, strings, SOURCE)
    assert [t["name"] for t in figure["data"]] == [strings["roofline.legend_roof"], strings["common.phase_prefill"],
                                                   strings["common.phase_decode"]]
    assert [f["name"] for f in figure["frames"]] == ["0", "1"]  # frame i draws points[i]
    assert [f["data"][0]["x"] for f in figure["frames"]] == [[result["prefill"]["intensity"]]] * 2
    assert figure["layout"]["xaxis"]["type"] == "log" and figure["layout"]["yaxis"]["type"] == "log"
    assert max(figure["data"][0]["y"]) == pytest.approx(200.0)  # compute ceiling = peak GFLOP/s


def test_recap_puts_ttft_above_tps_with_the_legend_clear_of_the_subplot_titles(measurements, strings: Strings):
    figure = recap.recap(measurements.sweep(), strings, SOURCE)
    layout = figure["layout"]
    assert [t["name"] for t in figure["data"]] == [strings["common.ttft"], strings["common.tps"]]
    assert layout["xaxis2"]["title"]["text"] == strings["common.axis_prompt_tokens"]
    assert layout["yaxis"]["domain"][0] > layout["yaxis2"]["domain"][1]  # TTFT's plot is above TPS's
    titles = [a for a in layout["annotations"] if a["text"] in (strings["recap.ttft_title"], strings["recap.tps_title"])]
    plots_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    for title in titles:  # the legend's bottom edge is a whole title row above the highest subplot title
        assert layout["legend"]["yanchor"] == "bottom" and (layout["legend"]["y"] - title["y"]) * plots_px >= 30


def test_prefill_time_bars_stand_on_one_category_per_prompt_length(measurements, strings: Strings, trace):
    """On a log axis a bar's width is in data units: each bar came out a different width."""
    figure = prefill.prefill_time(measurements.sweep(), trace["model"], strings, SOURCE)
    lengths = [f"{p['prompt_tokens']:,}" for p in measurements.sweep()["prompt_lengths"]]
    assert figure["layout"]["xaxis"]["type"] == "category"
    assert all(t["x"] == lengths for t in figure["data"])


def test_kv_heatmap_has_two_upright_ticks_per_matrix_and_titles_that_grow_apart(trace, strings: Strings):
    figure = prefill.kv_heatmap(trace, strings, SOURCE)
    layout = figure["layout"]
    for axis in ("xaxis", "xaxis2"):
        assert layout[axis]["tickvals"] == [0, trace["kv_slice"]["dims"] // 2] and layout[axis]["tickangle"] == 0
    k_title, v_title = (a for a in layout["annotations"] if a["text"] in (strings["prefill.k_title"],
                                                                          strings["prefill.v_title"]))
    assert (k_title["xanchor"], k_title["x"]) == ("right", layout["xaxis"]["domain"][1])
    assert (v_title["xanchor"], v_title["x"]) == ("left", layout["xaxis2"]["domain"][0])


def test_figures_carry_no_fixed_background_or_font_colour(measurements, strings: Strings):
    figure = recap.recap(measurements.sweep(), strings, SOURCE)
    layout = figure["layout"]
    assert layout["paper_bgcolor"] == "rgba(0,0,0,0)" and layout["plot_bgcolor"] == "rgba(0,0,0,0)"
    assert "color" not in layout.get("font", {})


@pytest.mark.parametrize("kind, text", [
    ("conversation", "kind: conversation\nprompt: Hi"), ("prefill", "kind: prefill\nprompt: Hi"),
    ("decode", "kind: decode\nprompt: Hi\nmax_new_tokens: 3"),
    ("timeline", "kind: timeline\nprojections: [llama-3.1-8b/h100-sxm/fp16]"),
    ("roofline", "kind: roofline\nprojections: [llama-3.1-8b/h100-sxm/fp16]"), ("recap", "kind: recap"),
])
def test_every_kind_builds_demo_json_with_the_contract_fields(measurements, strings: Strings, kind, text):
    block = parse_blocks(f"```demo\n{text}\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    demo = BUILDERS[kind](block, measurements, strings)
    data = demo.data
    json.dumps(data, allow_nan=False)
    assert data["schema"] == "prefill-decode-demo/2" and data["kind"] == kind and data["lang"] == strings.lang
    assert demo.context["source_measured"].startswith(strings["common.measured_on"].split("{")[0])
    # The conversation demo also carries the labels of "Run it on this device" (the live model's section).
    shared = ("common", kind, "live") if kind == "conversation" else ("common", kind)
    assert all(key.split(".")[0] in shared for key in data["strings"])
    expected = {"conversation": set(), "prefill": {"kv_heatmap", "prefill_time"},
                "decode": {"attention", "cache_vs_recompute"}, "timeline": {"timeline"},
                "roofline": {"roofline", "utilization"}, "recap": {"recap"}}[kind]
    assert set(data.get("figures", {})) == expected  # a kind without charts carries no "figures"
    if kind in ("conversation", "prefill", "decode"):
        assert data["prompt"]["tokens"] and data["steps"] and data["answer"]["text"]
    if kind in ("timeline", "roofline"):
        assert demo.context["source_projected"]  # projected numbers name their spec sources


def test_utilization_shows_one_source_at_a_time_with_a_frame_per_source(measurements, strings: Strings):
    result = measurements.roofline()
    rows = [{"label": "here", "prefill": result["prefill"], "decode": result["decode"], "frame": 0},
            {"label": "8B on H100", "prefill": result["decode"], "decode": result["prefill"], "frame": 1}]
    figure = roofline.utilization(rows, strings, SOURCE)
    assert [t["name"] for t in figure["data"]] == ["here"]
    assert [f["name"] for f in figure["frames"]] == ["0", "1"]
    assert [f["data"][0]["name"] for f in figure["frames"]] == ["here", "8B on H100"]


def every_figure(measurements, strings: Strings, trace) -> list[dict]:
    result = measurements.roofline()
    points = [{"prompt_tokens": 128, "prefill": result["prefill"], "decode": result["decode"]}]
    sources = [{"id": "measured", "points": [{"prompt_tokens": 128, "ttft_ms": 10.0, "decode_ms_per_token": 5.0,
                                              "frame": 0}]}]
    return [prefill.kv_heatmap(trace, strings, SOURCE), prefill.prefill_time(measurements.sweep(), trace["model"], strings, SOURCE),
            decode.attention(trace, strings, SOURCE), decode.cache_vs_recompute(measurements.sweep(), strings, SOURCE),
            timeline.timeline(sources, strings, SOURCE), roofline.roofline(result["machine"], points, strings, SOURCE),
            roofline.utilization([{"label": "here", "prefill": result["prefill"], "decode": result["decode"],
                                   "frame": 0}], strings, SOURCE),
            recap.recap(measurements.sweep(), strings, SOURCE)]


def test_no_figure_carries_plotly_controls_or_keeps_room_for_them(measurements, strings: Strings, trace):
    """The page's player is the one set of controls: no Plotly play buttons or slider, nor the margin they took."""
    for figure in every_figure(measurements, strings, trace):
        layout = figure["layout"]
        assert "updatemenus" not in layout and "sliders" not in layout, figure["label"]
        assert layout["margin"]["b"] == BOTTOM, figure["label"]  # axis title and source note only
        # A frame's name is only its index; what it draws, the demo's data says.
        assert [f["name"] for f in figure.get("frames", [])] == [str(i) for i in range(len(figure.get("frames", [])))]


def test_each_figure_names_itself_in_plain_text_for_the_page(measurements, strings: Strings, trace):
    """`label` is the chart's accessible name: the title as written, markup and all, never entities."""
    bad = hostile_strings(strings)
    for figure in every_figure(measurements, bad, trace):
        assert HOSTILE in figure["label"] and "&lt;" in figure["layout"]["title"]["text"]


HOSTILE = "<a href='https://evil.example'>x</a><b>y</b> & <img src=x onerror=alert(1)>"


def hostile_strings(strings: Strings) -> Strings:
    values = {key: value + HOSTILE for key, value in strings.values.items()}
    return Strings(strings.lang, strings.path, values)


def plotly_text(figure: dict) -> list[str]:
    """Every string in the figure (minus frame names and button args, which Plotly never shows)."""
    found: list[str] = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k not in ("args", "meta"):
                    walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key not in ("type", "name", "bdata", "dtype"):
            found.append(node)
    walk(figure.get("layout"))
    walk(figure.get("data"))
    for frame in figure.get("frames") or []:
        walk(frame.get("data"))
        walk(frame.get("layout"))
    return found


def test_labels_from_the_strings_file_reach_plotly_escaped(measurements, strings: Strings, trace):
    bad = hostile_strings(strings)
    result = measurements.roofline()
    figures = [prefill.kv_heatmap(trace, bad, HOSTILE), prefill.prefill_time(measurements.sweep(), trace["model"], bad, ""),
               decode.attention(trace, bad, ""), decode.cache_vs_recompute(measurements.sweep(), bad, ""),
               roofline.utilization([{"label": HOSTILE, "prefill": result["prefill"], "decode": result["decode"],
                                      "frame": 0}], bad, ""),
               recap.recap(measurements.sweep(), bad, "")]
    for figure in figures:
        texts = plotly_text(figure)
        assert any("&lt;a href=" in text for text in texts)
        for text in texts:
            assert "<a " not in text and "<b>" not in text and "<img" not in text, text
        names = [t["name"] for t in figure["data"] if "name" in t]
        assert all("<" not in name for name in names)
    hover = decode.attention(trace, bad, "")["data"][0]["hovertemplate"]
    assert hover.endswith("<extra></extra>") and "<br>" in hover  # the template's own markup survives


def test_the_timeline_caption_names_its_answer_length(measurements, strings: Strings):
    block = parse_blocks("```demo\nkind: timeline\nprojections: [llama-3.1-8b/h100-sxm/fp16]\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    demo = BUILDERS["timeline"](block, measurements, strings)
    assert "{" not in demo.context["title"] and str(timeline.ANSWER_TOKENS) in demo.context["title"]


def test_the_browser_gets_the_recording_without_what_it_never_reads(measurements, strings: Strings):
    block = parse_blocks("```demo\nkind: conversation\nprompt: Hi\nmax_new_tokens: 3\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    data = BUILDERS["conversation"](block, measurements, strings).data
    assert "trace" not in data and "kv_slice" not in json.dumps(data) and data["prompt"]["tokens"]
    assert all(set(step) == {"end_ms", "kv_tokens", "kv_bytes", "piece", "tps"} for step in data["steps"])
    ends = [step["end_ms"] for step in data["steps"]]
    assert ends == sorted(ends)
    # TPS as the build reports it at each step: none at prefill, then 1000 / the mean decode step so far.
    assert data["steps"][0]["tps"] is None and all(step["tps"] > 0 for step in data["steps"][1:])


def test_figure_floats_keep_four_significant_digits(trace, strings: Strings):
    figure = prefill.kv_heatmap(trace, strings, SOURCE)
    values = [v for row in figure["data"][0]["z"] for v in row]
    assert all(len(f"{abs(v):.10g}".replace(".", "").lstrip("0")) <= 4 for v in values if v)


def test_a_projection_sits_on_its_devices_roofline_like_a_measured_phase(measurements, strings: Strings):
    block = parse_blocks("```demo\nkind: roofline\nprojections: [llama-3.1-8b/h100-sxm/fp16]\n```\n", "docs/zh/x.md")[0]
    validate(block, Limits("tiny", 8192, len, measurements.projection_ids()))
    sources = BUILDERS["roofline"](block, measurements, strings).data["sources"]
    assert [source["id"] for source in sources] == ["measured", "llama-3.1-8b/h100-sxm/fp16"]
    assert sources[0]["prefill"] == {key: measurements.roofline()["prefill"][key]
                                     for key in ("compute_utilization", "bandwidth_utilization")}
    projected = sources[1]
    # The limiting ceiling is the whole of the roofline's time; decode of an 8B model is memory-bound.
    for phase in ("prefill", "decode"):
        shares = projected[phase]
        assert max(shares.values()) == pytest.approx(1.0) and min(shares.values()) < 1.0
    assert projected["decode"]["bandwidth_utilization"] == pytest.approx(1.0)
    assert projected["frame"] == 1  # the utilisation chart draws the second choice in its second frame


def figure(measurements, name: str, lang: str = "en"):
    from hooks.demos.figure_resolver import FigureResolver

    return FigureResolver(lang, measurements, None).figure(name)


def test_a_figure_is_held_to_its_ledger_entry_one_quantity_one_value(measurements, simulator):
    """Every figure that is a ledger entry must print the entry's value: a view that quoted another
    measurement of the same quantity (654 ms where the ledger says 1,125) stops the build, naming both."""
    sweep_ttft_512 = 0.5 * 512 + 512 * 512 / 4000  # the fake sweep's TTFT at 512 tokens
    simulator.ledger = lambda **_: {"entries": {"ttft/f32/512": {"value": sweep_ttft_512},
                                                "decode/f32/512": {"value": 20.512}}}
    assert figure(measurements, "sweep.ttft_ms@512").entry == "ttft/f32/512"
    assert figure(measurements, "sweep.decode_ms@512").text == figure(measurements, "sweep.decode_ms@512", "zh").text
    with pytest.raises(LookupError, match=r"cache.cached_ms@512 prints 20 ms, but the ledger's decode/f32/512 is 20.512"):
        figure(measurements, "cache.cached_ms@512")


def test_a_recordings_timings_are_ledger_entries_and_its_figures_cite_them(measurements, simulator):
    """The conversation's TTFT and the decode chapter's pace are timings too: published in the ledger a reader
    opens, each a series with its spread, and held to one value like every other entry."""
    from hooks.claims.sources import PageReadouts
    from hooks.demos.blocks import parse_blocks
    from hooks.demos.figure_resolver import FigureResolver
    from hooks.demos.measurements import recording_key

    simulator.ledger = lambda **_: {"entries": {}}
    source = "```demo\nkind: conversation\nprompt: Explain quantum computing in three sentences.\nmax_new_tokens: 6\n```\n"
    resolver = FigureResolver("en", measurements, PageReadouts(parse_blocks(source, "docs/en/x.md"), measurements))
    ttft, pace = resolver.figure("conversation.ttft_ms"), resolver.figure("conversation.decode_ms")
    key = recording_key("Explain quantum computing in three sentences.", 6, True)
    assert (ttft.entry, pace.entry) == (f"{key}/ttft", f"{key}/decode_step")
    entries = measurements.published_ledger()["entries"]
    assert entries[ttft.entry]["value"] == ttft.value and entries[ttft.entry]["repeats"] >= 2
    assert entries[pace.entry]["prompt"] == "Explain quantum computing in three sentences."
    measurements.check_printed("en", "conversation.ttft_ms", ttft)  # holds
