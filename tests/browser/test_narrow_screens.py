"""Every built page on the narrowest phones, 320 and 360 px wide, in both languages: the page never scrolls
sideways, with its demos and charts drawn (JavaScript on) and as their static fallback (JavaScript off);
no chart's words run into each other or off the chart, and every slider stays wide enough to set. What
is wider than a phone (a table of sources, a long hardware name) fits, wraps or scrolls in its own box."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.quality_pages import page_paths, scroll_through
from tests.browser.test_demos import TIMEOUT_MS

pytestmark = pytest.mark.browser

WIDTHS = [320, 360]
# What sticks out past the right edge of the screen, for the failure message (inside a box that scrolls
# or clips it, it does not count: that box is what the page holds).
STICKING_OUT = """() => [...document.body.querySelectorAll('*')].filter((el) => {
    if (el.getBoundingClientRect().right <= innerWidth + 0.5) return false;
    for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') return box.getBoundingClientRect().right > innerWidth + 0.5;
    }
    return true;
  }).slice(0, 8).map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') || ''}`
    + ` (right edge at ${Math.round(el.getBoundingClientRect().right)} px)`)"""

# The words of every drawn chart (title, axis titles and ticks, legend, annotations such as the source
# note) that overlap one another or stick out of the chart, as "chart: ..." lines for the failure message.
CHART_TEXT_CLASHES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
    const name = plot.closest('[data-pd-demo]')?.dataset.pdDemo || 'chart';
    const chart = plot.getBoundingClientRect();
    const words = [...plot.querySelectorAll('.gtitle, .xtick text, .ytick text, .g-xtitle text, .g-ytitle text,'
        + ' .annotation-text, .legendtext')].filter((el) => el.textContent.trim() && el.getBoundingClientRect().width)
      .map((el) => [el.textContent.slice(0, 40), el.getBoundingClientRect()]);
    const clashes = words.filter(([, box]) => box.left < chart.left - 1 || box.right > chart.right + 1)
      .map(([text, box]) => `${name}: "${text}" runs off the chart (${Math.round(box.left - chart.left)}`
        + `..${Math.round(box.right - chart.left)} px of ${Math.round(chart.width)})`);
    words.forEach(([a, boxA], i) => words.slice(i + 1).forEach(([b, boxB]) => {
      const across = Math.min(boxA.right, boxB.right) - Math.max(boxA.left, boxB.left);
      const down = Math.min(boxA.bottom, boxB.bottom) - Math.max(boxA.top, boxB.top);
      if (across > 1 && down > 1) clashes.push(`${name}: "${a}" overlaps "${b}"`);
    }));
    return clashes;
  })"""

# Sliders narrower than a finger can set (the prompt-length scrubber was 25 px wide at 320 px).
NARROW_SLIDERS = """() => [...document.querySelectorAll('.pd-demo input[type=range]')]
    .filter((el) => el.getClientRects().length && el.getBoundingClientRect().width < 100)
    .map((el) => `${el.id || el.className}: ${Math.round(el.getBoundingClientRect().width)} px`)"""


def every_page() -> list[str]:
    """URL paths of every page the build writes (chapters, appendix and home, both languages)."""
    from tests.conftest import REPO

    docs = REPO / "docs"
    paths = []
    for lang_dir in sorted(d for d in docs.iterdir() if d.is_dir() and any(d.glob("*.md"))):
        prefix = "" if lang_dir.name == "zh" else f"{lang_dir.name}/"
        for page in sorted(lang_dir.glob("*.md")):
            paths.append(prefix + ("" if page.stem == "index" else f"{page.stem}/"))
    return paths


def test_every_built_page_is_covered(built_site: Path):
    assert sorted(every_page()) == sorted(page_paths(built_site))


