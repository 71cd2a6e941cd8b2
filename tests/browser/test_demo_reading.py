"""What readers stumbled on, in a real browser and both languages: split characters are marked and show
their bytes on hover and keyboard focus; an answer token that is no whole character shows its bytes and
why; the chat template and system prompt are told apart from the reader's words; a cut-off answer says so;
projections carry readable names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.test_demos import LANGS, PAGE_OF_KIND, TIMEOUT_MS, demo_data, engage, open_demo
from tests.browser.tour import TOKEN_DEMOS, VIEWS

pytestmark = pytest.mark.browser

PARTIAL = ".pd-prompt .pd-token--partial"


def with_data(open_page, lang: str, kind: str, change, **options):
    """Open the chapter of `kind` with its demo JSON changed by `change(data)`; wait until it is live."""
    page, log = open_page(lang + PAGE_OF_KIND[kind], wait_until="domcontentloaded", **options)

    def route(request_route):
        response = request_route.fetch()
        data = response.json()
        change(data)
        request_route.fulfill(response=response, body=json.dumps(data))

    page.route("**/assets/traces/*.json", route)
    page.reload()
    demo = page.locator(f".pd-demo[data-pd-demo={kind}]").first
    engage(page, demo)
    page.wait_for_function("el => el.dataset.pdStatus === 'ready'", arg=demo.element_handle(), timeout=TIMEOUT_MS)
    return page, log, demo


def style(page, locator, prop: str, pseudo: str | None = None) -> str:
    return page.evaluate("([el, p, s]) => getComputedStyle(el, s).getPropertyValue(p)",
                         [locator.element_handle(), prop, pseudo])


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_split_characters_are_marked_not_by_colour_alone_with_a_legend(open_page, lang, scheme):
    page, log, demo = open_demo(open_page, lang, "prefill", query="", color_scheme=scheme)
    data = demo_data(page, demo)
    partial = [t for t in data["prompt"]["tokens"] if t["partial"]]
    assert partial, "the prefill prompt is Chinese: some tokens hold part of a character"
    chips = demo.locator(PARTIAL)
    assert chips.count() == len(partial)
    for state in ("idle", "cached"):  # before Play, and filled once prefill has read them
        if state == "cached":
            demo.locator("[data-pd-stage]").focus()
            page.keyboard.press("End")
        chip = chips.first
        assert style(page, chip, "border-top-style") == "dashed"
        assert style(page, chip, "content", "::before") == '""'  # the folded corner
        corner = style(page, chip, "border-right-color", "::before")
        assert corner not in ("rgba(0, 0, 0, 0)", "transparent"), corner
    legend = demo.locator("[data-pd-stage]").get_by_text(data["strings"]["prefill.partial_legend"])
    assert legend.is_visible()
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_each_token_shows_its_bytes_on_hover_and_on_keyboard_focus(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "prefill", query="")
    data = demo_data(page, demo)
    tokens = data["prompt"]["tokens"]
    bytes_label = data["strings"]["common.bytes_label"]
    items = demo.locator(".pd-token-item")
    assert items.count() == len(tokens)

    tip = items.nth(1).locator(".pd-token__bytes")
    assert tip.bounding_box()["width"] <= 1  # hidden until asked for
    items.nth(1).hover()
    assert tip.bounding_box()["width"] > 10 and tip.text_content() == f"{bytes_label} {tokens[1]['bytes']}"

    page.mouse.move(0, 0)
    items.first.focus()  # the list is one Tab stop; the arrows walk it without stepping the player
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("() => document.activeElement.querySelector('.pd-token__bytes').textContent")
    assert focused == f"{bytes_label} {tokens[2]['bytes']}"
    assert demo.locator(".pd-token-item:focus .pd-token__bytes").bounding_box()["width"] > 10
    assert demo.get_attribute("data-pd-count") == "0"
    assert [i.get_attribute("tabindex") for i in items.all()].count("0") == 1
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_an_answer_token_that_is_not_a_whole_character_shows_its_bytes_and_why(open_page, lang):
    def one_cut_character(data):
        # What the build ships for a first token whose bytes make no whole character.
        data["steps"][0]["piece"] = {"bytes": "E8 AF"}
        data["answer"].update(text="\ufffd", exact=True)

    page, log, demo = with_data(open_page, lang, "prefill", one_cut_character)
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    answer = demo.locator("[data-pd-answer]")
    assert "\ufffd" not in answer.text_content()
    assert answer.locator(".pd-answer__bytes").text_content() == "E8 AF"
    strings = demo_data(page, demo)["strings"]
    assert demo.locator("[data-pd-stage]").get_by_text(strings["common.incomplete_token"]).is_visible()
    assert demo.locator("[data-pd-stage]").get_by_text(strings["common.first_token_only"]).is_visible()
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", ["conversation", "decode"])
def test_template_and_system_prompt_tokens_are_told_apart_from_the_prompt(open_page, lang, kind):
    def with_system_prompt(data):
        for token in data["prompt"]["tokens"][1:4]:  # stand-ins for a default system prompt (the tiny model has none)
            token["role"] = "system"
        data["prompt"]["system_is_default"] = True

    page, log, demo = with_data(open_page, lang, kind, with_system_prompt)
    data = demo_data(page, demo)
    strings = data["strings"]
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    chips = demo.locator(".pd-prompt .pd-token, .pd-context .pd-token")
    roles = data["prompt"]["tokens"]
    assert demo.locator(".pd-token--user").count() >= sum(t["role"] == "user" for t in roles)
    template = demo.locator(".pd-prompt .pd-token--template, .pd-context .pd-token--template").first
    user = demo.locator(".pd-prompt .pd-token--user, .pd-context .pd-token--user").first
    assert style(page, template, "border-top-style") == "dotted" != style(page, user, "border-top-style")
    assert chips.count() >= len(roles)
    legend = demo.locator(".pd-legend")
    assert legend.get_attribute("aria-label") == strings["common.roles_legend"]
    assert legend.locator("li").all_text_contents()[-3:] != []
    shown = " ".join(legend.all_text_contents())
    for key in ("common.role_template", "common.role_system_default", "common.role_user"):
        assert strings[key] in shown
    assert demo.locator("[data-pd-stage]").get_by_text(data["prompt"]["summary"]).is_visible()  # "of the N tokens, M are the template…"
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
def test_a_cut_off_answer_says_so_once_it_is_out_and_the_small_model_caveat_is_there(open_page, lang):
    page, log, demo = open_demo(open_page, lang, "conversation", query="")
    data = demo_data(page, demo)
    stopped, caveat = data["answer"]["notes"]["stopped"], data["answer"]["notes"]["caveat"]
    assert stopped  # the tiny random model never says "end of turn": every answer is cut off at its limit
    assert str(len(data["steps"])) in stopped  # … which is the number of tokens shown
    assert demo.locator("[data-pd-stage]").get_by_text(caveat).is_visible()
    assert not demo.locator("[data-pd-stage]").get_by_text(stopped).is_visible()
    demo.locator("[data-pd-stage]").focus()
    page.keyboard.press("End")
    assert demo.locator("[data-pd-stage]").get_by_text(stopped).is_visible()
    log.assert_clean()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("kind", ["timeline", "roofline"])
def test_projection_choices_carry_readable_names_not_ids(open_page, lang, kind):
    page, log, demo = open_demo(open_page, lang, kind, query="")
    data = demo_data(page, demo)
    options = demo.locator("select option").all_text_contents()
    assert len(options) >= 2
    labels = {source["id"]: source["label"] for source in data["sources"]}
    assert options == [labels[value] for value in [o.get_attribute("value") for o in demo.locator("select option").all()]]
    for name in options[1:]:
        assert "/" not in name and " · " in name, name  # "Llama-3.1-8B · NVIDIA H100 SXM 80GB · FP16 (…)"
    log.assert_clean()


@pytest.mark.parametrize("view", ["320", "360", "desktop-light", "desktop-dark"])
@pytest.mark.parametrize("path", [lang + PAGE_OF_KIND[kind] for lang in LANGS for kind in TOKEN_DEMOS])
def test_each_token_view_at_its_end_fits_the_screen_and_is_screenshotted(tour, path, view):
    """The last frame (End on the stage, in prefill a split character's bytes shown) on the narrowest phones and
    the desktop, light and dark: the page does not scroll sideways; screenshots for a reviewer's eye."""
    record = tour(path, view)
    ends = {end["kind"]: end for end in record.token_ends.values()}
    assert set(ends) >= {kind for kind in TOKEN_DEMOS if path.endswith(PAGE_OF_KIND[kind])}, record.token_ends
    for kind, end in ends.items():
        assert end["overflow"] <= 0, f"{kind} at {VIEWS[view].width} px scrolls sideways by {end['overflow']} px"
        assert Path(end["screenshot"]).stat().st_size > 0
    assert record.problems() == {}
