"""Under `mkdocs serve`, an author's mistake appears in the page at its place — in the open browser tab
within seconds — with the message the terminal prints, and goes away at the next good save; the rest
of the site keeps building. `mkdocs serve --strict` still stops on it.
"""

from __future__ import annotations

from tests.languages import LANGUAGES

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from hooks.demos.blocks import KINDS

from harness.mkdocs_serve import CHAPTER, CHAPTER_URL, ServedProject, fetch

BAD_BLOCK = "```demo\nkind: teleport\nprompt: hi\n```"
BOX = 'class="pd-authoring-error"'
STRINGS = "en/demo-strings.yml"
pytestmark = [pytest.mark.build, pytest.mark.xdist_group("serve")]  # the server of tests/site/conftest.py


def with_bad_block(original: str) -> tuple[str, int]:
    """The chapter with prose, a bad demo block and more prose at its end; and the line of `kind: teleport`."""
    text = original.rstrip("\n") + "\n\npd-before-the-bad-block\n\n" + BAD_BLOCK + "\n\npd-after-the-bad-block\n"
    return text, text.split("\n").index("kind: teleport") + 1


def box_messages(html: str) -> list[str]:
    """The text of every error box's message, as the page shows it."""
    import html as html_module

    return [html_module.unescape(m) for m in re.findall(r'class="pd-authoring-error__message">(.*?)</code>', html)]


@pytest.fixture
def chapter(served: ServedProject) -> Iterator[Path]:
    """The served chapter, restored (and served again without a box) after the test."""
    path = served.chapter(CHAPTER)
    original = path.read_text(encoding="utf-8")
    yield path
    path.write_text(original, encoding="utf-8")
    assert served.wait_for(CHAPTER_URL, lambda body: BOX not in body, timeout=120) is not None


def test_a_bad_block_shows_its_message_at_its_place_and_everything_else_still_builds(served, chapter) -> None:
    original = chapter.read_text(encoding="utf-8")
    text, line = with_bad_block(original)
    chapter.write_text(text, encoding="utf-8")
    assert served.wait_for(CHAPTER_URL, lambda body: BOX in body, timeout=120) is not None, served.log()[-4000:]
    page = fetch(served.url + CHAPTER_URL) or ""
    message = f"docs/{CHAPTER}:{line}: unknown demo kind 'teleport' — allowed: {', '.join(KINDS)}"
    assert box_messages(page) == [message]
    assert message in served.log(), "the terminal does not print the message the page shows"
    assert page.index("pd-before-the-bad-block") < page.index(BOX) < page.index("pd-after-the-bad-block")
    assert 'data-pd-demo="conversation"' in page, "the chapter's good demo is gone"
    # Its live-reload script is inline and new at every request: a policy in the page would block it.
    assert 'http-equiv="Content-Security-Policy"' not in page
    for other in ("prefill/", "en/two-phases/"):
        assert BOX not in (fetch(served.url + other) or BOX) and "data-pd-demo" in (fetch(served.url + other) or "")

    chapter.write_text(original, encoding="utf-8")
    assert served.wait_for(CHAPTER_URL, lambda body: BOX not in body and "data-pd-demo" in body,
                           timeout=120) is not None


def test_a_missing_label_shows_by_each_demo_of_that_language_which_still_builds(served) -> None:
    strings = served.chapter(STRINGS)
    original = strings.read_text(encoding="utf-8")
    play = re.search(r"^  play: .*\n", original, re.M)
    strings.write_text(original[: play.start()] + original[play.end():], encoding="utf-8")
    try:
        assert served.wait_for("en/" + CHAPTER_URL, lambda body: BOX in body, timeout=120) is not None
        page = fetch(served.url + "en/" + CHAPTER_URL) or ""
        [message] = box_messages(page)
        assert message.startswith(f"docs/{STRINGS}:") and "missing demo string(s) common.play" in message
        assert page.index(BOX) < page.index('data-pd-demo="conversation"'), "the box is not at the demo"
        assert BOX not in (fetch(served.url + CHAPTER_URL) or BOX), "the Chinese page shows the English mistake"
    finally:
        strings.write_text(original, encoding="utf-8")
    assert served.wait_for("en/" + CHAPTER_URL, lambda body: BOX not in body, timeout=120) is not None