def draw_every_demo(page) -> None:
    """Scroll through the page as a reader would, then bring each demo and chart not drawn yet into view (one
    that was built after the scroll went past it draws when it is seen again) and wait until it is drawn."""
    page.mouse.move(10, 300)  # the reader's first gesture: demos and charts load as they come into view
    page.mouse.move(20, 310)
    scroll_through(page, settle_ms=300)
    for selector, drawn in ((".pd-demo", "el => el.dataset.pdStatus === 'ready'"),
                            (".pd-chart", "el => el.dataset.pdChart === 'ready'")):
        for element in page.locator(selector).all():
            element.scroll_into_view_if_needed()
            page.wait_for_function(drawn, arg=element.element_handle(), timeout=TIMEOUT_MS)


def open_narrow(browser, url: str, width: int, *, javascript: bool):
    context = browser.new_context(viewport={"width": width, "height": 720}, java_script_enabled=javascript)
    page = context.new_page()
    page.goto(url, wait_until="load")
    return context, page


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", every_page())
def test_with_its_demos_drawn_the_page_fits_the_phone_its_chart_text_does_not_clash_its_sliders_can_be_set(
        browser, site_url, path, width):
    context, page = open_narrow(browser, site_url + path, width, javascript=True)
    try:
        draw_every_demo(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth"), \
            page.evaluate(STICKING_OUT)
        clashes = page.evaluate(CHART_TEXT_CLASHES)
        assert not clashes, "\n".join(clashes)
        assert page.evaluate(NARROW_SLIDERS) == []
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", every_page())
def test_without_javascript_the_page_is_no_wider_than_the_phone(browser, site_url, path, width):
    context, page = open_narrow(browser, site_url + path, width, javascript=False)
    try:
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("innerWidth"), \
            page.evaluate(STICKING_OUT)
    finally:
        context.close()


@pytest.mark.parametrize("path", ["bottleneck/", "en/bottleneck/", "ttft-tps/", "en/ttft-tps/"])
def test_a_long_hardware_name_fits_its_select_and_a_wide_fallback_table_scrolls_in_its_own_box(browser, site_url, path):
    """The projection <select> cannot wrap: it shrinks to the demo and the open list shows each name whole.
    The fallback table (a source per row) scrolls inside itself, reachable from the keyboard."""
    context, page = open_narrow(browser, site_url + path, 320, javascript=True)
    try:
        draw_every_demo(page)
        select = page.locator(".pd-demo select[id$='-source']").first
        widest = select.evaluate("el => Math.max(...[...el.options].map((o) => o.text.length))")
        assert widest > 40  # a name longer than a 320 px screen is wide
        select.select_option(index=select.locator("option").count() - 1)
        box = select.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 320
    finally:
        context.close()
    context, page = open_narrow(browser, site_url + path, 320, javascript=False)
    try:
        table = page.locator(".pd-demo__table").first
        assert table.evaluate("el => el.scrollWidth > el.clientWidth")  # wider than the phone: it scrolls…
        assert table.get_attribute("tabindex") == "0"  # …and the keyboard can scroll it
        assert page.evaluate("document.documentElement.scrollWidth") <= 320  # …inside itself, not the page
    finally:
        context.close()


@pytest.mark.parametrize("lang, start", [("", "实测本设备"), ("en/", "Measure this device")])
def test_the_measured_device_result_is_no_wider_than_the_phone(browser, site_url, lang, start):
    """The result of *measure this device* (figures, chart, a table beside the build machine) at 320 px."""
    context, page = open_narrow(browser, site_url + lang + "bottleneck/?pd-device-backend=js", 320, javascript=True)
    try:
        demo = page.locator(".pd-demo[data-pd-demo=device]").first
        demo.scroll_into_view_if_needed()
        page.mouse.move(10, 300)
        demo.get_by_role("button", name=start).click(timeout=TIMEOUT_MS)
        page.wait_for_function("el => !['idle', 'running'].includes(el.dataset.pdDeviceState)",
                               arg=demo.element_handle(), timeout=300_000)
        assert demo.get_attribute("data-pd-device-state") == "done"
        assert page.evaluate("document.documentElement.scrollWidth") <= 320, page.evaluate(STICKING_OUT)
        assert demo.locator(".pd-device__table").get_attribute("tabindex") == "0"  # it may scroll: keyboard too
    finally:
        context.close()
