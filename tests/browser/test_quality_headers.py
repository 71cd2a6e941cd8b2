"""Security headers: the build writes a per-page CSP into `_headers`; the pages run under it cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from hooks.security.headers_file import render_headers_file, url_patterns
from hooks.security.inline_scripts import csp_hash, find_inline_code
from hooks.security.policy import COMMON_HEADERS, content_security_policy
from tests.browser.quality_pages import page_paths, scroll_through
from tests.browser.static_server import headers_for, parse_headers_file

# ---- the policy and the hashing, without a build -------------------------------------------------


def test_hash_of_an_empty_script_is_the_one_chromium_reports() -> None:
    # Chromium's console suggests exactly this source for an empty inline script.
    assert csp_hash("") == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"


def test_only_executable_inline_scripts_are_hashed() -> None:
    html = """<script>a()</script><script type="module">b()</script><script src="x.js"></script>
    <script type="application/json">{"c": 1}</script><script id="y" type="text/javascript">d()\r\ne()</script>"""
    code = find_inline_code(html)
    assert code.scripts == ["a()", "b()", "d()\ne()"]
    assert code.hashes == [csp_hash("a()"), csp_hash("b()"), csp_hash("d()\ne()")]
    assert code.unhashable == []


def test_event_handlers_and_javascript_urls_are_reported_as_unhashable() -> None:
    code = find_inline_code('<img src=x onerror="alert(1)"><a href=" JavaScript:alert(1)">x</a>')
    assert len(code.unhashable) == 2


def test_policy_allows_only_the_site_itself_and_never_eval_or_inline_scripts() -> None:
    policy = content_security_policy(["'sha256-abc='"])
    directives = dict(part.split(" ", 1) for part in policy.split("; "))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self' 'sha256-abc='"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe-eval" not in policy
    assert "http" not in policy and "*" not in policy


def test_each_page_rule_carries_that_pages_hashes_and_the_catch_all_their_union() -> None:
    text = render_headers_file({"index.html": ["'sha256-a='"], "en/decode/index.html": ["'sha256-b='"]})
    rules = parse_headers_file(text)
    assert url_patterns("en/decode/index.html") == ["/en/decode/", "/en/decode/index.html"]
    assert headers_for("/en/decode/", rules)["Content-Security-Policy"] == content_security_policy(["'sha256-b='"])
    assert headers_for("/", rules)["Content-Security-Policy"] == content_security_policy(["'sha256-a='"])
    assert headers_for("/missing/", rules)["Content-Security-Policy"] == \
        content_security_policy(["'sha256-a='", "'sha256-b='"])
    assert headers_for("/assets/x.js", rules)["X-Content-Type-Options"] == "nosniff"


def test_only_materials_fingerprinted_assets_are_cached_for_a_year() -> None:
    rules = parse_headers_file(render_headers_file({"index.html": []}))
    a_year = "public, max-age=31536000, immutable"
    for fingerprinted in ["/assets/javascripts/bundle.a5f9d56c.min.js", "/assets/stylesheets/main.57a0d79d.min.css",
                          "/assets/javascripts/workers/search.a7633da7.min.js"]:
        assert headers_for(fingerprinted, rules).get("Cache-Control") == a_year, fingerprinted
    # Same name whatever the content: the host's default caching, so a rebuild reaches the reader.
    for named in ["/", "/en/decode/", "/assets/pd/main.js", "/assets/vendor/plotly.min.js", "/search/search_index.json",
                  "/assets/javascripts/lunr/min/lunr.zh.min.js", "/assets/traces/decode-zh-1db92f1ba1d2.json"]:
        assert "Cache-Control" not in headers_for(named, rules), named


# ---- the built site --------------------------------------------------------------------------------


def _rules(site: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    headers_file = site / "_headers"
    assert headers_file.exists(), "the build wrote no _headers file: is hooks/headers_hook.py in mkdocs.yml?"
    return parse_headers_file(headers_file.read_text(encoding="utf-8"))


def test_headers_file_covers_every_page_of_every_language_with_its_own_hashes(built_site: Path) -> None:
    rules = _rules(built_site)
    html_files = sorted(built_site.rglob("*.html"))
    assert any(path.is_relative_to(built_site / "en") for path in html_files), "no English pages built"
    for html in html_files:
        relative = html.relative_to(built_site).as_posix()
        expected = content_security_policy(find_inline_code(html.read_text(encoding="utf-8")).hashes)
        for pattern in url_patterns(relative):
            assert headers_for(pattern, rules).get("Content-Security-Policy") == expected, relative


def test_no_page_has_inline_code_that_a_hash_cannot_allow(built_site: Path) -> None:
    offenders = {html.relative_to(built_site).as_posix(): code.unhashable
                 for html in built_site.rglob("*.html")
                 if (code := find_inline_code(html.read_text(encoding="utf-8"))).unhashable}
    assert not offenders, f"inline handlers or javascript: URLs (blocked by the CSP): {offenders}"


# ---- in Chromium, served with exactly those headers ----------------------------------------------


@pytest.mark.browser
def test_server_sends_exactly_the_headers_file_policy(open_page, built_site: Path) -> None:
    rules = _rules(built_site)
    for path in ["", "en/"]:
        page, _ = open_page(path)
        response = page.request.get(page.url)
        sent = response.headers
        for name, value in [*COMMON_HEADERS, ("Content-Security-Policy", headers_for("/" + path, rules)
                                              ["Content-Security-Policy"])]:
            assert sent.get(name.lower()) == value, (path, name)


@pytest.mark.browser
@pytest.mark.parametrize("palette", ["light", "dark"])
def test_every_page_and_demo_runs_with_zero_csp_violations_and_no_outside_requests(
        open_page, built_site: Path, palette: str) -> None:
    problems = {}
    for path in page_paths(built_site):
        page, log = open_page(path, color_scheme=palette)
        scroll_through(page)
        if log.csp_violations or log.outside_requests:
            problems[path or "/"] = log.csp_violations + log.outside_requests
        page.context.close()
    assert not problems, f"CSP violations or requests that left 127.0.0.1: {problems}"
