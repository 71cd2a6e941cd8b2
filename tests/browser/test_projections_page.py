"""The appendix in a real browser, at a phone's narrowest width: the page never scrolls sideways, its wide
tables scroll inside themselves and can be reached from the keyboard, and axe-core finds nothing serious."""

from __future__ import annotations

import pytest

from tests.browser.test_quality_a11y import BLOCKING_IMPACTS, axe_source, run_axe  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser

PATHS = ["projections/", "en/projections/"]
NARROW = {"width": 320, "height": 640}


@pytest.mark.parametrize("path", PATHS)
def test_at_320_px_the_page_does_not_scroll_sideways_and_the_tables_scroll_inside(open_page, path):
    page, log = open_page(path, viewport=NARROW, wait_until="networkidle")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"]
    tables = page.locator("article .pd-validation table")
    assert tables.count() == 4
    widest = page.evaluate("""() => Math.max(...[...document.querySelectorAll('article .pd-validation table')]
        .map(t => t.scrollWidth - t.clientWidth))""")
    assert widest > 0  # the published-measurements table is wider than a phone: it scrolls within itself
    for i in range(tables.count()):
        assert tables.nth(i).get_attribute("tabindex") == "0"  # a scrolling region the keyboard can reach
    log.assert_clean()


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_the_appendix_has_no_serious_axe_violation(open_page, axe_source, palette):  # noqa: F811
    for path in PATHS:
        page, _ = open_page(path, color_scheme=palette, viewport=NARROW)
        blocking = [v for v in run_axe(page, axe_source) if v["impact"] in BLOCKING_IMPACTS]
        assert blocking == [], f"{path}: {blocking}"
