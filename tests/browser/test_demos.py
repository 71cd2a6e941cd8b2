"""The demos in a real browser, in both languages: playback (read from the pages' tours), stepping, keyboard,
reduced motion, markup in the data shown as text, zero errors and nothing leaving 127.0.0.1. Charts and their
palette: tests/browser/test_chart_driver.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser.quality_pages import next_frames

pytestmark = pytest.mark.browser

LANGS = ["", "en/"]  # Chinese at /, English at /en/
PAGE_OF_KIND = {"conversation": "two-phases/", "prefill": "prefill/", "decode": "decode/",
                "timeline": "ttft-tps/", "roofline": "bottleneck/", "recap": "summary/",
                "batching": "batching/", "formats": "weight-formats/"}
PLAYER_KINDS = ["conversation", "prefill", "decode"]
CHART_KINDS = ["prefill", "decode", "timeline", "roofline", "recap", "formats"]
FAST = "?pd-speed=400"  # the player's test hook: 400× the recorded clock
TIMEOUT_MS = 20_000


def engage(page, demo) -> None:
    """Scroll the demo into view and point at it, as a reader does (demos wait for a gesture)."""
    demo.scroll_into_view_if_needed()
    page.mouse.move(10, 300)
    page.mouse.move(20, 310)


def open_demo(open_page, lang: str, kind: str, query: str = FAST, **options):
    """Open the chapter of `kind`, scroll its first demo into view and wait until it is live."""
    page, log = open_page(lang + PAGE_OF_KIND[kind] + query, **options)
    demo = page.locator(f".pd-demo[data-pd-demo={kind}]").first
    engage(page, demo)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    return page, log, demo


def demo_data(page, demo) -> dict:
    return page.evaluate("el => fetch(new URL(el.dataset.pdTrace, document.baseURI)).then(r => r.json())",
                         demo.element_handle())


def count(demo) -> int:
    return int(demo.get_attribute("data-pd-count"))


def total(demo) -> int:
    return int(demo.locator("input[type=range]").first.get_attribute("max"))


def shown_answer(demo) -> str:
    """The answer's text as shown, leaving out tokens shown as bytes (no whole character: see recorded_answer)."""
    return demo.locator("[data-pd-answer]").first.evaluate(
        "el => { const copy = el.cloneNode(true); copy.querySelectorAll('.pd-answer__bytes').forEach((b) => b.remove());"
        " return copy.textContent; }")


def recorded_answer(data: dict) -> str:
    """The recorded answer less U+FFFD: a token holding part of a character is shown as its bytes instead."""
    return data["answer"]["text"].replace("\ufffd", "")


def wait_for_state(page, demo, state: str) -> None:
    page.wait_for_function("([el, s]) => el.dataset.pdState === s", arg=[demo.element_handle(), state],
                           timeout=TIMEOUT_MS)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", PLAYER_KINDS)
def test_play_runs_to_the_end_and_shows_the_recorded_answer(tour, built_site: Path, lang, kind):
    """Read from the page's tour (tests/browser/tour.py), which plays every demo to its end; no label is missing and
    nothing went wrong on the way (tests/browser/test_pages.py asserts the tour's problems)."""
    path = lang + PAGE_OF_KIND[kind]
    record = tour(path, "desktop-light")
    played = next(demo for demo in record.played.values() if demo["kind"] == kind)
    data = json.loads((built_site / path / played["trace"]).resolve().read_text(encoding="utf-8"))
    assert played["fallback_hidden"]
    assert played["count"] == played["total"]
    assert played["answer"].strip() == recorded_answer(data).strip()
    assert record.missing_strings == {}


def tab_until(page, predicate: str, limit: int = 250) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(predicate):
            return
    raise AssertionError(f"Tab never reached: {predicate}")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", PLAYER_KINDS)
