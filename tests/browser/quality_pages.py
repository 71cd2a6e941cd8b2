"""Helpers shared by the quality tests: the pages of the site, and the language each is written in."""

from __future__ import annotations

from pathlib import Path

from tests.languages import PREFIXES, language_of

REPO = Path(__file__).resolve().parents[2]
# Chromium reports blocked scripts with this text in a console error (see conftest.PageLog).
CSP_CONSOLE_TEXT = "Content Security Policy"


def every_page(docs: Path = REPO / "docs") -> list[str]:
    """URL paths of every page the build writes (chapters, appendix and home, both languages), from docs/."""
    paths = []
    for lang_dir in sorted(d for d in docs.iterdir() if d.is_dir() and any(d.glob("*.md"))):
        prefix = PREFIXES.get(lang_dir.name, f"{lang_dir.name}/")
        for page in sorted(lang_dir.glob("*.md")):
            paths.append(prefix + ("" if page.stem == "index" else f"{page.stem}/"))
    return paths


PAGES = every_page()


def page_language(path: str) -> str:
    """The language a page is written in: the default language at the root, the others under /<locale>/."""
    return language_of(path)


def page_idle(page) -> None:
    """Wait until the page's main thread is idle and two frames have been drawn: what the page does by
    itself, on a timer or when idle, has been done (for tests that assert something did NOT happen)."""
    page.evaluate("() => new Promise((done) => requestIdleCallback(() => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => done())), {timeout: 5000}))")


def next_frames(page, frames: int = 2) -> None:
    """Wait until the page has drawn `frames` more frames: what a key press or a pointer move changes is drawn."""
    page.evaluate("(n) => new Promise((done) => { const step = (k) => k ? requestAnimationFrame(() => step(k - 1))"
                  " : done(); step(n); })", frames)
