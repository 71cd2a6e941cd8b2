"""Accessibility: axe-core finds no serious or critical violation on any page, in either palette."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.quality_pages import page_language, page_paths, scroll_through

AXE = Path(__file__).resolve().parents[2] / ".ci" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING_IMPACTS = {"serious", "critical"}


@pytest.fixture(scope="session")
def axe_source() -> str:
    if not AXE.exists():
        # CI installs it (`cd .ci && npm ci` in .ci/run), so CI always runs these tests.
        if os.environ.get("CI"):
            pytest.fail(f"axe-core missing at {AXE}: run `cd .ci && npm ci`")
        pytest.skip(f"axe-core not installed at {AXE}: run `cd .ci && npm ci` (CI does)")
    return AXE.read_text(encoding="utf-8")


def run_axe(page, axe_source: str) -> list[dict]:
    """axe-core's violations on the page. page.evaluate runs outside the page's CSP, unlike a <script>."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source)
    return page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + n.failureSummary)}));
    }""")


def _describe(violations: list[dict]) -> str:
    return "\n".join(f"  [{v['impact']}] {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"])
                     for v in violations)


@pytest.mark.browser
@pytest.mark.parametrize("palette", ["light", "dark"])
def test_no_serious_or_critical_axe_violations_on_any_page(open_page, built_site: Path, axe_source: str,
                                                           palette: str) -> None:
    failures = {}
    for path in page_paths(built_site):
        page, _ = open_page(path, color_scheme=palette)
        expected_scheme = "slate" if palette == "dark" else "default"
        assert page.evaluate("() => document.body.dataset.mdColorScheme") == expected_scheme, path
        scroll_through(page)  # the demos and their charts are part of what a reader meets
        page.evaluate("() => window.scrollTo(0, 0)")
        blocking = [v for v in run_axe(page, axe_source) if v["impact"] in BLOCKING_IMPACTS]
        if blocking:
            failures[path or "/"] = _describe(blocking)
        page.context.close()
    assert not failures, f"axe-core violations ({palette}):\n" + "\n".join(
        f"{path}:\n{text}" for path, text in failures.items())


@pytest.mark.browser
def test_every_page_declares_its_own_language(open_page, built_site: Path) -> None:
    wrong = {}
    for path in page_paths(built_site):
        page, _ = open_page(path)
        lang = page.evaluate("() => document.documentElement.lang")
        if lang != page_language(path):
            wrong[path or "/"] = lang
        page.context.close()
    assert not wrong, f"<html lang> does not match the page's language (zh at /, en under /en/): {wrong}"


def test_every_built_page_declares_its_language_in_the_html(built_site: Path) -> None:
    for path in page_paths(built_site):
        html = (built_site / path / "index.html").read_text(encoding="utf-8")
        assert f'<html lang="{page_language(path)}"' in html, path
