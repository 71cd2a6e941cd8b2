"""Every page in both languages, in a real browser: no errors, nothing off 127.0.0.1, the palette toggle."""

from __future__ import annotations

import pytest

from tests.browser.quality_pages import PAGES, page_idle

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly_and_is_screenshotted(tour, path):
    """Its every demo drawn and played, in the light palette: one title, no errors, nothing blocked or
    missing, nothing from another host (the dark palette and a host without headers: test_headers)."""
    record = tour(path, "desktop-light")
    assert record.h1_count == 1
    assert record.problems() == {}
    assert record.screenshot is not None and record.screenshot.stat().st_size > 0


PALETTE_BUTTON = "form[data-pd-palette] label:visible"


def _scheme(page) -> str:
    return page.evaluate("document.body.getAttribute('data-md-color-scheme')")


@pytest.mark.parametrize("path", ["", "en/prefill/"])
def test_palette_toggle_switches_between_light_and_dark(open_page, path):
    page, log = open_page(path, color_scheme="light")
    seen = [_scheme(page)]
    for _ in range(3):  # follow system → light → dark → follow system
        page.locator(PALETTE_BUTTON).click()
        seen.append(_scheme(page))
    assert seen == ["default", "default", "slate", "default"]
    assert page.locator(PALETTE_BUTTON).count() == 1
    log.assert_clean()


def test_palette_choice_is_kept_on_the_next_page(open_page, site_url):
    page, log = open_page("en/", color_scheme="light")
    page.locator(PALETTE_BUTTON).click()  # light
    page.locator(PALETTE_BUTTON).click()  # dark
    page.goto(site_url + "en/decode/")
    assert _scheme(page) == "slate"
    # The button shown is the one that leads on from dark (back to following the system).
    assert page.locator(PALETTE_BUTTON).get_attribute("for") == "__palette_0"
    assert page.evaluate("document.querySelector('meta[name=color-scheme]').content") == "dark"
    log.assert_clean()


def test_each_test_visit_meets_the_site_as_a_first_time_reader(open_page):
    """The pages the browser tests open share a warm context (tests/browser/warm_pages.py); a visit still starts
    with nothing an earlier one left: no palette picked, every file from the server and none from a cache."""
    page, _ = open_page("en/", color_scheme="light")
    page.locator(PALETTE_BUTTON).click()  # light
    page.locator(PALETTE_BUTTON).click()  # dark: Material keeps it in localStorage
    assert _scheme(page) == "slate"
    later, log = open_page("en/decode/", color_scheme="light")
    assert _scheme(later) == "default"
    first_loads = later.evaluate("""() => {
        const first = new Map();
        for (const entry of performance.getEntriesByType('resource'))
            if (!first.has(entry.name)) first.set(entry.name, entry.transferSize);
        return [...first.entries()];
    }""")
    assert any("/assets/javascripts/bundle." in url for url, _ in first_loads)
    assert [url for url, size in first_loads if size == 0] == []
    log.assert_clean()


def test_palette_is_operable_from_the_keyboard(open_page):
    page, log = open_page("en/", color_scheme="light")
    page.locator("#__palette_0").focus()
    page.keyboard.press("Enter")  # → light
    page.keyboard.press("Enter")  # → dark
    assert _scheme(page) == "slate"
    assert page.evaluate("document.activeElement.id") == "__palette_2"
    page.keyboard.press("ArrowRight")  # a radio group's own keys work too: → follow the system
    assert _scheme(page) == "default"
    log.assert_clean()


def test_dark_system_preference_is_followed(open_page):
    page, log = open_page("en/decode/", color_scheme="dark")
    assert _scheme(page) == "slate"
    log.assert_clean()


def test_palette_is_applied_before_any_script_file_runs(browser, site_url):
    """A dark system gets the dark page at its first paint: no script file is needed (none loads here)."""
    context = browser.new_context(color_scheme="dark")
    try:
        page = context.new_page()
        page.route("**/*.js", lambda route: route.abort())
        page.goto(site_url + "prefill/")
        assert _scheme(page) == "slate"
        assert page.locator(PALETTE_BUTTON).count() == 1
    finally:
        context.close()


def test_following_the_system_follows_it_live(open_page):
    page, log = open_page("en/", color_scheme="light")
    page.wait_for_load_state("networkidle")  # palette.js is bound
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    assert page.evaluate("document.querySelector('meta[name=theme-color]').content") != ""
    log.assert_clean()


# Material exposes its observables on window once its script has started.
# Functions, not bare expressions: Playwright evaluates those with eval(), which the page's CSP forbids.
MATERIAL_STARTED = "() => typeof window.component$ === 'object'"
SEARCH_OPEN = "() => document.getElementById('__search').checked"
SEARCH_RESULTS = ".md-search-result__item"


def test_materials_script_waits_for_the_readers_first_gesture(open_page):
    page, log = open_page("prefill/", wait_until="networkidle")
    page_idle(page)  # whatever would start it without the reader (a timer, an idle callback) has run by now
    assert not page.evaluate(MATERIAL_STARTED)
    # The page is marked as scripted from the start, so Material's search field is there at first paint.
    assert page.evaluate("document.documentElement.className") == "js"
    assert page.locator(".md-search__input").is_visible()
    page.mouse.move(300, 400)
    page.wait_for_function(MATERIAL_STARTED)
    # It was prefetched at load and comes from the cache (the _headers file lets browsers keep it).
    sizes = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter((entry) => entry.name.includes('/assets/javascripts/bundle.'))
        .map((entry) => [entry.initiatorType, entry.transferSize])""")
    assert sizes[0][0] == "link" and sizes[0][1] > 0
    assert sizes[1:] == [["script", 0]]
    log.assert_clean()


@pytest.mark.parametrize("path", ["prefill/", "en/decode/"])
def test_a_first_key_press_of_slash_opens_search(open_page, path):
    page, log = open_page(path, wait_until="networkidle")
    page.keyboard.press("/")  # the gesture that starts Material, replayed to it once it runs
    page.wait_for_function(SEARCH_OPEN)
    page.wait_for_function("() => document.activeElement.classList.contains('md-search__input')")
    page.keyboard.type("decode")  # an English word whose stem differs ("decod"): found as typed
    page.locator(SEARCH_RESULTS).first.wait_for()
    log.assert_clean()


def test_tapping_the_search_button_first_on_a_phone_opens_a_working_search(open_page):
    page, log = open_page("en/ttft-tps/", viewport={"width": 390, "height": 800}, wait_until="networkidle")
    page.locator("label.md-header__button[for=__search]").click()
    page.locator(".md-search__input").click()
    page.keyboard.type("memory")
    page.locator(SEARCH_RESULTS).first.wait_for()
    log.assert_clean()


@pytest.mark.parametrize("path", PAGES)
def test_loading_a_page_on_a_phone_moves_nothing_the_reader_sees(tour, path):
    shifts = tour(path, "phone").layout_shifts
    # Good is under 0.1. Nothing below the header moves. The header's buttons may settle once if the
    # browser paints before the whole header is parsed: ~0.001, rare since the palette script runs
    # after the header (it ran inside it and caused 0.002 at every load).
    assert [shift for shift in shifts if not shift["inHeader"]] == []
    assert sum(shift["value"] for shift in shifts) < 0.005, shifts
