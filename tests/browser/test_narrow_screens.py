"""Every built page on the narrowest phones, 320 and 360 px wide, in both languages: the page never scrolls
sideways, with its demos and charts drawn (JavaScript on) and as their static fallback (JavaScript off);
no chart's words run into each other or off the chart, and every slider stays wide enough to set. What
is wider than a phone (a table of sources, a long hardware name) fits, wraps or scrolls in its own box. The
device demo's measured result on a 320 px phone: tests/browser/test_device.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.pages import page_paths
from tests.browser.quality_pages import PAGES

pytestmark = pytest.mark.browser

WIDTHS = ["320", "360"]  # tour views (tests/browser/tour.py): 360 is drawn in the dark palette


def test_every_built_page_is_covered(built_site: Path):
    assert sorted(PAGES) == sorted(page_paths(built_site))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PAGES)
def test_with_its_demos_drawn_the_page_fits_the_phone_its_chart_text_does_not_clash_its_sliders_can_be_set(
        tour, path, width):
    record = tour(path, width)
    assert record.fits(), record.sticking_out
    assert not record.chart_clashes, "\n".join(record.chart_clashes)
    assert record.narrow_sliders == []
    assert record.problems() == {}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PAGES)
def test_without_javascript_the_page_is_no_wider_than_the_phone(tour, path, width):
    record = tour(path, width + "-nojs")
    assert record.fits(), record.sticking_out


@pytest.mark.parametrize("path", ["bottleneck/", "en/bottleneck/", "ttft-tps/", "en/ttft-tps/"])
def test_a_long_hardware_name_fits_its_select_and_a_wide_fallback_table_scrolls_in_its_own_box(tour, path):
    """The projection <select> cannot wrap: it shrinks to the demo and the open list shows each name whole.
    The fallback table (a source per row) scrolls inside itself, reachable from the keyboard."""
    selects = tour(path, "320").source_selects
    assert selects, "no projection picker drawn"
    select = selects[0]
    assert select["widest"] > 40  # a name longer than a 320 px screen is wide
    assert select["left"] >= 0 and select["right"] <= 320
    static = tour(path, "320-nojs")
    table = next(table for table in static.tables if "pd-demo__table" in table["name"] and table["visible"])
    assert table["overflow"] > 0  # wider than the phone: it scrolls…
    assert table["tabindex"] == "0"  # …and the keyboard can scroll it
    assert static.fits()  # …inside itself, not the page


@pytest.mark.parametrize("path", ["projections/", "en/projections/"])
def test_at_320_px_the_appendix_does_not_scroll_sideways_and_its_tables_scroll_inside(tour, path):
    record = tour(path, "320")
    assert record.fits(), record.sticking_out
    tables = [table for table in record.tables if table["validation"]]
    assert len(tables) == 4
    # the published-measurements table is wider than a phone: it scrolls within itself (or within the box
    # Material wraps it in once its script runs)
    assert max(table["overflow"] for table in tables) > 0
    assert all(table["tabindex"] == "0" for table in tables)  # a scrolling region the keyboard can reach
