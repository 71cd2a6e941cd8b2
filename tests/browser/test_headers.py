"""The site's protections: every page carries its own CSP (a `<meta>` element with its script hashes),
and `_headers` carries the same policy for the hosts that read it. The pages run under both cleanly,
served with the headers and as plain static files (GitHub Pages), and an injected script runs in neither.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.static_server import headers_for, parse_headers_file
from hooks.security.headers_file import render_headers_file, url_patterns
from hooks.security.inline_scripts import csp_hash, find_inline_code
from hooks.security.page_meta import with_policy
from hooks.security.policy import (
    COMMON_HEADERS,
    HEADER_ONLY_DIRECTIVES,
    REFERRER_POLICY,
    content_security_policy,
)
from tests.browser.quality_pages import PAGES, page_idle

PAGE_POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')

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
    assert directives["script-src"] == "'self' 'wasm-unsafe-eval' 'sha256-abc='"  # WebAssembly, not eval
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "'unsafe-eval'" not in policy
    assert "http" not in policy and "*" not in policy


def test_the_meta_policy_is_the_header_policy_without_what_a_meta_element_cannot_carry() -> None:
    header = dict(part.split(" ", 1) for part in content_security_policy(["'sha256-a='"]).split("; "))
    meta = dict(part.split(" ", 1) for part in content_security_policy(["'sha256-a='"], in_meta=True).split("; "))
    assert "frame-ancestors" in header
    assert not HEADER_ONLY_DIRECTIVES & meta.keys()
    assert meta == {name: sources for name, sources in header.items() if name not in HEADER_ONLY_DIRECTIVES}


def test_the_policy_goes_right_after_the_charset_before_any_script_and_only_once() -> None:
    page = ('<!doctype html><html><head>\n<meta charset="utf-8">\n<link rel="stylesheet" href="a.css">'
            "<script>a()</script></head><body></body></html>")
    secured = with_policy(page, [csp_hash("a()")])
    assert secured is not None
    charset, policy = secured.index("<meta charset"), secured.index("Content-Security-Policy")
    assert charset < policy < secured.index('name="referrer"') < secured.index("<link") < secured.index("<script")
    assert PAGE_POLICY.search(secured).group(1) == content_security_policy([csp_hash("a()")], in_meta=True)
    assert f'<meta name="referrer" content="{REFERRER_POLICY}">' in secured
    # mkdocs-static-i18n runs the post-build step once per language: placing it again changes nothing.
    assert with_policy(secured, [csp_hash("a()")]) == secured
    again = with_policy(secured, [csp_hash("b()")])
    assert again.count("Content-Security-Policy") == 1 and csp_hash("b()") in again


def test_a_page_without_a_head_gets_no_policy() -> None:
    assert with_policy("<p>fragment</p>", []) is None


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


def test_every_page_carries_its_own_policy_before_anything_it_governs(built_site: Path) -> None:
    rules = _rules(built_site)
    for html_file in sorted(built_site.rglob("*.html")):
        relative = html_file.relative_to(built_site).as_posix()
        html = html_file.read_text(encoding="utf-8")
        found = PAGE_POLICY.findall(html)
        assert len(found) == 1, f"{relative}: {len(found)} meta policies"
        header = headers_for(url_patterns(relative)[0], rules)["Content-Security-Policy"]
        # The same hashes as _headers; only what a meta element cannot carry is left out.
        assert found[0] == content_security_policy(find_inline_code(html).hashes, in_meta=True), relative
        assert found[0] == "; ".join(part for part in header.split("; ")
                                     if part.split(" ")[0] not in HEADER_ONLY_DIRECTIVES), relative
        head = html[: html.index("</head>")]
        first_governed = min(head.index(tag) for tag in ("<script", "<link", "<style") if tag in head)
        assert head.index("<meta charset") < head.index("Content-Security-Policy") < first_governed, relative
        assert f'<meta name="referrer" content="{REFERRER_POLICY}">' in head, relative


def test_no_page_has_inline_code_that_a_hash_cannot_allow(built_site: Path) -> None:
    offenders = {html.relative_to(built_site).as_posix(): code.unhashable
                 for html in built_site.rglob("*.html")
                 if (code := find_inline_code(html.read_text(encoding="utf-8"))).unhashable}
    assert not offenders, f"inline handlers or javascript: URLs (blocked by the CSP): {offenders}"


# ---- in Chromium, served with exactly those headers, and without any ---------------------------------

HOSTS = ["with-headers", "without-headers"]
INJECTED = ("<script>window.__pdInjected = 1</script>"
            "<img src=\"data:,\" onerror=\"window.__pdInjected = 2\" alt=\"\">")


@pytest.fixture(params=HOSTS)
def hosted_page(request):
    """Open a page as served with the `_headers` file (Netlify, Cloudflare Pages) or without (GitHub Pages)."""
    return request.getfixturevalue("open_page" if request.param == "with-headers" else "open_page_without_headers")


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
def test_a_host_without_headers_sends_no_policy_so_the_page_alone_enforces_it(open_page_without_headers) -> None:
    page, _ = open_page_without_headers("")
    sent = page.request.get(page.url).headers
    assert "content-security-policy" not in sent and "referrer-policy" not in sent
    policy = page.evaluate("document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]').content")
    assert "script-src 'self' 'wasm-unsafe-eval' 'sha256-" in policy


@pytest.mark.browser
@pytest.mark.parametrize("path", ["", "en/decode/"])
def test_an_injected_inline_script_or_handler_without_a_hash_is_blocked(hosted_page, path: str) -> None:
    page, log = hosted_page(path)

    def inject(route) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text().replace("</body>", INJECTED + "</body>"))

    page.route(page.url, inject)  # as if the page's HTML had been tampered with
    log.csp_violations.clear()
    page.reload()
    page_idle(page)  # the injected image has failed to load and its handler would have run
    assert page.evaluate("window.__pdInjected") is None, "an injected inline script or handler ran"
    assert len(log.csp_violations) >= 2, f"the injected code was not reported as blocked: {log.csp_violations}"
    # The page's own inline scripts still ran: Material's storage scope and our "js" class.
    assert page.evaluate("typeof __md_scope") == "object"
    assert page.evaluate("document.documentElement.classList.contains('js')")


@pytest.mark.browser
def test_without_the_pages_own_policy_the_same_injection_would_run(open_page_without_headers) -> None:
    # The control for the test above: what blocks the injection on a header-less host is the meta element.
    page, _ = open_page_without_headers("")

    def inject_and_strip_the_policy(route) -> None:
        html = route.fetch().text().replace("</body>", INJECTED + "</body>")
        route.fulfill(status=200, content_type="text/html", body=PAGE_POLICY.sub("", html))

    page.route(page.url, inject_and_strip_the_policy)
    page.reload()
    page.wait_for_function("window.__pdInjected !== undefined", timeout=5000)


@pytest.mark.browser
@pytest.mark.parametrize("view", ["desktop-light", "desktop-dark", "320"])
@pytest.mark.parametrize("path", PAGES)
def test_every_page_and_demo_runs_with_zero_csp_violations_and_no_outside_requests(tour, path: str, view: str) -> None:
    """Every demo played to its end, every option switched, every slider moved, every chart pointed at, in both
    palettes with the `_headers` file; every demo drawn on a 320 px phone from a host that sends none (see
    tour.VIEWS). Measuring this device, with the same checks: tests/browser/test_device.py."""
    record = tour(path, view)
    problems = {name: items for name, items in record.problems().items()
                if name in ("CSP violations", "requests that left 127.0.0.1", "page errors")}
    assert problems == {}
