"""How the demos load: nothing heavy until the reader engages, charts drawn in the frame the player is
on (see also test_chart_driver.py), bars of one width, captions with their placeholders filled. Every chart's
words (titles and subplot titles, legends, the ticks of every subplot) inside it, clear of one another and of
the legend's box, on every page at 320 and 360 px and on the desktop: the tours (tests/browser/tour.py's
CHART_TEXT_CLASHES, asserted in test_narrow_screens.py and test_chart_driver.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.quality_pages import next_frames, page_idle
from tests.browser.test_demos import PAGE_OF_KIND, TIMEOUT_MS, engage, open_demo

pytestmark = pytest.mark.browser

PLOTLY = "assets/vendor/plotly.min.js"


def test_a_page_that_is_only_loaded_fetches_no_chart_library_and_draws_nothing(open_page):
    page, log = open_page("decode/")
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.wait_for_load_state("networkidle")
    page_idle(page)  # whatever the page would start by itself has started
    assert not any(url.endswith(PLOTLY) for url in requested)
    assert page.evaluate("typeof window.Plotly") == "undefined"
    assert page.locator(".main-svg").count() == 0
    demo = page.locator(".pd-demo[data-pd-demo=decode]").first
    engage(page, demo)
    chart = demo.locator(".pd-chart").first
    chart.scroll_into_view_if_needed()
    page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    log.assert_clean()


def drawn_attention_chart(open_page):
    """The decode chapter with its demo live and the attention heatmap drawn: (page, log, demo, chart)."""
    page, log, demo = open_demo(open_page, "", "decode", query="")
    chart = demo.locator(".pd-chart").first
    chart.scroll_into_view_if_needed()
    page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    return page, log, demo, chart


def test_the_attention_heatmap_starts_blank_and_fills_as_tokens_are_decoded(open_page):
    page, log, demo, chart = drawn_attention_chart(open_page)
    # The player reveals rows by a mask over the rows not decoded yet (no heatmap redraw per token).
    # Where the visible mask starts (null: none; "several" would be masks of earlier steps left behind).
    mask = "el => { const shown = (el.querySelector('.js-plotly-plot').layout.shapes || [])" \
           ".filter(s => s.visible !== false); return shown.length > 1 ? 'several' : shown[0]?.y0 ?? null; }"
    assert page.evaluate(mask, chart.element_handle()) == -0.5  # nothing decoded: every row hidden
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"el => ({mask})(el) === 0.5", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    page.keyboard.press("End")
    page.wait_for_function(f"el => ({mask})(el) === null", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    next_frames(page, 6)
    assert page.evaluate(mask, chart.element_handle()) is None  # every row shows: no stale mask left
    log.assert_clean()


def test_hovering_rows_not_decoded_yet_shows_no_attention_weights(open_page):
    """The mask hides the rows ahead of the player; their hover labels would give them away."""
    page, log, demo, chart = drawn_attention_chart(open_page)
    hover_label = chart.locator(".hoverlayer .hovertext")

    def hover_first_row() -> int:
        """Point at position 0 of step 1 (the y axis runs top-down); how many hover labels show."""
        chart.scroll_into_view_if_needed()
        area = chart.locator(".nsewdrag").first.bounding_box()
        x, y = area["x"] + 6, area["y"] + 4
        page.mouse.move(x - 8, y)
        page.mouse.move(x, y)
        next_frames(page, 4)  # plotly draws the hover label in a frame after the move
        return hover_label.count()

    assert hover_first_row() == 0  # nothing decoded: the whole matrix is masked
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    page.wait_for_function("el => (el.querySelector('.js-plotly-plot').layout.shapes || [])"
                           ".every(s => s.visible === false)", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    assert hover_first_row() == 1  # every row decoded: the weights are the reader's to inspect
    log.assert_clean()


def drawn_charts(open_page, lang: str, kind: str, width: int):
    """The first demo of `kind` live at `width` px, every chart of it drawn: (page, log, charts)."""
    page, log, demo = open_demo(open_page, lang, kind, query="", viewport={"width": width, "height": 900})
    charts = demo.locator(".pd-chart").all()
    for chart in charts:
        chart.scroll_into_view_if_needed()
        engage(page, chart)
        page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(), timeout=TIMEOUT_MS)
    return page, log, charts


@pytest.mark.parametrize("width", [1280, 360])
def test_prefill_time_bars_are_all_drawn_the_same_width(open_page, width):
    """One bar per measured prompt length; on a log axis the first was wider than the chart."""
    page, log, charts = drawn_charts(open_page, "", "prefill", width)
    bars = charts[1].locator(".trace.bars .point path").all()
    widths = [bar.bounding_box()["width"] for bar in bars]
    assert len(widths) >= 4 and widths[0] > 4, widths
    assert max(widths) - min(widths) <= 1, widths
    log.assert_clean()


@pytest.mark.parametrize("lang", ["", "en/"])
def test_demo_captions_have_their_placeholders_filled(built_site: Path, lang):
    """The captions as built (a demo leaves its caption as the page brought it)."""
    for kind, path in PAGE_OF_KIND.items():
        html = (built_site / lang / path / "index.html").read_text(encoding="utf-8")
        figure = re.search(rf'<figure class="pd-demo[^"]*" data-pd-demo="{kind}".*?</figure>', html, re.S)
        assert figure, (kind, path)
        caption = re.search(r"<figcaption[^>]*>(.*?)</figcaption>", figure.group(0), re.S)
        assert caption, (kind, path)
        text = re.sub(r"<[^>]+>", "", caption.group(1))
        assert "{" not in text and "}" not in text, (kind, text)
