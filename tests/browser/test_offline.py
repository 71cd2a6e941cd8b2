"""Offline: everything a page needs is inside site/, so any static server with no network can host it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from harness.pages import page_paths
from tests.browser.quality_pages import PAGES

_URL_ATTRIBUTES = {"src", "href", "data-pd-trace", "poster", "data"}
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")
_JS_IMPORT = re.compile(r"""(?:\bimport\s*(?:[\w{}*\s,]+from\s*)?|\bimport\s*\(\s*)['"]([^'"]+)['"]""")


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []  # (tag, url)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if not value:
                continue
            if name in _URL_ATTRIBUTES:
                self.urls.append((tag, value))
            elif name == "srcset":
                self.urls += [(tag, part.split()[0]) for part in value.split(",") if part.strip()]


def _is_remote(url: str) -> bool:
    return bool(urlparse(url).scheme) or url.startswith("//")


def _target(site: Path, base: Path, url: str) -> Path:
    path = unquote(urlparse(url).path)
    resolved = (site / path.lstrip("/")) if path.startswith("/") else (base / path)
    resolved = Path(*resolved.parts).resolve()
    return resolved / "index.html" if resolved.is_dir() or url.endswith("/") else resolved


def missing_references(site: Path) -> dict[str, list[str]]:
    """Per file: the site-internal URLs it references that resolve to nothing inside site/."""
    site = site.resolve()
    missing: dict[str, list[str]] = {}

    def check(owner: Path, urls: list[str]) -> None:
        for url in urls:
            if url.startswith(("#", "data:", "mailto:", "blob:")) or _is_remote(url) or not urlparse(url).path:
                continue
            target = _target(site, owner.parent, url)
            if not target.exists() or not target.is_relative_to(site):
                missing.setdefault(owner.relative_to(site).as_posix(), []).append(url)

    for html in site.rglob("*.html"):
        parser = _References()
        parser.feed(html.read_text(encoding="utf-8"))
        check(html, [url for _, url in parser.urls])
    for css in site.rglob("*.css"):
        check(css, _CSS_URL.findall(css.read_text(encoding="utf-8")))
    for module in (site / "assets" / "pd").rglob("*.js"):
        check(module, [url for url in _JS_IMPORT.findall(module.read_text(encoding="utf-8"))
                       if url.startswith(".")])
    return missing


def remote_resources(site: Path) -> dict[str, list[str]]:
    """Per page: resources (not outbound <a> links) loaded from another host."""
    remote: dict[str, list[str]] = {}
    for html in site.rglob("*.html"):
        parser = _References()
        parser.feed(html.read_text(encoding="utf-8"))
        found = [url for tag, url in parser.urls if tag != "a" and _is_remote(url)
                 and not url.startswith(("data:", "mailto:"))]
        # <link rel=canonical/alternate> point at the published URL; they are not loaded.
        found = [url for url in found if not _is_link_metadata(html, url)]
        if found:
            remote[html.relative_to(site).as_posix()] = found
    return remote


def _is_link_metadata(html: Path, url: str) -> bool:
    text = html.read_text(encoding="utf-8")
    return bool(re.search(r'<link\b[^>]*rel="(?:canonical|alternate)"[^>]*href="' + re.escape(url) + '"', text))


def test_every_referenced_asset_and_trace_is_inside_the_site(built_site: Path) -> None:
    missing = missing_references(built_site)
    assert not missing, f"references that resolve to nothing in site/: {missing}"


def test_no_page_loads_anything_from_another_host(built_site: Path) -> None:
    remote = remote_resources(built_site)
    assert not remote, f"resources from other hosts: {remote}"


def test_every_demo_points_at_a_trace_file_in_the_site(built_site: Path) -> None:
    pages = [path for path in page_paths(built_site)
             if "data-pd-demo" in (built_site / path / "index.html").read_text(encoding="utf-8")]
    assert pages, "no page has a demo"
    for path in pages:
        html = (built_site / path / "index.html").read_text(encoding="utf-8")
        traces = re.findall(r'data-pd-trace="([^"]+)"', html)
        assert traces, f"{path}: demos without data-pd-trace"
        for url in traces:
            assert _target(built_site.resolve(), (built_site / path).resolve(), url).is_file(), (path, url)


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_every_request_a_page_makes_is_answered_by_the_site(tour, path: str) -> None:
    """Its demos drawn and played: every request answered below 400, none failed, none left 127.0.0.1."""
    record = tour(path, "desktop-light")
    assert record.unanswered == [] and record.outside_requests == [], "requests the site could not answer by itself"
