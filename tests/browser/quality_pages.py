"""Helpers shared by the quality tests: the pages of a built site, and loading a page fully."""

from __future__ import annotations

import contextlib
from pathlib import Path

# Chromium reports blocked scripts with this text in a console error (see conftest.PageLog).
CSP_CONSOLE_TEXT = "Content Security Policy"


def page_paths(site: Path) -> list[str]:
    """URL paths (relative to the site root, '' for the landing page) of every built chapter page."""
    paths = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative.startswith("assets"):
            continue
        paths.append("" if relative == "." else relative + "/")
    return paths


def page_language(path: str) -> str:
    """The language a page is written in: folder structure, Chinese at the root, English under en/."""
    return "en" if path.startswith("en/") or path == "en/" else "zh"


def scroll_through(page, *, settle_ms: int = 1500) -> None:
    """Scroll to the bottom in viewport steps, so every lazily loaded demo loads, then wait for the network."""
    height = page.evaluate("() => document.documentElement.scrollHeight")
    step = page.viewport_size["height"] if page.viewport_size else 800
    for y in range(0, height + step, step):
        page.evaluate(f"() => window.scrollTo(0, {y})")
        page.wait_for_timeout(150)
    # A page that keeps polling must not hang the test: the caller's asserts decide.
    with contextlib.suppress(Exception):
        page.wait_for_load_state("networkidle", timeout=20000)
    page.wait_for_timeout(settle_ms)