def test_step_and_scrub_move_one_token_and_the_keyboard_alone_operates_every_control(open_page, lang, kind):
    page, log, demo = open_demo(open_page, lang, kind)
    # The step buttons and the scrubber move one token at a time.
    strings = demo_data(page, demo)["strings"]
    forward = demo.get_by_role("button", name=strings["common.step_forward"])
    back = demo.get_by_role("button", name=strings["common.step_back"])
    assert count(demo) == 0
    forward.click()
    assert count(demo) == 1
    back.click()
    assert count(demo) == 0
    scrubber = demo.locator("input[type=range]")
    scrubber.focus()
    page.keyboard.press("ArrowRight")
    assert count(demo) == 1
    assert scrubber.input_value() == "1"
    page.keyboard.press("End")
    assert count(demo) == total(demo)
    page.keyboard.press("ArrowLeft")
    assert count(demo) == total(demo) - 1
    page.keyboard.press("Home")
    assert count(demo) == 0

    # Then from the keyboard alone, reaching the stage by Tab from the top of the page.
    demo_id = demo.get_attribute("id")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    tab_until(page, f"document.activeElement.matches('#{demo_id} [data-pd-stage]')")
    page.keyboard.press("End")
    assert count(demo) == total(demo)
    page.keyboard.press("Home")
    assert count(demo) == 0
    page.keyboard.press("ArrowRight")
    assert count(demo) == 1
    page.keyboard.press("ArrowLeft")
    assert count(demo) == 0
    page.keyboard.press("Space")
    wait_for_state(page, demo, "ended")
    assert shown_answer(demo).strip() == recorded_answer(demo_data(page, demo)).strip()
    page.keyboard.press("Home")

    # Every control inside the stage is reachable in order, named, and works from the keyboard.
    names = []
    while True:
        page.keyboard.press("Tab")
        inside = page.evaluate(f"document.activeElement.closest('#{demo_id}') !== null")
        if not inside:
            break
        info = page.evaluate("""() => { const el = document.activeElement;
            const label = el.labels && el.labels[0] ? el.labels[0].textContent : '';
            return {tag: el.tagName, name: (el.getAttribute('aria-label') || el.textContent || label).trim(),
                    outline: getComputedStyle(el).outlineStyle}; }""")
        assert info["name"], f"unnamed control {info}"
        assert info["outline"] != "none", f"no visible focus on {info}"
        names.append(info["tag"])
        if info["tag"] == "BUTTON" and count(demo) < total(demo):
            before, state = count(demo), demo.get_attribute("data-pd-state")
            page.keyboard.press("Enter")
            # The press did something: the step moved, or the player started or stopped (restart pressed before a
            # loaded machine's playback had drawn a frame leaves the step at 0 but stops the player).
            page.wait_for_function("([el, n, s]) => Number(el.dataset.pdCount) !== n || el.dataset.pdState === 'playing'"
                                   " || el.dataset.pdState !== s",
                                   arg=[demo.element_handle(), before, state], timeout=TIMEOUT_MS)
            # Paused again before the next Tab, without moving the focus: a playback reaching its end while the
            # focus sits on "step forward" would disable that button and drop the focus to the page.
            demo.evaluate("el => el.dataset.pdState === 'playing' && el.querySelector('.pd-button--play').click()")
            page.wait_for_function("el => el.dataset.pdState !== 'playing'", arg=demo.element_handle(),
                                   timeout=TIMEOUT_MS)
        assert len(names) < 20
    # Play, forward, restart (back is disabled at the start, so out of the tab order), scrubber, speed.
    assert names.count("BUTTON") >= 3 and "INPUT" in names and "SELECT" in names
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", PLAYER_KINDS)
def test_reduced_motion_shows_the_final_state_with_step_controls(open_page, lang, kind):
    page, log, demo = open_demo(open_page, lang, kind, query="", reduced_motion="reduce")
    data = demo_data(page, demo)
    assert demo.get_attribute("data-pd-state") == "ended"
    assert count(demo) == total(demo)
    assert shown_answer(demo).strip() == recorded_answer(data).strip()
    assert demo.get_by_role("button", name=data["strings"]["common.play"]).count() == 0
    demo.get_by_role("button", name=data["strings"]["common.step_back"]).click()
    assert count(demo) == total(demo) - 1
    log.assert_clean()


def number_in(text: str) -> float:
    match = re.search(r"-?[\d,]+(?:\.\d+)?", text)
    assert match, text
    return float(match.group(0).replace(",", ""))


HOSTILE = "</script><img src=x onerror=\"window.__pd_pwned=1\">"


def make_hostile(data: dict) -> dict:
    """Put markup in every text field the browser shows: prompt, tokens and their bytes, candidates, answer,
    the build's sentences under them, labels."""
    for token in data["prompt"]["tokens"][:3]:
        token["text"] = token["bytes"] = HOSTILE
    data["prompt"].update(text=HOSTILE, summary=HOSTILE)
    data["answer"].update(text=HOSTILE * len(data["steps"]), notes={"stopped": HOSTILE, "caveat": HOSTILE})
    for step in data["steps"]:
        if "token" in step:  # the decode demo's cache view
            step["token"]["text"] = HOSTILE
        step["piece"] = {"text": HOSTILE}
        for candidate in step.get("top") or []:
            candidate["text"] = HOSTILE
    data["strings"] = {key: HOSTILE for key in data["strings"]}
    return data


@pytest.mark.parametrize("kind", PLAYER_KINDS)
def test_markup_in_demo_data_is_shown_as_text_and_runs_nothing(open_page, kind):
    import json

    page, log = open_page("en/" + PAGE_OF_KIND[kind], wait_until="domcontentloaded")

    def hostile_route(route):
        response = route.fetch()
        route.fulfill(response=response, body=json.dumps(make_hostile(response.json())))

    page.route("**/assets/traces/*.json", hostile_route)
    page.reload()
    demo = page.locator(f".pd-demo[data-pd-demo={kind}]").first
    engage(page, demo)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    page.wait_for_function("el => el.dataset.pdCount === el.querySelector('input[type=range]').max",
                           arg=demo.element_handle(), timeout=TIMEOUT_MS)
    next_frames(page)
    stage = demo.locator("[data-pd-stage]")
    assert stage.locator("img, script").count() == 0
    assert HOSTILE in stage.text_content()
    assert page.evaluate("window.__pd_pwned") is None
    assert not log.page_errors
