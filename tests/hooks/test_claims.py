"""Checked claims: `{% claim COND %}…{% elif COND %}…{% endclaim %}` prints the phrasing that holds for
the measured figures, and the build names every claim that no longer does (file, line, figures, values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from hooks import authoring, site
from hooks.claims import resolve_note, resolve_page, resolve_strings
from hooks.claims.__main__ import main as claims_cli
from hooks.demos.blocks import parse_blocks
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.strings import read_strings
from tests.languages import LANGUAGES

from .conftest import DOCS

# The test sweep (tests/hooks/conftest.py): decode 20.128 ms/token at 128 tokens, 24.096 at 4096, so TPS
# falls by 16.5% (shown as 16%); prefill uses 50% of the compute peak, decode 80% of the bandwidth.
PATH = "docs/en/x.md"


def figures(measurements, lang: str = "en", page=None) -> FigureResolver:
    return FigureResolver(lang, measurements, page or {})


def resolve(text: str, measurements, source: str | None = None) -> str:
    return resolve_page(text, text if source is None else source, PATH, figures(measurements))


def test_a_claim_that_holds_prints_its_text_and_its_markup_is_gone(measurements):
    text = "Decode {% claim sweep.tps_drop_pct < 20% %}slows by less than a fifth{% endclaim %} with context."
    assert resolve(text, measurements) == "Decode slows by less than a fifth with context."


def test_figure_references_inside_the_printed_phrasing_are_left_for_the_figure_pass(measurements):
    text = "{% claim sweep.tps_drop_pct > 10% %}TPS falls by {{ sweep.tps_drop_pct }}{% endclaim %}"
    assert resolve(text, measurements) == "TPS falls by {{ sweep.tps_drop_pct }}"


def test_the_first_phrasing_that_holds_is_printed(measurements):
    text = ("TPS {% claim sweep.tps_drop_pct < 5% %}holds steady{% elif sweep.tps_drop_pct < 30% %}falls "
            "by a sixth{% elif sweep.tps_drop_pct < 50% %}falls a lot{% endclaim %}.")
    assert resolve(text, measurements) == "TPS falls by a sixth."


def test_a_claim_may_span_lines_of_one_paragraph(measurements):
    text = "Prefill {% claim roofline.prefill.compute_util > 40%\n %}keeps the\ncompute units busy{% endclaim %}."
    assert resolve(text, measurements) == "Prefill keeps the\ncompute units busy."


def test_a_claim_that_does_not_hold_names_file_line_condition_and_every_figure_with_its_value(measurements):
    text = ("# Title\n\nPrefill {% claim full_load(roofline.prefill.compute_util) and sweep.tps_drop_pct < 5% %}runs"
            " the compute units at full load{% elif roofline.prefill.compute_util > 80% %}uses over four fifths"
            "{% endclaim %}.")
    with pytest.raises(PluginError) as caught:
        resolve(text, measurements)
    message = str(caught.value)
    assert message.startswith(f"{PATH}:3: claim “runs the compute units at full load”: none of its conditions holds")
    assert "`full_load(roofline.prefill.compute_util) and sweep.tps_drop_pct < 5%` is false" in message
    assert "roofline.prefill.compute_util = 0.5 (50%)" in message
    assert "sweep.tps_drop_pct = 0.165 (16%)" in message
    assert "`roofline.prefill.compute_util > 80%` is false" in message
    # the figures are measured: the author learns where they are kept, should the machine have been busy
    assert "measured figures are kept in .cache/traces/" in message


def test_every_failing_claim_of_a_page_is_named_in_one_build(measurements):
    text = ("{% claim sweep.tps_drop_pct > 90% %}collapses{% endclaim %}\n\n"
            "{% claim sweep.tps_drop_pct < 20% %}fine{% endclaim %}\n\n"
            "{% claim nope.figure > 1 %}typo{% endclaim %}\n")
    with pytest.raises(PluginError) as caught:
        resolve(text, measurements)
    message = str(caught.value)
    assert "2 claims need attention" in message
    assert f"{PATH}:1: claim “collapses”" in message and f"{PATH}:5: claim “typo”" in message


def test_the_reported_line_is_the_line_in_the_file_not_in_the_page_markdown(measurements):
    source = "---\ntitle: X\n---\n\n# T\n\n{% claim sweep.tps_drop_pct > 90% %}collapses{% endclaim %}\n"
    markdown = "Chapter 01\n{ .pd-kicker }\n\n# T\n\n{% claim sweep.tps_drop_pct > 90% %}collapses{% endclaim %}\n"
    with pytest.raises(PluginError, match=rf"^{PATH}:7: claim “collapses”"):
        resolve(markdown, measurements, source=source)


def test_a_condition_naming_a_figure_that_does_not_exist_lists_the_valid_names(measurements):
    with pytest.raises(PluginError) as caught:
        resolve("x\n{% claim sweep.tps_fall > 1% %}falls{% endclaim %}", measurements)
    message = str(caught.value)
    assert message.startswith(f"{PATH}:2: claim “falls”: condition `sweep.tps_fall > 1%` names sweep.tps_fall: "
                              "unknown figure name 'sweep.tps_fall'")
    assert "sweep.tps_drop_pct" in message and "machine.prefill_crossover_tokens" in message


def test_a_text_figure_in_a_condition_is_a_clear_error(measurements):
    with pytest.raises(PluginError, match=r"uses machine.cpu, which is text \(“Test CPU”\), not a number"):
        resolve("{% claim machine.cpu > 1 %}fast{% endclaim %}", measurements)


@pytest.mark.parametrize(("condition", "what"), [
    ("__import__('os')", "calls `__import__`: the only functions are abs, min and max"),
    ("(0.5).real > 0", "attribute access (.real)"),
    ("sweep.tps_drop_pct.real > 0", "attribute access (.real after sweep.tps_drop_pct)"),
    ("open('x') > 0", "calls `open`"),
    ("'fast' == 'fast'", "uses strings"),
    ("cores > 1", "names 'cores', which is not a figure"),
    ("sweep.tps@128 ** 2 > 1", "uses the operator **"),
    ("[1][0] > 0", "uses a subscript"),
    ("sweep.tps@128>1", "an operator after an @ARG needs a space before it"),
    ("sweep.tps@128", "is a number, not true or false"),
    ("1 / (sweep.tps@128 - sweep.tps@128) > 0", "divides by zero"),
])
def test_anything_outside_the_condition_language_is_rejected_with_what_is_allowed(measurements, condition, what):
    with pytest.raises(PluginError) as caught:
        resolve(f"{{% claim {condition} %}}text{{% endclaim %}}", measurements)
    message = str(caught.value)
    assert message.startswith(f"{PATH}:1: claim “text”: condition `{condition}`")
    assert what in message
    assert "allowed:" in message


def test_the_condition_language_has_numbers_percentages_arithmetic_chains_logic_and_functions(measurements):
    condition = ("0.1 < sweep.tps_drop_pct < 0.2 and abs(-sweep.tps_change_pct) == sweep.tps_drop_pct "
                 "and not min(sweep.tps@128, sweep.tps@4096) * 2 / 1e3 > 1 or max(1, 2) - 1 > 5")
    assert resolve(f"{{% claim {condition} %}}yes{{% endclaim %}}", measurements) == "yes"


def test_a_figure_with_a_projection_argument_can_be_compared(measurements):
    text = ("{% claim proj.tps@llama-3.1-8b/h100-sxm/fp16/128 > proj.tps@llama-3.1-8b/h100-sxm/fp16/4096 %}"
            "lower with a longer context{% endclaim %}")
    assert resolve(text, measurements) == "lower with a longer context"


@pytest.mark.parametrize(("text", "problem"), [
    ("{% claim sweep.tps@128 > 1 %}never closed", "never closed with {% endclaim %}"),
    ("{% claim sweep.tps@128 > 1 %}open\n\nnext paragraph{% endclaim %}", "not closed before its paragraph ends"),
    ("{% claim sweep.tps@128 > 1 %}a {% claim sweep.tps@128 > 2 %}b{% endclaim %}{% endclaim %}", "do not nest"),
    ("{% claim sweep.tps@128 > 1 %}a{% else %}b{% endclaim %}", "no unconditional {% else %}"),
    ("{% claim %}a{% endclaim %}", "has no condition"),
    ("stray {% endclaim %}", "{% endclaim %} without an open {% claim %}"),
])
def test_malformed_claim_markup_is_an_error_that_shows_the_syntax(measurements, text, problem):
    with pytest.raises(PluginError) as caught:
        resolve(text, measurements)
    assert problem in str(caught.value) and "{% claim CONDITION %}text{% endclaim %}" in str(caught.value)


def test_claims_inside_inline_code_and_fences_are_left_as_they_are(measurements):
    text = ("Write `{% claim sweep.tps_drop_pct > 90% %}x{% endclaim %}` like this:\n\n"
            "```markdown\n{% claim nope > 1 %}shown as is{% endclaim %}\n```\n")
    assert resolve(text, measurements) == text


def test_a_wrong_figure_name_in_a_phrasing_not_printed_is_still_an_error(measurements):
    text = "{% claim sweep.tps_drop_pct < 20% %}fine{% elif sweep.tps_drop_pct >= 20% %}{{ sweep.tps_dorp }}{% endclaim %}"
    with pytest.raises(PluginError, match=r"x.md:1: unknown figure name 'sweep.tps_dorp'"):
        resolve(text, measurements)


def test_page_figures_can_be_compared_on_a_page_with_their_demo(measurements):
    page = {"conversation": {"ttft_ms": 261.4}}
    text = "{% claim conversation.ttft_ms < 1000 %}under a second{% endclaim %}"
    assert resolve_page(text, text, PATH, figures(measurements, page=page)) == "under a second"


def test_under_serve_a_failing_claim_shows_its_message_in_place_and_the_page_still_renders(measurements, monkeypatch):
    monkeypatch.setattr(authoring, "show_in_page", True)
    html = resolve("Before {% claim sweep.tps_drop_pct > 90% %}collapses{% endclaim %} after.", measurements)
    assert html.startswith("Before <span class=\"pd-authoring-error\"") and html.endswith("</span> after.")
    assert "none of its conditions holds" in html


def test_a_claim_in_a_demo_note_is_resolved_and_reported_at_the_note_line(measurements):
    source = ("# T\n\n```demo\nkind: timeline\nnote: '{% claim sweep.tps_drop_pct < 20% %}TPS holds up"
              "{% endclaim %}'\n```\n\n```demo\nkind: timeline\nnote: '{% claim sweep.tps_drop_pct > 90% %}"
              "TPS collapses{% endclaim %}'\n```\n")
    good, bad = parse_blocks(source, PATH)
    resolve_note(good, figures(measurements, page=None))
    assert good.note == "TPS holds up"
    with pytest.raises(PluginError, match=rf"^{PATH}:10: claim “TPS collapses”: none of its conditions holds"):
        resolve_note(bad, FigureResolver("en", measurements, None))


def test_under_serve_a_failing_claim_in_a_note_shows_its_message_as_text(measurements, monkeypatch):
    monkeypatch.setattr(authoring, "show_in_page", True)
    (block,) = parse_blocks("```demo\nkind: timeline\nnote: '{% claim sweep.tps_drop_pct > 90% %}x{% endclaim %}'\n```",
                            PATH)
    resolve_note(block, FigureResolver("en", measurements, None))
    assert block.note.startswith(f"⚠ {PATH}:3: claim “x”: none of its conditions holds") and "<" not in block.note


def test_a_page_figure_in_a_note_says_where_page_figures_can_be_used(measurements):
    (block,) = parse_blocks("```demo\nkind: timeline\nnote: '{% claim conversation.tps > 1 %}x{% endclaim %}'\n```",
                            PATH)
    with pytest.raises(PluginError, match="can be used in a chapter's prose, not in a demo block's note"):
        resolve_note(block, FigureResolver("en", measurements, None))


def write_strings(docs: Path, lang: str, text: str) -> Path:
    path = docs / lang / "demo-strings.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


STRINGS = """# labels
common:
  play: Play
  tps_note: "{% claim sweep.tps_drop_pct < 20% %}TPS holds up{% elif sweep.tps_drop_pct >= 20% %}TPS falls{% endclaim %}"
