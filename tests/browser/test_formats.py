"""The weight-formats demo in a real browser, both languages: the player steps through F32, F16, Q8_0 and 4 bits
from the keyboard, marking each format's points on the roofline and showing its speed beside its accuracy;
the published GPU runs are labelled projected; without JavaScript the static tables say the same; light and
dark; nothing scrolls sideways at 320 px."""

from __future__ import annotations

import math

import pytest

from tests.browser.test_chart_driver import draw_every_chart, eventually
from tests.browser.test_demos import FAST, LANGS, TIMEOUT_MS, demo_data, open_demo, wait_for_state

pytestmark = pytest.mark.browser


def readouts(demo) -> list[list[str]]:
    return demo.locator(".pd-formats__readouts .pd-readout").evaluate_all(
        "nodes => nodes.map(n => [n.querySelector('dt').textContent, n.querySelector('dd').textContent])")


def decode_point_drawn(chart) -> float:
    """Where the marked decode point is drawn across the plot (0 = left edge, 1 = right edge)."""
    point = chart.locator(".scatterlayer .trace").nth(3).locator(".point").first.bounding_box()
    box = chart.locator(".nsewdrag").first.bounding_box()
    return (point["x"] + point["width"] / 2 - box["x"]) / box["width"]


@pytest.mark.parametrize("lang", LANGS)
def test_the_keyboard_steps_through_the_formats_and_the_readouts_and_points_follow(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "formats", query=FAST)
    data = demo_data(page, demo)
    rows, figure = data["formats"]["rows"], data["figures"]["roofline"]
    chart = demo.locator(".pd-chart").first
    draw_every_chart(page, demo)
    low, high = figure["layout"]["xaxis"]["range"]

    def expected(row: dict) -> float:
        return (math.log10(row["decode"]["intensity"]) - low) / (high - low)

    assert demo.get_attribute("data-pd-format") == "f32"  # F32 first: the reference every other is read against
    demo.locator("[data-pd-stage]").focus()
    for index, row in enumerate(rows):
        if index:
            page.keyboard.press("ArrowRight")
        assert demo.get_attribute("data-pd-format") == row["id"]
        assert readouts(demo) == row["readouts"]  # speed and accuracy of the same format, side by side
        assert row["name"] in demo.locator(".pd-formats__name").inner_text()
        assert eventually(page, lambda: decode_point_drawn(chart), expected(row), 0.01) == \
            pytest.approx(expected(row), abs=0.01)
    page.keyboard.press("Home")
    assert demo.get_attribute("data-pd-format") == rows[0]["id"]
    page.keyboard.press("End")
    assert demo.get_attribute("data-pd-format") == rows[-1]["id"]
    page.keyboard.press("Home")
    demo.get_by_role("button", name=data["strings"]["common.play"], exact=True).click()
    wait_for_state(page, demo, "ended")
    assert demo.get_attribute("data-pd-format") == rows[-1]["id"]
    assert not demo.get_attribute("data-pd-missing-strings")
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_the_published_gpu_runs_are_shown_and_labelled_projected(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "formats", query=FAST)
    data = demo_data(page, demo)
    table = demo.locator("[data-pd-stage] table.pd-formats__published")
    assert table.locator("caption").inner_text() == data["formats"]["published"]["caption"]
    assert ("推算" if lang == "" else "Projected") in table.locator("caption").inner_text()
    assert table.locator("tbody tr").count() == len(data["formats"]["published"]["rows"]) > 0
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_without_javascript_the_fallback_tables_give_every_format_and_the_published_runs(open_page, lang):
    page, log = open_page(f"{lang}weight-formats/", javascript=False)
    fallback = page.locator(".pd-demo[data-pd-demo=formats] [data-pd-fallback]")
    assert fallback.is_visible()
    tables = fallback.locator("table")
    assert tables.count() == 2
    measured = tables.nth(0)
    assert measured.locator("tbody tr th").all_inner_texts() == ["F32", "F16", "Q8_0", "Q4_1"]
    headers = " ".join(measured.locator("thead th").all_inner_texts())
    assert ("KL" in headers) and ("TPS" in headers or "TTFT" in headers)  # accuracy beside speed
    assert tables.nth(1).locator("tbody tr").count() > 0


def test_the_demo_follows_the_colour_scheme(open_page):
    colours = {}
    for scheme in ("light", "dark"):
        page, log, demo = open_demo(open_page, "en/", "formats", query="", color_scheme=scheme)
        draw_every_chart(page, demo)
        colours[scheme] = (demo.locator(".pd-chart .main-svg .xtick text").first.evaluate("el => getComputedStyle(el).fill"),
                           demo.locator(".pd-formats__name").evaluate("el => getComputedStyle(el).color"))
        log.assert_clean()
    assert colours["light"][0] != colours["dark"][0] and colours["light"][1] != colours["dark"][1]


@pytest.mark.parametrize("lang", LANGS)
def test_at_320_px_nothing_scrolls_sideways(open_page, screenshot_dir, lang):
    page, log, demo = open_demo(open_page, lang, "formats", query="", viewport={"width": 320, "height": 640})
    draw_every_chart(page, demo)
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 320
    inside = demo.locator(".pd-controls").evaluate(
        "el => [...el.querySelectorAll('button, input, output, label')].every(part => {"
        " const box = part.getBoundingClientRect(); return box.right <= innerWidth + 0.5 && box.left >= -0.5; })")
    assert inside
    demo.screenshot(path=str(screenshot_dir / f"formats-320-{lang.strip('/') or 'zh'}.png"))
    log.assert_clean()


def test_labels_from_the_json_reach_the_page_as_text_whatever_they_hold(open_page):
    hostile_text = "</script><img src=x onerror=\"window.__pd_pwned=1\">"
    page, log = open_page("en/weight-formats/")

    def hostile(route):
        data = route.fetch().json()
        data["strings"] = {key: hostile_text for key in data["strings"]}
        for row in data["formats"]["rows"]:
            row["name"] = hostile_text
            row["readouts"] = [[hostile_text, hostile_text] for _ in row["readouts"]]
        published = data["formats"]["published"]
        published["caption"] = hostile_text
        published["rows"] = [[hostile_text for _ in row] for row in published["rows"]]
        route.fulfill(json=data)

    page.route("**/assets/traces/*formats*.json", hostile)
    page.reload()
    demo = page.locator(".pd-demo[data-pd-demo=formats]").first
    demo.scroll_into_view_if_needed()
    page.mouse.move(10, 300)
    page.mouse.move(20, 310)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    assert hostile_text in demo.locator("[data-pd-stage]").inner_text()
    assert demo.locator("[data-pd-stage] img").count() == 0
    assert page.evaluate("() => window.__pd_pwned") is None
    log.assert_clean()
