"""One driver per chart, in a real browser and both languages: the page's player is each demo's only
set of controls (one Play, one scrubber, none of Plotly's buttons or sliders, in either palette), and
scrubbing or playing moves what the chart draws to the frame the player is on."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hooks.demos.figures.timeline import ANSWER_TOKENS
from tests.browser.quality_pages import next_frames
from tests.browser.test_demos import (
    CHART_KINDS,
    FAST,
    LANGS,
    PAGE_OF_KIND,
    TIMEOUT_MS,
    demo_data,
    number_in,
    open_demo,
    wait_for_state,
)
from tests.browser.tour import VIEWS

pytestmark = pytest.mark.browser

PLAYED_KINDS = ["conversation", "prefill", "decode", "timeline", "roofline", "formats"]
STILL_KINDS = ["recap"]  # one chart and nothing to play
UA_FACE = "rgb(239, 239, 239)"  # the browser's own button face: a control nobody styled
# (Plotly's own controls, counted by the tour: .updatemenu-container, .updatemenu-button, .slider-container)


def draw_every_chart(page, demo) -> None:
    for chart in demo.locator(".pd-chart").all():
        chart.scroll_into_view_if_needed()
        page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(), timeout=TIMEOUT_MS)


def eventually(page, measure, expected: float, tolerance: float) -> float:
    """`measure()` once it is within `tolerance` of `expected` (a frame change is drawn asynchronously): checked
    after each frame the page draws, for up to 60 frames."""
    for _ in range(30):
        value = measure()
        if abs(value - expected) <= tolerance:
            return value
        next_frames(page)
    return value


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("view", ["desktop-light", "desktop-dark"])
@pytest.mark.parametrize("kind", PLAYED_KINDS + STILL_KINDS)
def test_each_demo_has_one_play_button_and_one_scrubber_and_no_plotly_controls_and_its_charts_follow_the_palette(
        tour, built_site: Path, lang, view, kind):
    """Read from the page's tour in each palette (tests/browser/tour.py): the demo drawn, then the palette switched."""
    path = lang + PAGE_OF_KIND[kind]
    record = tour(path, view)
    demo = next(demo for demo in record.controls if demo["kind"] == kind)
    strings = json.loads((built_site / path / demo["trace"]).resolve().read_text(encoding="utf-8"))["strings"]
    played = 1 if kind in PLAYED_KINDS else 0
    assert [c["name"] for c in demo["controls"] if c["tag"] == "button"].count(strings["common.play"]) == played
    assert demo["sliders"] == played
    assert demo["plotly_controls"] == 0
    if kind in CHART_KINDS:
        assert demo["charts"] >= 1
    assert demo["drawn_charts"] == demo["charts"]
    # Every control there is follows the page's palette (Plotly's buttons were unstyled in the dark one).
    for control in demo["controls"]:
        assert control["background"] != UA_FACE, control
        if VIEWS[view].palette == "dark":  # no white box and no black text on the dark page
            assert control["background"] != "rgb(255, 255, 255)" and control["colour"] != "rgb(0, 0, 0)", control
    # The reader switches the palette: the chart's words follow it.
    assert demo["id"] not in record.palette_unfollowed and kind not in record.palette_unfollowed
    # On the desktop as on a phone (test_narrow_screens.py), its charts' words stay inside and clear of each other.
    assert [clash for clash in record.chart_clashes if clash.startswith(f"{kind}:")] == []


def plot_box(chart) -> dict:
    return chart.locator(".nsewdrag").first.bounding_box()


def prefill_share_drawn(chart) -> float:
    """How much of the timeline's width the prefill block covers, as drawn."""
    bar = chart.locator(".barlayer .trace").first.locator("path").first.bounding_box()
    return bar["width"] / plot_box(chart)["width"]


@pytest.mark.parametrize("lang", LANGS)
def test_scrubbing_and_playing_the_timeline_show_and_draw_each_prompt_length_to_scale(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "timeline", query=FAST)
    data = demo_data(page, demo)
    chart = demo.locator(".pd-chart").first
    draw_every_chart(page, demo)
    points = {source["id"]: {p["prompt_tokens"]: p for p in source["points"]} for source in data["sources"]}
    lengths = sorted(points["measured"])
    strings = data["strings"]

    def expected_share(source: str, length: int) -> float:
        values = points[source][length]
        return values["ttft_ms"] / (1.02 * (values["ttft_ms"] + ANSWER_TOKENS * values["decode_ms_per_token"]))

    scrubber = demo.locator("input[type=range]")
    sources = [o.get_attribute("value") for o in demo.locator("select option").all()]
    assert "measured" in sources and len(sources) >= 2
    for source in sources:  # every source, every prompt length: the readouts and the chart show the recorded values
        demo.locator("select").select_option(source)
        scrubber.focus()
        page.keyboard.press("Home")
        for index, length in enumerate(lengths):
            if index:
                page.keyboard.press("ArrowRight")
            assert demo.get_attribute("data-pd-length") == str(length)
            assert demo.locator(".pd-controls__value").text_content().replace(",", "") == str(length)
            expected = points[source][length]
            values = [number_in(v) for v in demo.locator(".pd-readout__value").all_text_contents()[-3:]]
            for shown, key in zip(values, ("ttft_ms", "tps", "decode_ms_per_token"), strict=True):
                assert shown == pytest.approx(expected[key], rel=0.01, abs=0.01), (source, length, key)
            share = expected_share(source, length)
            assert eventually(page, lambda: prefill_share_drawn(chart), share, 0.01) == pytest.approx(share, abs=0.01)

    # Play runs through the lengths on the page's player and leaves the chart on the longest.
    demo.locator("select").select_option("measured")
    scrubber.focus()
    page.keyboard.press("Home")
    first = expected_share("measured", lengths[0])
    assert eventually(page, lambda: prefill_share_drawn(chart), first, 0.01) == pytest.approx(first, abs=0.01)
    demo.get_by_role("button", name=strings["common.play"], exact=True).click()
    wait_for_state(page, demo, "ended")
    assert demo.get_attribute("data-pd-length") == str(lengths[-1])
    last = expected_share("measured", lengths[-1])
    assert eventually(page, lambda: prefill_share_drawn(chart), last, 0.01) == pytest.approx(last, abs=0.01)
    log.assert_clean()