timeline:
  caption: |
    Decode {% claim sweep.tps_drop_pct > 90% %}collapses{% endclaim %}.
"""


def test_a_strings_file_claim_is_resolved_and_a_failing_one_is_reported_at_its_yaml_line(measurements, tmp_path):
    write_strings(tmp_path / "docs", "en", STRINGS)
    strings = read_strings(tmp_path / "docs/en/demo-strings.yml", "en", "docs/en/demo-strings.yml")
    with pytest.raises(PluginError) as caught:
        resolve_strings(strings, tmp_path, FigureResolver("en", measurements, None))
    assert str(caught.value).startswith("docs/en/demo-strings.yml:7: claim “collapses”: none of its conditions")
    fixed = STRINGS.replace("> 90%", "< 90%")
    write_strings(tmp_path / "docs", "en", fixed)
    strings = read_strings(tmp_path / "docs/en/demo-strings.yml", "en", "docs/en/demo-strings.yml")
    resolved = resolve_strings(strings, tmp_path, FigureResolver("en", measurements, None))
    assert resolved["common.tps_note"] == "TPS holds up" and resolved["timeline.caption"] == "Decode collapses.\n"
    assert resolved["common.play"] == "Play"


# -- python -m hooks.claims ---------------------------------------------------------------------------

CHAPTER = {"zh": "# 标题\n\nTPS {% claim sweep.tps_drop_pct < 20% %}下降不到五分之一{% elif sweep.tps_drop_pct >= 20% %}"
                 "下降很多{% endclaim %}。\n",
           "en": "# Title\n\nTPS {% claim sweep.tps_drop_pct < 20% %}falls by under a fifth{% elif sweep.tps_drop_pct >= 20% %}"
                 "falls a lot{% endclaim %}.\n"}


@pytest.fixture
def project(tmp_path: Path, measurements, monkeypatch) -> Path:
    """A project whose two languages make the same claim, checked with the test measurements."""
    for lang, chapter in CHAPTER.items():
        write_strings(tmp_path / "docs", lang, "common:\n  play: x\n")
        (tmp_path / "docs" / lang / "ttft-tps.md").write_text(chapter, encoding="utf-8")
    monkeypatch.setattr(site, "default_measurements", lambda project_dir: measurements)
    return tmp_path


def test_the_cli_checks_the_same_claim_in_both_languages(project, capsys):
    assert claims_cli(["--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "holds  docs/en/ttft-tps.md:3  [en]  sweep.tps_drop_pct < 20%" in out
    assert "holds  docs/zh/ttft-tps.md:3  [zh]  sweep.tps_drop_pct < 20%" in out
    assert "sweep.tps_drop_pct = 0.165 (16%)" in out and "2 claims: 2 hold, 0 do not" in out


def test_the_cli_json_lists_each_claim_with_its_alternatives_and_figures(project, capsys):
    assert claims_cli(["--json", "--lang", "en", "--project", str(project)]) == 0
    (claim,) = json.loads(capsys.readouterr().out)
    assert claim["file"] == "docs/en/ttft-tps.md" and claim["line"] == 3 and claim["lang"] == "en"
    assert claim["condition"] == "sweep.tps_drop_pct < 20%" and claim["holds"] is True
    assert claim["text"] == "falls by under a fifth"
    assert [a["condition"] for a in claim["alternatives"]] == ["sweep.tps_drop_pct < 20%", "sweep.tps_drop_pct >= 20%"]
    assert [a["holds"] for a in claim["alternatives"]] == [True, False]
    figure = claim["figures"]["sweep.tps_drop_pct"]
    assert figure["text"] == "16%" and figure["value"] == pytest.approx(1 - 20.128 / 24.096)
    assert claim["alternatives"][1]["figures"] == claim["figures"]


def test_the_cli_exits_1_and_joins_the_conditions_when_a_claim_does_not_hold(project, capsys):
    page = project / "docs/zh/ttft-tps.md"
    page.write_text(page.read_text(encoding="utf-8").replace("< 20%", "< 5%").replace(">= 20%", "> 50%"),
                    encoding="utf-8")
    assert claims_cli(["--json", "--project", str(project)]) == 1
    claims = {c["lang"]: c for c in json.loads(capsys.readouterr().out)}
    assert claims["en"]["holds"] is True and claims["zh"]["holds"] is False
    assert claims["zh"]["condition"] == "sweep.tps_drop_pct < 5% | sweep.tps_drop_pct > 50%"
    assert claims["zh"]["text"] is None


def test_the_cli_reports_claims_of_notes_and_strings_files_at_their_lines(project, capsys):
    write_strings(project / "docs", "en", STRINGS)
    (project / "docs/en/ttft-tps.md").write_text(
        "# T\n\n```demo\nkind: timeline\nnote: '{% claim sweep.tps_drop_pct < 20% %}holds{% endclaim %}'\n```\n",
        encoding="utf-8")
    assert claims_cli(["--json", "--lang", "en", "--project", str(project)]) == 1
    found = [(c["file"], c["line"], c["holds"]) for c in json.loads(capsys.readouterr().out)]
    assert found == [("docs/en/ttft-tps.md", 5, True), ("docs/en/demo-strings.yml", 4, True),
                     ("docs/en/demo-strings.yml", 7, False)]


def test_the_cli_rejects_an_unknown_language(project, capsys):
    assert claims_cli(["--lang", "fr", "--project", str(project)]) == 2
    assert "no language 'fr' — allowed: en, zh" in capsys.readouterr().err


def test_every_new_name_is_documented_for_authors_in_both_strings_files():
    from hooks.demos.figure_names import GLOBAL_NAMES

    for lang in LANGUAGES:
        header = (DOCS / lang / "demo-strings.yml").read_text(encoding="utf-8").split("\ncommon:")[0]
        for name in GLOBAL_NAMES:
            group, _, rest = name.partition(".")
            assert rest.split(".")[-1] in header, f"{name} is not documented in docs/{lang}/demo-strings.yml"
