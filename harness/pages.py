"""A built site's pages, and a reader's pass through one: the first gesture, every demo and chart brought into
view and drawn, the network quiet. The tests' tours (tests/browser/tour.py) and `benchmarks.bench_site`'s page
weight read a page after this pass. Waiting is on the demos' own ready attributes and on the network, never on
a clock."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

PAGE_TIMEOUT_MS = 20_000
NEXT_FRAME = "() => new Promise((done) => requestAnimationFrame(() => done()))"
NEXT_FRAMES = "() => document.fonts.ready.then(() => new Promise((done) => requestAnimationFrame(() => " \
              "requestAnimationFrame(() => done()))))"


def page_paths(site: Path) -> list[str]:
    """URL paths (relative to the site root, '' for the landing page) of every built chapter page."""
    paths = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative.startswith("assets"):
            continue
        paths.append("" if relative == "." else relative + "/")
    return paths


class Network:
    """The requests a page has in flight, to wait until the network is quiet (Playwright's `networkidle`
    is a load state: it says nothing of the requests a page makes after it loaded)."""

    def __init__(self, page: Page, *, javascript: bool = True) -> None:
        self.javascript = javascript
        self.pending: set[object] = set()
        page.on("request", lambda request: self.pending.add(request))
        page.on("requestfinished", lambda request: self.pending.discard(request))
        page.on("requestfailed", lambda request: self.pending.discard(request))

    def quiet(self, page: Page, *, quiet_ms: int = 300, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
        """Wait until no request has been in flight for quiet_ms (a page that keeps polling must not hang:
        after timeout_ms the caller's asserts decide)."""
        if not self.javascript:  # nothing runs after the load (and no frame callback would ever run)
            page.wait_for_load_state("networkidle")
            return
        deadline = time.monotonic() + timeout_ms / 1000
        quiet_since = None
        while time.monotonic() < deadline:
            if self.pending:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_ms / 1000:
                break
            page.evaluate(NEXT_FRAME)  # one frame later, with the page's network events delivered
        page.evaluate(NEXT_FRAMES)


def engage(page: Page) -> None:
    """The reader's first gesture: demos, charts and Material's script start on it."""
    page.mouse.move(10, 300)
    page.mouse.move(20, 310)


def draw_every_demo(page: Page, timeout_ms: int = PAGE_TIMEOUT_MS) -> dict[str, str]:
    """Bring every demo and chart into view, as a reader scrolling through does, and wait until each is drawn
    (or has failed: its status says so). Returns each demo's status ("ready" or "error") by its id or kind."""
    engage(page)
    status = {}
    for demo in page.locator(".pd-demo").all():
        demo.scroll_into_view_if_needed()
        page.wait_for_function("el => ['ready', 'error'].includes(el.dataset.pdStatus)", arg=demo.element_handle(),
                               timeout=timeout_ms)
        status[demo.get_attribute("id") or demo.get_attribute("data-pd-demo")] = demo.get_attribute("data-pd-status")
    for chart in page.locator(".pd-chart").all():
        chart.scroll_into_view_if_needed()
        page.wait_for_function("el => el.dataset.pdChart === 'ready'", arg=chart.element_handle(), timeout=timeout_ms)
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    return status