def prefill_point_drawn(chart) -> float:
    """Where the prefill point sits across the roofline's plot, 0 at the left edge and 1 at the right."""
    point = chart.locator(".scatterlayer .trace").nth(1).locator(".point").first.bounding_box()
    box = plot_box(chart)
    return (point["x"] + point["width"] / 2 - box["x"]) / box["width"]


@pytest.mark.parametrize("lang", LANGS)
def test_scrubbing_and_playing_the_roofline_move_the_prefill_point_to_each_prompt_length(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "roofline", query=FAST)
    data = demo_data(page, demo)
    figure = data["figures"]["roofline"]
    chart = demo.locator(".pd-chart").first
    draw_every_chart(page, demo)
    low, high = figure["layout"]["xaxis"]["range"]  # log10 of the axis ends

    lengths = [length["prompt_tokens"] for length in data["prompt_lengths"]]

    def expected(index: int) -> float:
        """Where the prefill point of prompt length `index` belongs: its intensity on the log axis."""
        frame = figure["frames"][data["prompt_lengths"][index]["frame"]]
        return (math.log10(frame["data"][0]["x"][0]) - low) / (high - low)

    assert len(lengths) >= 2 and len({expected(i) for i in range(len(lengths))}) > 1
    assert demo.get_attribute("data-pd-length") == str(lengths[-1])  # the longest prompt shows first
    last = expected(len(lengths) - 1)
    assert prefill_point_drawn(chart) == pytest.approx(last, abs=0.01)  # drawn straight in the player's frame
    scrubber = demo.locator("input[type=range]")
    scrubber.focus()
    page.keyboard.press("Home")
    for index, length in enumerate(lengths):
        if index:
            page.keyboard.press("ArrowRight")
        assert demo.get_attribute("data-pd-length") == str(length)
        assert eventually(page, lambda: prefill_point_drawn(chart), expected(index), 0.01) == \
            pytest.approx(expected(index), abs=0.01)
    page.keyboard.press("Home")
    demo.get_by_role("button", name=data["strings"]["common.play"], exact=True).click()
    wait_for_state(page, demo, "ended")
    assert eventually(page, lambda: prefill_point_drawn(chart), last, 0.01) == pytest.approx(last, abs=0.01)
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_the_kv_heatmaps_show_once_the_player_has_run_prefill(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "prefill", query=FAST)
    chart = demo.locator(".pd-chart").first
    draw_every_chart(page, demo)

    def drawn_opacity() -> float:
        return min(float(o) for o in chart.locator(".heatmaplayer .hm image").evaluate_all(
            "els => els.map(el => getComputedStyle(el).opacity)"))

    assert drawn_opacity() == 0  # nothing prefilled yet: no K or V to show
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("ArrowRight")
    assert eventually(page, drawn_opacity, 1, 0) == 1
    page.keyboard.press("Home")
    assert eventually(page, drawn_opacity, 0, 0) == 0
    demo.get_by_role("button", name=demo_data(page, demo)["strings"]["common.play"], exact=True).click()
    wait_for_state(page, demo, "ended")
    assert eventually(page, drawn_opacity, 1, 0) == 1
    log.assert_clean()


@pytest.mark.parametrize("kind", ["timeline", "roofline"])
def test_a_stepper_plays_to_its_end_when_frame_times_lag_behind_the_press(open_page, kind):
    """An animation frame's timestamp can precede the moment Play read the clock: the stepper never steps
    back before its first frame (it has nothing to show there) and still runs to its last."""
    page, log, demo = open_demo(open_page, "en/", kind, query=FAST)
    strings = demo_data(page, demo)["strings"]
    page.evaluate("() => { const now = performance.now.bind(performance); performance.now = () => now() + 40; }")
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("Home")
    demo.get_by_role("button", name=strings["common.play"], exact=True).click()
    wait_for_state(page, demo, "ended")
    assert int(demo.get_attribute("data-pd-count")) == int(demo.locator("input[type=range]").get_attribute("max"))
    log.assert_clean()


@pytest.mark.parametrize("path", [lang + PAGE_OF_KIND[kind] for lang in LANGS for kind in ("timeline", "roofline")])
def test_a_steppers_controls_fit_a_320_px_phone(tour, path):
    """The prompt-length players (the timeline; the roofline on the bottleneck page and the weight formats on their own) wrap
    their controls (Play, steps, the named scrubber and its value) on a phone, the value shown beside them."""
    record = tour(path, "320")
    players = [demo for demo in record.controls if demo["sliders"]]
    assert players, "no player drawn"
    assert record.controls_off_screen == []
