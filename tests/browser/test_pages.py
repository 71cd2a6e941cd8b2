"""Every page in both languages, in a real browser: no errors, nothing off 127.0.0.1, the palette toggle."""

from __future__ import annotations

import pytest

from hooks.chapters import CHAPTER_SLUGS

pytestmark = pytest.mark.browser

PAGES = [prefix + (f"{slug}/" if slug else "") for prefix in ("", "en/") for slug in (None, *CHAPTER_SLUGS)]


def _screenshot_name(path: str, scheme: str) -> str:
    name = path.strip("/").replace("/", "-")
    if not path.startswith("en/"):
        name = f"zh-{name}" if name else "zh"
    return f"{name or 'en'}-{scheme}.png"


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly_and_is_screenshotted(open_page, screenshot_dir, path):
    page, log = open_page(path, wait_until="networkidle")
    assert page.locator("article h1").count() == 1
    page.screenshot(path=str(screenshot_dir / _screenshot_name(path, "light")), full_page=True)
    log.assert_clean()


@pytest.mark.parametrize("path", ["", "en/prefill/"])
def test_palette_toggle_switches_between_light_and_dark(open_page, path):
    page, log = open_page(path, color_scheme="light")

    def scheme() -> str:
        return page.evaluate("document.body.getAttribute('data-md-color-scheme')")

    seen = {scheme()}
    for _ in range(3):  # follow system → light → dark → follow system
        page.locator("form[data-md-component=palette] label:visible").first.click()
        seen.add(scheme())
    assert {"default", "slate"} <= seen
    log.assert_clean()


def test_dark_system_preference_is_followed(open_page):
    page, log = open_page("en/decode/", color_scheme="dark")
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    log.assert_clean()
