"""Text from Markdown and the strings files reaches the page as text: hostile input runs nothing.

A temporary project gets hostile text in every place an author or translator writes: a demo's prompt
and note, and every label in the Chinese strings file (which also reaches the charts' titles and
buttons). The built site is then served WITHOUT its CSP, so escaping alone must hold.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.pages import Network, draw_every_demo
from harness.static_server import StaticServer
from tests.conftest import build_site
from tests.site.test_special_builds import make_project

TEMPLATE_SYNTAX = "Say {{ machine.cpu }} and stop. {% claim ttft %}"  # must reach the page as typed
PROMPT = f"</script><img src=x onerror=window.__pdPwned=1> {TEMPLATE_SYNTAX} quantum?"
NOTE = "<script>window.__pdPwned=2</script><b>note</b>"
LABEL_TAIL = " <img src=x onerror=window.__pdPwned=3>"
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("hostile")]
MARKUP_PATTERN = re.compile(r"<img src=x|<script>window\.__pdPwned|<b>note</b>")


def _with_hostile_leaves(node: object) -> object:
    if isinstance(node, dict):
        return {key: _with_hostile_leaves(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_with_hostile_leaves(value) for value in node]
    return node + LABEL_TAIL if isinstance(node, str) else node


def _set_block_field(markdown: str, kind: str, field: str, value: str) -> str:
    """Replace (or add) `field:` in the first demo block of this kind; values as JSON strings (valid YAML)."""
    pattern = re.compile(r"(```demo\n)(kind: " + kind + r"\n)(.*?)(```)", re.S)
    match = pattern.search(markdown)
    assert match, f"no {kind} demo block"
    body = re.sub(rf"^{field}:.*\n", "", match.group(3), flags=re.M)
    body += f"{field}: {json.dumps(value)}\n"
    return markdown[: match.start()] + match.group(1) + match.group(2) + body + match.group(4) + \
        markdown[match.end():]


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    config = make_project(root / "project")
    docs = root / "project" / "docs"
    docs.unlink()
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs", docs)
    for chapter, kind in (("two-phases", "conversation"), ("prefill", "prefill")):
        path = docs / "zh" / f"{chapter}.md"
        text = _set_block_field(path.read_text(encoding="utf-8"), kind, "prompt", PROMPT)
        path.write_text(_set_block_field(text, kind, "note", NOTE), encoding="utf-8")
    strings = docs / "zh" / "demo-strings.yml"
    hostile = _with_hostile_leaves(yaml.safe_load(strings.read_text(encoding="utf-8")))
    strings.write_text(yaml.safe_dump(hostile, allow_unicode=True), encoding="utf-8")
    site = build_site(root / "site", config_file=config, extra_env={"PD_SWEEP": "quick"}).path
    # Serve without the CSP, neither the headers nor the pages' own: escaping has to be enough on its own.
    (site / "_headers").unlink()
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html), encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def hostile_url(hostile_site: Path) -> Iterator[str]:
    with StaticServer(hostile_site) as server:
        yield server.url


def test_hostile_text_is_escaped_in_the_built_html(hostile_site: Path) -> None:
    for chapter in ("two-phases", "prefill"):
        html = (hostile_site / chapter / "index.html").read_text(encoding="utf-8")
        assert "&lt;img src=x onerror=window.__pdPwned=1&gt;" in html, f"{chapter}: prompt not shown as text"
        assert "&lt;script&gt;window.__pdPwned=2" in html, f"{chapter}: note not shown as text"
        assert TEMPLATE_SYNTAX in html, f"{chapter}: the prompt's {{{{ … }}}} was read as a figure reference"
        assert not MARKUP_PATTERN.search(html), f"{chapter}: hostile text reached the HTML as markup"


def test_hostile_text_in_demo_json_is_carried_as_typed(hostile_site: Path) -> None:
    """The labels and prompts the browser shows as text are in the JSON as the author and translator typed
    them: not escaped (nothing for the browser to un-escape), not dropped. (Plotly reads its own text as HTML:
    what goes into a figure is escaped for it, tests/hooks/test_figures.py.)"""
    traces = sorted((hostile_site / "assets" / "traces").glob("*-zh-*.json"))
    assert traces
    prompts = {}
    for trace in traces:
        data = json.loads(trace.read_text(encoding="utf-8"))
        labels = [value for value in data["strings"].values() if isinstance(value, str)]
        assert labels and all(label.endswith(LABEL_TAIL) for label in labels), trace.name
        if "prompt" in data:
            prompts[data["kind"]] = data["prompt"]["text"]
    assert prompts.get("conversation") == PROMPT and prompts.get("prefill") == PROMPT, prompts


@pytest.mark.browser
@pytest.mark.parametrize("chapter", ["two-phases/", "prefill/", "decode/", "ttft-tps/", "bottleneck/", "batching/", "weight-formats/",
                                     "summary/", "projections/"])
def test_hostile_text_runs_nothing_and_shows_literally_in_the_browser(browser, hostile_url: str,
                                                                      chapter: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    network = Network(page)
    page.goto(hostile_url + chapter + "?pd-speed=400")
    draw_every_demo(page)
    for demo in page.locator(".pd-demo").all():  # play every demo to its end
        button = demo.locator(".pd-button--play")
        if not button.count() or demo.get_attribute("data-pd-demo") == "device":
            continue
        button.first.scroll_into_view_if_needed()
        button.first.click()
        page.wait_for_function("el => (el.dataset.pdState ? el : el.querySelector('[data-pd-state]'))"
                               ".dataset.pdState === 'ended'", arg=demo.element_handle(), timeout=20_000)
    network.quiet(page)
    assert page.evaluate("() => window.__pdPwned") is None, "hostile input ran as script"
    assert page.locator('img[src="x"]').count() == 0, "hostile input became an <img> element"
    text = page.evaluate("() => document.body.innerText")
    if chapter in ("two-phases/", "prefill/"):
        assert "onerror=window.__pdPwned=1" in text, "the hostile prompt is not shown as text"
        assert TEMPLATE_SYNTAX in text, "the prompt's template syntax is not shown as typed"
    assert "onerror=window.__pdPwned=3" in text, "hostile labels are not shown as text"
    svg_text = page.evaluate("() => [...document.querySelectorAll('.main-svg')].map(n => n.textContent).join(' ')")
    if page.locator(".main-svg").count():
        assert "__pdPwned=3" in svg_text, "a chart dropped a hostile label instead of showing it as text"
    assert not errors, errors
    context.close()
