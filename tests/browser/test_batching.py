"""The batching demo in a real browser, both languages: the batch-size slider moves the measured point
along the roofline and changes the read-outs; the two users play on the recorded clock (play, scrubber,
keyboard); without JavaScript the static tables say the same; light and dark; nothing overflows at 320 px and the lanes' labels stay readable there."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest

from tests.browser.test_demos import TIMEOUT_MS, demo_data, engage

pytestmark = pytest.mark.browser

LANGS = ["", "en/"]
FAST = "?pd-speed=50"


def open_batching(open_page, lang: str, query: str = FAST, **options):
    page, log = open_page(f"{lang}batching/{query}", **options)
    demo = page.locator(".pd-demo[data-pd-demo=batching]").first
    engage(page, demo)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    return page, log, demo


def point_position(demo) -> tuple[str, str]:
    dot = demo.locator(".pd-batching__point")
    return dot.get_attribute("cx"), dot.get_attribute("cy")


def readout(demo, label: str) -> str:
    return demo.locator(".pd-batching__batch .pd-readout").filter(has_text=label).locator("dd").inner_text()


@pytest.mark.parametrize("lang", LANGS)
def test_the_slider_moves_the_measured_point_and_the_readouts_with_the_batch(open_page, lang):
    page, log, demo = open_batching(open_page, lang)
    data = demo_data(page, demo)
    points, strings = data["batching"]["points"], data["strings"]
    assert demo.get_attribute("data-pd-batch") == str(points[0]["batch"])
    first_place = point_position(demo)
    first_tps = readout(demo, strings["batching.throughput"])
    assert first_tps.endswith("tok/s") and readout(demo, strings["batching.per_user"]).endswith("ms")
    assert demo.locator(".pd-batching__token").count() == points[0]["batch"]  # one token out per user

    slider = demo.locator(".pd-batching__batch input[type=range]")
    slider.focus()
    page.keyboard.press("End")  # the slider is a native range: the keyboard works on it as is
    last = points[-1]
    assert demo.get_attribute("data-pd-batch") == str(last["batch"])
    assert point_position(demo) != first_place
    assert readout(demo, strings["batching.throughput"]) != first_tps
    assert demo.locator(".pd-batching__token").count() == last["batch"]
    assert slider.get_attribute("aria-valuetext") == strings["batching.batch_label"].replace("{batch}", str(last["batch"]))
    page.keyboard.press("ArrowLeft")
    assert demo.get_attribute("data-pd-batch") == str(points[-2]["batch"])
    assert not demo.get_attribute("data-pd-missing-strings")
    log.assert_clean()


def as_the_page_formats(value: float) -> str:
    """A number as assets/pd/dom.js's `format.number` shows it, without the thousands separators."""
    decimals = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


