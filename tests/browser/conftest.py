"""Browser fixtures: Debian's Chromium driven by Playwright, against the built site on 127.0.0.1.

`open_page(path, color_scheme=..., reduced_motion=...)` returns `(page, log)`; the log records console
errors, uncaught page errors, CSP violations and every request that leaves 127.0.0.1. The site is served
with the response headers of its `_headers` file; `open_page_without_headers` opens it as a host that
sends none would serve it (GitHub Pages): plain static files. The browser, its flags and the server are the
harness's (harness/), which the benchmarks drive the site with too.

Every visit gets a new page in a browser context kept for the session (`warm_pages`,
tests/browser/warm_pages.py): no renderer process to start each time, and nothing left from an earlier visit.

`tour(path, view)` is the record of one visit of a page in one view (tests/browser/tour.py), taken once per
session and shared by every test that asks for it: the page-wide tests assert on it instead of each opening
every page again.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest
from filelock import FileLock, Timeout

from harness.static_server import StaticServer
from tests.browser.quality_pages import PAGES
from tests.browser.tour import Tour, take_tour
from tests.browser.warm_pages import WarmPages

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / ".ci" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOT_DIR = Path(os.environ.get("PD_SCREENSHOT_DIR", REPO / "test-artifacts" / "screenshots"))
LOCAL_HOSTS = {"127.0.0.1"}


@dataclass
class PageLog:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.page_errors, f"page errors: {self.page_errors}"
        assert not self.csp_violations, f"CSP violations: {self.csp_violations}"
        assert not self.outside_requests, f"requests that left 127.0.0.1: {self.outside_requests}"


def _is_outside(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in {"http", "https", "ws", "wss"} and parsed.hostname not in LOCAL_HOSTS


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    with StaticServer(built_site) as server:
        yield server.url


@pytest.fixture(scope="session")
def site_url_without_headers(built_site: Path) -> Iterator[str]:
    with StaticServer(built_site, send_headers=False) as server:
        yield server.url


@pytest.fixture(scope="session")
def warm_pages(browser) -> Iterator[WarmPages]:
    """New pages in browser contexts kept for the session (tests/browser/warm_pages.py): every visit of the
    tours and of `open_page` gets a new page, without starting a renderer process of its own."""
    pages = WarmPages(browser)
    yield pages
    pages.close()


@pytest.fixture
def open_page(warm_pages: WarmPages, site_url: str) -> Iterator[Callable[..., tuple[object, PageLog]]]:
    yield from _page_opener(warm_pages, site_url)


@pytest.fixture
def open_page_without_headers(warm_pages: WarmPages,
                              site_url_without_headers: str) -> Iterator[Callable[..., tuple[object, PageLog]]]:
    yield from _page_opener(warm_pages, site_url_without_headers)


def _page_opener(warm_pages: WarmPages, site_url: str) -> Iterator[Callable[..., tuple[object, PageLog]]]:
    opened = []

    def _open(path: str = "", *, color_scheme: str = "light", reduced_motion: str = "no-preference",
              viewport: dict | None = None, wait_until: str = "load", javascript: bool = True) -> tuple[object, PageLog]:
        page = warm_pages.new_page(site_url, color_scheme=color_scheme, reduced_motion=reduced_motion,
                                   viewport=viewport or {"width": 1280, "height": 900}, java_script_enabled=javascript)
        opened.append(page)
        log = PageLog()

        def on_console(message) -> None:
            if message.type != "error":
                return
            text = message.text
            (log.csp_violations if "Content Security Policy" in text else log.console_errors).append(text)

        page.on("console", on_console)
        page.on("pageerror", lambda error: log.page_errors.append(str(error)))
        page.on("request", lambda request: log.outside_requests.append(request.url)
                if _is_outside(request.url) else None)
        page.goto(site_url + path.lstrip("/"), wait_until=wait_until)
        return page, log

    yield _open
    for page in opened:
        with contextlib.suppress(Exception):  # a test may have closed its page itself
            page.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's source; a test that needs it fails in CI without it and is skipped elsewhere."""
    if not AXE.exists():
        # CI installs it (`cd .ci && npm ci` in .ci/setup), so CI always runs these tests.
        if os.environ.get("CI"):
            pytest.fail(f"axe-core missing at {AXE}: run `cd .ci && npm ci`")
        pytest.skip(f"axe-core not installed at {AXE}: run `cd .ci && npm ci` (CI does)")
    return AXE.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def tour(warm_pages: WarmPages, site_url: str, site_url_without_headers: str, screenshot_dir: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Tour]:
    """`tour(path, view)`: the record of that page's tour in that view (tests/browser/tour.py), taken on first use
    by whichever xdist worker asks first (under a file lock) and read from disk by the other. A worker that finds
    the tour it wants being taken by the other takes the next page's meanwhile instead of waiting."""
    from tests.browser.tour import VIEWS
    from tests.conftest import shared_dir

    folder = shared_dir(tmp_path_factory) / "tours"
    folder.mkdir(exist_ok=True)
    taken: dict[tuple[str, str], Tour | str] = {}
    axe = AXE.read_text(encoding="utf-8") if AXE.exists() else None

    def _take(path: str, view: str) -> Tour | str:
        base = site_url if VIEWS[view].headers else site_url_without_headers
        try:
            return take_tour(warm_pages, base, path, view, axe_source=axe, screenshot_dir=screenshot_dir)
        except Exception as error:  # a tour that broke off fails every test that reads it, once each
            return f"{type(error).__name__}: {error}"

    def _record(path: str, view: str) -> Path:
        return folder / f"{view}--{path.strip('/').replace('/', '-') or 'home'}.pickle"

    def _take_if_free(path: str, view: str) -> bool:
        """Take this tour unless it is taken or being taken; whether this worker took it."""
        record = _record(path, view)
        if record.exists():
            return False
        try:
            with FileLock(str(record) + ".lock").acquire(timeout=0):
                if record.exists():
                    return False
                record.write_bytes(pickle.dumps(_take(path, view)))
                return True
        except Timeout:
            return False

    def _tour(path: str, view: str) -> Tour:
        if (path, view) not in taken:
            record = _record(path, view)
            lock = FileLock(str(record) + ".lock")
            while not record.exists():
                try:
                    with lock.acquire(timeout=0):
                        if not record.exists():
                            record.write_bytes(pickle.dumps(_take(path, view)))
                except Timeout:
                    # The other worker is taking this tour: take another page's in the same view meanwhile (the
                    # tests that read one view go through the pages), or wait when none is left.
                    if not any(_take_if_free(other, view) for other in PAGES if other != path):
                        with lock:
                            pass
            with lock:
                taken[path, view] = pickle.loads(record.read_bytes())
        found = taken[path, view]
        if isinstance(found, str):
            pytest.fail(f"the tour of /{path} ({view}) broke off: {found}", pytrace=False)
        return found

    return _tour
