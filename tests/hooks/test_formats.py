"""The bytes-per-weight section's build side: its figures in the prose, its demo's JSON and static fallback.

The formats measurement is the hand-made contract result of tests/hooks/conftest.py (`fake_formats`): F16 and
Q8_0 decode as much faster as their bytes shrink, Q4_1 only 1.25 times; prefill the same in every format.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from hooks.demos.blocks import Limits, parse_blocks, validate
from hooks.demos.builders import BUILDERS
from hooks.demos.contract import check
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.render import render_demo

REPO = Path(__file__).resolve().parents[2]


def figure(measurements, name: str, lang: str = "en"):
    return FigureResolver(lang, measurements, None).figure(name)


def formats_block(measurements, body: str = "kind: formats\n"):
    limits = Limits(model_name="tiny", max_context=8192, count_prompt_tokens=len,
                    projection_ids=measurements.projection_ids())
    return validate(parse_blocks(f"```demo\n{body}```\n", "docs/en/bottleneck.md")[0], limits)


def test_decode_speeds_up_with_the_bytes_and_the_figures_say_how_much(measurements):
    assert figure(measurements, "formats.byte_shrink@q8_0").value == pytest.approx(32 / 8.5)
    assert figure(measurements, "formats.decode_speedup@q8_0").text == "3.6×"
    assert figure(measurements, "formats.decode_speedup@q8_0", "zh").text == "3.6 倍"
    assert figure(measurements, "formats.decode_share@q4").value == pytest.approx(1.25 / 6.4)
    assert figure(measurements, "formats.tps@f16").text == "100 tok/s"
    assert figure(measurements, "formats.four_bit").text == "Q4_1"  # `q4` names the file's own 4-bit format
    assert figure(measurements, "formats.bits@q4").text == "5.0"


def test_the_kernels_arithmetic_with_its_bytes_in_the_caches_beside_their_reading(measurements):
    """The stated cause of a 4-bit decode that falls short of its bytes, as figures the prose can check."""
    assert figure(measurements, "formats.cached_us@q4").text == "60 µs"
    assert figure(measurements, "formats.cached_read_us@q4").text == "50 µs"
    assert figure(measurements, "formats.cached_mb@q4").text == "1.25 MB"
    assert figure(measurements, "formats.cached_vs_read@q4").value == pytest.approx(1.2)
    assert figure(measurements, "formats.cached_vs_read@f32", "zh").text == "0.19 倍"
    assert figure(measurements, "formats.dequantize_ms@q8_0").text == "40 ms"  # a prompt's extra step


def test_a_steps_products_alone_beside_the_rest_of_its_time(measurements):
    """The parts of a step that are not its matrix products, as figures the prose can check: the same 2.5 ms in
    every format of the hand-made result, so a larger share of a smaller format's step."""
    assert figure(measurements, "formats.products_ms@f32").text == "17.5 ms"
    assert figure(measurements, "formats.other_ms@q8_0").value == pytest.approx(2.5)
    assert figure(measurements, "formats.other_share@f32").value == pytest.approx(2.5 / 20)
    assert figure(measurements, "formats.other_share@q8_0", "zh").value == pytest.approx(2.5 / 5.5)


def test_the_rest_of_a_step_is_never_negative(measurements):
    """On a busy machine the products alone can time longer than the whole step's median: the rest is then 0."""
    row = next(r for r in measurements.formats()["formats"] if r["format"] == "q8_0")
    row["products_ms"] = row["decode_ms_per_token"] + 0.3
    assert figure(measurements, "formats.other_ms@q8_0").value == 0


def test_a_format_slower_than_f32_shows_two_decimals_not_a_rounded_one():
    from hooks.demos.format_figures import ratio_text

    assert ratio_text(0.94, "en") == "0.94×" and ratio_text(0.026, "zh") == "0.03 倍"
    assert ratio_text(3.76, "en") == "3.8×"


def test_prefill_and_accuracy_beside_speed(measurements):
    assert figure(measurements, "formats.prefill_ratio@q4").value == pytest.approx(1.0)
    assert figure(measurements, "formats.ttft_ms@f32").text == "1,024 ms"  # at the decode's context, 512 tokens
    assert figure(measurements, "formats.top1@q4").text == "91%"
    assert figure(measurements, "formats.kl@q8_0").text == "0.0021"
    assert figure(measurements, "formats.kl@f32").text == "0"


@pytest.mark.parametrize("name, message", [
    ("formats.tps@q2_k", "f32|f16|q8_0|q4"),
    ("formats.tps", "needs @FORMAT"),
    ("formats.four_bit@q4", "takes no @argument"),
])
def test_an_unmeasured_format_says_which_are_measured(measurements, name, message):
    with pytest.raises(LookupError, match=message):
        figure(measurements, name)


def test_the_demo_json_follows_the_contract_and_carries_every_format(measurements, strings):
    block = formats_block(measurements)
    demo = BUILDERS["formats"](block, measurements, strings)
    check(block, demo.data)
    schema = json.loads((REPO / "hooks/demos/demo.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(demo.data, schema)
    rows = demo.data["formats"]["rows"]
    assert [r["name"] for r in rows] == ["F32", "F16", "Q8_0", "Q4_1"]
    assert [r["frame"] for r in rows] == [0, 1, 2, 3]
    assert len(demo.data["figures"]["roofline"]["frames"]) == 4
    # speed and accuracy side by side in every format's read-outs
    labels = [label for label, _ in rows[3]["readouts"]]
    assert strings["formats.tps"] in labels and strings["formats.top1"] in labels and strings["formats.kl"] in labels
    published = demo.data["formats"]["published"]
    assert published["rows"] and all(row[1] in ("FP16", "Q8_0", "Q4_0") for row in published["rows"])
    assert strings["common.projected_label"] in published["caption"] or "projected" in published["caption"].lower() \
        or "推算" in published["caption"]


def test_without_javascript_the_fallback_has_both_tables(measurements, strings):
    demo = BUILDERS["formats"](formats_block(measurements), measurements, strings)
    html = render_demo(REPO / "overrides/pd", "formats",
                       {**demo.context, "strings": strings, "kind": "formats", "lang": strings.lang, "trace_url": "",
                        "demo_id": "pd-demo-0"})
    assert html.count("<table") == 2
    assert html.count('<th scope="row">') == 4 + len(demo.data["formats"]["published"]["rows"])
    assert strings["formats.top1"] in html


def test_the_formats_are_measured_once_and_then_read_from_the_cache(measurements, simulator):
    measurements.formats()
    measurements.formats()
    assert simulator.calls.count("ledger") == 1