def test_a_label_no_strings_file_has_shows_in_place_of_the_demos_that_need_it(served) -> None:
    files = [served.chapter(f"{lang}/demo-strings.yml") for lang in LANGUAGES]
    originals = [path.read_text(encoding="utf-8") for path in files]
    for path, original in zip(files, originals, strict=True):
        path.write_text(re.sub(r"^(recap:\n)  title: .*\n", r"\1", original, flags=re.M), encoding="utf-8")
    try:
        assert served.wait_for("summary/", lambda body: BOX in body, timeout=120) is not None, served.log()[-4000:]
        page = fetch(served.url + "summary/") or ""
        [message] = box_messages(page)
        section = originals[0].split("\n").index("recap:") + 1
        assert message.startswith(f"docs/zh/demo-strings.yml:{section}: language 'zh' has no demo string "
                                  "'recap.title'")
        assert 'data-pd-demo="recap"' not in page, "the demo that needs the label was built without it"
        assert "data-pd-demo" in (fetch(served.url + CHAPTER_URL) or ""), "demos that do not need it stopped"
    finally:
        for path, original in zip(files, originals, strict=True):
            path.write_text(original, encoding="utf-8")
    assert served.wait_for("summary/", lambda body: BOX not in body and "data-pd-demo" in body,
                           timeout=120) is not None


@pytest.mark.browser
def test_in_the_open_tab_the_box_appears_within_seconds_and_the_fixed_file_shows_the_demo_again(
        served, chapter, record_property, browser) -> None:
    original = chapter.read_text(encoding="utf-8")
    text, line = with_bad_block(original)
    page = browser.new_page()
    try:
        page.goto(served.url + CHAPTER_URL)
        demos = page.locator(".pd-demo").count()
        assert demos >= 1 and page.locator(".pd-authoring-error").count() == 0

        saved = time.perf_counter()
        chapter.write_text(text, encoding="utf-8")
        box = page.get_by_role("alert").filter(has_text=f"docs/{CHAPTER}:{line}")
        box.wait_for(state="visible", timeout=30_000)  # live reload: nobody touches the tab
        seconds = time.perf_counter() - saved
        assert "teleport" in box.inner_text() and "conversation, prefill" in box.inner_text()
        assert page.get_by_text("pd-after-the-bad-block").is_visible(), "the rest of the page is not shown"
        assert page.locator(".pd-demo").count() == demos

        chapter.write_text(original, encoding="utf-8")
        page.locator(".pd-authoring-error").wait_for(state="detached", timeout=30_000)
        # The box leaves with the old document, and the reloaded one may still be arriving (a clean-clone run
        # counted no demo there once): wait until all of its demos are there.
        expect(page.locator(".pd-demo")).to_have_count(demos, timeout=30_000)
        page.locator(".pd-demo").first.wait_for(state="visible")
    finally:
        page.close()
    record_property("serve_mistake_shown_seconds", round(seconds, 2))
    print(f"\nmkdocs serve: save a bad block → its error box visible in the open tab: {seconds:.2f} s")


@pytest.mark.xdist_group("own-server-strict")
def test_serve_strict_still_stops_on_a_mistake(tmp_path: Path) -> None:
    project = ServedProject(tmp_path / "project", extra_env={"PD_SWEEP": "quick"}, extra_args=("--strict",))
    try:
        assert project.wait_for(CHAPTER_URL, lambda body: "data-pd-demo" in body, timeout=900) is not None, \
            project.log()[-4000:]
        chapter = project.chapter(CHAPTER)
        text, line = with_bad_block(chapter.read_text(encoding="utf-8"))
        chapter.write_text(text, encoding="utf-8")
        deadline = time.monotonic() + 120
        while f"{CHAPTER}:{line}: unknown demo kind" not in project.log() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f"docs/{CHAPTER}:{line}: unknown demo kind 'teleport'" in project.log(), project.log()[-4000:]
        assert "Aborted" in project.log()
        assert BOX not in (fetch(project.url + CHAPTER_URL, timeout=3) or "")
    finally:
        project.stop()


@pytest.mark.browser
def test_the_box_is_accessible_in_both_palettes(served, chapter, browser) -> None:
    from tests.browser.test_a11y import AXE, BLOCKING_IMPACTS

    if not AXE.exists():
        pytest.skip(f"axe-core not installed at {AXE}: run `cd .ci && npm ci` (CI does)")
    chapter.write_text(with_bad_block(chapter.read_text(encoding="utf-8"))[0], encoding="utf-8")
    assert served.wait_for(CHAPTER_URL, lambda body: BOX in body, timeout=120) is not None
    for palette in ("light", "dark"):
        page = browser.new_page(color_scheme=palette)
        try:
            page.goto(served.url + CHAPTER_URL)
            page.evaluate(AXE.read_text(encoding="utf-8"))
            violations = page.evaluate("""async () => (await axe.run({include: [['.pd-authoring-error']]},
                {resultTypes: ['violations']})).violations.map(v => ({id: v.id, impact: v.impact}))""")
            assert not [v for v in violations if v["impact"] in BLOCKING_IMPACTS], (palette, violations)
        finally:
            page.close()