@pytest.mark.parametrize("lang", LANGS)
def test_play_runs_both_users_on_the_recorded_clock_to_the_measured_stall_and_ttft(open_page, lang):
    page, log, demo = open_batching(open_page, lang)
    data = demo_data(page, demo)
    users = demo.locator(".pd-batching__users")
    ticks = data["batching"]["two_users"]["ticks"]
    # the clock starts at the first recorded event (the streaming user's token before the arrival), and
    # says how long until the arrival, not a negative time since it
    assert users.get_attribute("data-pd-count") == "1"
    clock = users.locator(".pd-batching__clock").inner_text()
    assert "-" not in clock and clock.startswith("The new user arrives in" if lang == "en/" else "新用户 "), clock
    assert demo.locator(".pd-batching__event--off").count() > 0
    users.locator(".pd-button--play").click()
    page.wait_for_function("el => el.dataset.pdState === 'ended'", arg=users.element_handle(), timeout=TIMEOUT_MS)
    assert users.get_attribute("data-pd-count") == str(len(ticks))
    assert demo.locator(".pd-batching__event--off").count() == 0  # every recorded event is on screen
    for case in data["batching"]["two_users"]["cases"]:
        shown = demo.locator(f"[data-pd-case={case['id']}]").inner_text()
        assert case["label"] in shown
        # shown as the page formats durations (assets/pd/dom.js): 0, 1 or 2 decimals by size, rounded as
        # Intl.NumberFormat rounds the number's shortest decimal form, half away from zero (6.685 ms: 6.69 ms)
        stall = case["stall_ms"]
        assert f"{as_the_page_formats(stall)} ms" in shown.replace(",", ""), (stall, shown)
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_the_two_users_view_works_from_the_keyboard_and_the_scrubber(open_page, lang):
    page, log, demo = open_batching(open_page, lang)
    users = demo.locator(".pd-batching__users")
    total = int(users.locator("input.pd-scrubber").get_attribute("max"))
    users.focus()
    page.keyboard.press("End")
    assert users.get_attribute("data-pd-count") == str(total)
    page.keyboard.press("Home")
    assert users.get_attribute("data-pd-count") == "1"  # the start: the first recorded event, at t = 0
    page.keyboard.press("ArrowRight")
    assert users.get_attribute("data-pd-count") == "2"
    scrubber = users.locator("input.pd-scrubber")
    scrubber.fill(str(total // 2))
    assert users.get_attribute("data-pd-count") == str(total // 2)
    page.keyboard.press("Home")  # on the scrubber, Home is the range's own key: still the start
    assert users.get_attribute("data-pd-count") in ("0", "1")
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_without_javascript_the_fallback_tables_give_the_batch_sizes_and_the_two_users(open_page, lang):
    page, log = open_page(f"{lang}batching/", javascript=False)
    fallback = page.locator(".pd-demo[data-pd-demo=batching] [data-pd-fallback]")
    assert fallback.is_visible()
    tables = fallback.locator("table")
    assert tables.count() == 2
    assert tables.nth(0).locator("tbody tr").count() == 2  # unchunked, chunked
    assert tables.nth(1).locator("tbody tr").count() == 7  # B = 1 … 64
    assert tables.nth(1).locator("tbody tr").first.locator("th").inner_text() == "1"


def test_the_demo_follows_the_colour_scheme(open_page):
    colours = {}
    for scheme in ("light", "dark"):
        page, log, demo = open_batching(open_page, "en/", color_scheme=scheme)
        colours[scheme] = demo.locator(".pd-batching__roof").evaluate("el => getComputedStyle(el).stroke")
        log.assert_clean()
    assert colours["light"] != colours["dark"]


@pytest.mark.parametrize("lang", LANGS)
def test_at_320_px_nothing_scrolls_sideways(open_page, screenshot_dir, lang):
    page, log, demo = open_batching(open_page, lang, viewport={"width": 320, "height": 640})
    users = demo.locator(".pd-batching__users")
    users.focus()
    page.keyboard.press("End")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 320
    # the lanes' picture shrinks with the screen; its labels must stay readable (they drew 5 px tall before)
    label_heights = demo.locator(".pd-batching__lanes text").evaluate_all(
        "texts => texts.map(t => t.getBoundingClientRect().height)")
    assert label_heights and min(label_heights) >= 8, label_heights
    demo.screenshot(path=str(screenshot_dir / f"batching-320-{lang.strip('/') or 'zh'}.png"))
    log.assert_clean()


HOSTILE = "</script><img src=x onerror=\"window.__pd_pwned=1\">"


def test_labels_from_the_json_reach_the_page_as_text_whatever_they_hold(open_page):
    page, log = open_page("en/batching/")

    def hostile(route):
        data = route.fetch().json()
        data["strings"] = {key: HOSTILE for key in data["strings"]}
        users = data["batching"]["two_users"]
        users["users"] = {"streaming": HOSTILE, "arriving": HOSTILE}
        for case in users["cases"]:
            case["label"] = HOSTILE
        for knee in data["batching"]["projected_knees"]:
            knee["name"] = knee["label"] = HOSTILE
        data["batching"]["knee"]["label"] = HOSTILE
        route.fulfill(json=data)

    page.route("**/assets/traces/*batching*.json", hostile)
    page.reload()
    demo = page.locator(".pd-demo[data-pd-demo=batching]").first
    engage(page, demo)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    assert HOSTILE in demo.locator("[data-pd-stage]").inner_text()
    assert demo.locator("[data-pd-stage] img").count() == 0
    assert page.evaluate("() => window.__pd_pwned") is None
    log.assert_clean()
