"""One vocabulary for the article's qualitative words (docs/vocabulary.yml): each word is bound to one
predicate with one threshold, a claim that uses a word must apply its predicate to the figure it is
about (negated for a negated use), and `python -m hooks.claims --json` lists the words of each claim.

The test measurements (tests/hooks/conftest.py): decode 20.128 ms/token at 128 tokens and 24.096 at 4096
(TPS falls by 16.5%), prefill at 50% of the compute peak, decode at 80% of the bandwidth.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from mkdocs.exceptions import PluginError

from hooks import site
from hooks.claims import resolve_page
from hooks.claims.__main__ import main as claims_cli
from hooks.demos.figure_resolver import FigureResolver
from hooks.language.conditions import ConditionError, parse_condition
from hooks.language.vocabulary import load_vocabulary
from tests.languages import LANGUAGES

from .conftest import DOCS

PATH = "docs/en/x.md"
# A share (utilisation, percentage, fraction) compared with a bare decimal: 0.5 where people write 50%.
SHARE_AS_DECIMAL = re.compile(r"(util|_pct|share|fraction)\S*\s*[<>=!]=?\s*0\.\d|0\.\d+\s*[<>=!]=?\s*\S*(util|_pct|share|fraction)")
VOCABULARY = load_vocabulary()


def resolve(text: str, measurements, lang: str = "en") -> str:
    return resolve_page(text, text, PATH.replace("/en/", f"/{lang}/"), FigureResolver(lang, measurements, {}))


def test_every_entry_has_one_predicate_a_meaning_and_words_in_both_languages():
    raw = yaml.safe_load((DOCS / "vocabulary.yml").read_text(encoding="utf-8"))
    assert set(raw["negations"]) == set(LANGUAGES)
    for name, entry in raw["words"].items():
        assert entry["true_when"] and entry["args"], name
        assert set(entry["means"]) == set(LANGUAGES), f"{name}: its meaning is stated in every language"
        assert all(entry[lang] for lang in LANGUAGES), f"{name}: words in every language"


@pytest.mark.parametrize(("call", "holds"), [
    ("barely_changes(1.05)", True), ("barely_changes(0.92)", True), ("barely_changes(1.19)", False),
    ("slightly(1.19)", True), ("slightly(1.6)", False), ("close_to(6.7, 8)", False), ("close_to(7.5, 8)", True),
    ("far_below(14, 295)", True), ("far_below(200, 295)", False), ("far_above(27, 1)", True),
    ("faster(864, 905)", False), ("about_the_same(864, 905)", True), ("faster(700, 905)", True),
    # a mixed step of 3,921 ms against 3,541 ms apart: 1.107 times, neither faster by 10% of the longer nor
    # "within 10%" by the ratio, until about_the_same became exactly "neither is faster"
    ("about_the_same(3921, 3541)", True), ("faster(3541, 3921)", False), ("about_the_same(3921, 3500)", False),
    ("full_load(0.9)", True), ("full_load(0.85)", False), ("idle(0.05)", True), ("most_of(0.51)", True),
    ("memory_bound(0.5, 6)", True), ("compute_bound(0.5, 6)", False),
])
def test_each_predicate_applies_the_threshold_its_entry_states(call, holds):
    from hooks.language.conditions import evaluate

    assert evaluate(parse_condition(call, VOCABULARY.predicates), {}) is holds


def test_the_issue_example_a_119_slowdown_and_67_throughput_is_neither_barely_nor_nearly_eightfold():
    # "几乎没变 … 接近 8 倍" printed for a step 1.19× as long and 6.7× the throughput: now neither holds.
    condition = parse_condition("barely_changes(1.19) or close_to(6.7, 8)", VOCABULARY.predicates)
    from hooks.language.conditions import evaluate

    assert evaluate(condition, {}) is False


def test_a_vocabulary_word_whose_predicate_the_condition_does_not_apply_is_refused_with_file_line_and_word(measurements):
    text = ("# Title\n\nTPS {% claim sweep.tps_drop_pct < 20% %}barely changes{% endclaim %} as the context grows.")
    with pytest.raises(PluginError) as caught:
        resolve(text, measurements)
    message = str(caught.value)
    assert message.startswith(f"{PATH}:3: claim “barely changes”: “barely changes” is a vocabulary word")
    assert "barely_changes(ratio): abs(ratio - 1) <= 10%" in message
    assert "docs/vocabulary.yml" in message and "write barely_changes(ratio)" in message


def test_the_word_in_chinese_is_refused_at_its_own_line(measurements):
    text = "# 标题\n\nTPS {% claim sweep.tps_drop_pct < 20% %}随上下文\n几乎不变{% endclaim %}。"
    with pytest.raises(PluginError) as caught:
        resolve(text, measurements, "zh")
    assert str(caught.value).startswith("docs/zh/x.md:4: claim “随上下文 几乎不变”: “几乎不变” is a vocabulary word")


def test_applying_the_predicate_to_the_figure_makes_the_phrasing_allowed(measurements):
    text = ("TPS {% claim barely_changes(sweep.decode_growth) %}barely changes{% elif slightly(sweep.decode_growth) %}"
            "falls slightly, by {{ sweep.tps_drop_pct }}{% endclaim %}.")
    assert resolve(text, measurements) == "TPS falls slightly, by {{ sweep.tps_drop_pct }}."


def test_the_predicate_must_be_applied_to_a_figure_of_what_the_phrasing_shows(measurements):
    # The sentence shows the decode figures; applying the predicate to the roofline's is not binding it.
    text = ("Decode {% claim slightly(roofline.decode.bandwidth_util + 1) %}slows slightly: "
            "{{ sweep.decode_ms@4096 }}{% endclaim %}.")
    with pytest.raises(PluginError, match="to a figure of what it shows"):
        resolve(text, measurements)
    bound = text.replace("slightly(roofline.decode.bandwidth_util + 1)", "slightly(sweep.decode_growth)")
    assert resolve(bound, measurements) == "Decode slows slightly: {{ sweep.decode_ms@4096 }}."


def test_a_negated_use_needs_the_predicate_under_not(measurements):
    text = "Prefill is {% claim full_load(roofline.prefill.compute_util) %}not at full load{% endclaim %}."
    with pytest.raises(PluginError, match="“full load” stands negated, so its condition must apply not full_load"):
        resolve(text, measurements)
    fixed = text.replace("full_load(roofline.prefill.compute_util)", "not full_load(roofline.prefill.compute_util)")
    assert resolve(fixed, measurements) == "Prefill is not at full load."


def test_far_from_full_load_is_a_negated_use_bound_by_far_below(measurements):
    text = ("Prefill ran {% claim far_below(roofline.prefill.compute_util, 100%) %}far from full load "
            "({{ roofline.prefill.compute_util }}){% endclaim %}.")
    assert resolve(text, measurements) == "Prefill ran far from full load ({{ roofline.prefill.compute_util }})."
    zh = text.replace("far from full load", "远未满负荷")
    assert resolve(zh, measurements, "zh") == "Prefill ran 远未满负荷 ({{ roofline.prefill.compute_util }})."
    unbound = text.replace("far_below(roofline.prefill.compute_util, 100%)", "roofline.prefill.compute_util < 90%")
    with pytest.raises(PluginError, match="“far from” is a vocabulary word"):
        resolve(unbound, measurements)


def test_every_phrasing_is_checked_not_only_the_one_printed(measurements):
    text = ("{% claim sweep.tps_drop_pct < 20% %}TPS falls by {{ sweep.tps_drop_pct }}{% elif sweep.tps_drop_pct >= 20% %}"
            "TPS falls far more{% endclaim %}")
    with pytest.raises(PluginError, match="“far more” is a vocabulary word"):
        resolve(text, measurements)


def test_an_unknown_predicate_or_a_wrong_argument_count_is_named_with_what_is_allowed(measurements):
    with pytest.raises(ConditionError, match=r"calls `almost_free`: .* predicates \(about_the_same, barely_changes"):
        parse_condition("almost_free(sweep.tps@128)", VOCABULARY.predicates)
    with pytest.raises(ConditionError, match=r"calls far_below\(\) with 1 argument\(s\): it takes 2 \(a, b\)"):
        parse_condition("far_below(sweep.tps@128)", VOCABULARY.predicates)


def test_a_mistake_in_the_vocabulary_file_names_the_file_and_the_entry_line(tmp_path):
    path = tmp_path / "vocabulary.yml"
    path.write_text("negations:\n  en: [not]\nwords:\n  good:\n    args: [x]\n    true_when: x < 1\n    en: [fine]\n"
                    "  broken:\n    args: [x]\n    true_when: x ** 2 < 1\n    en: [bad]\n", encoding="utf-8")
    with pytest.raises(PluginError, match=r"vocabulary.yml:8: broken: true_when `x \*\* 2 < 1` uses the operator \*\*"):
        load_vocabulary(path, "vocabulary.yml")
    path.write_text("words:\n  a:\n    args: [x]\n    true_when: x < 1\n    en: [same]\n"
                    "  b:\n    args: [x]\n    true_when: x > 1\n    en: [Same]\n", encoding="utf-8")
    with pytest.raises(PluginError, match="the en word 'Same' is bound to both a and b: one word, one predicate"):
        load_vocabulary(path, "vocabulary.yml")


def test_the_cli_json_lists_the_vocabulary_of_each_claim(tmp_path, measurements, monkeypatch, capsys):
    for lang, text in (("en", "TPS {% claim barely_changes(sweep.decode_growth) %}barely changes{% elif "
                              "slightly(sweep.decode_growth) %}falls slightly{% endclaim %}."),
                       ("zh", "TPS {% claim barely_changes(sweep.decode_growth) %}几乎不变{% elif "
                              "slightly(sweep.decode_growth) %}略有下降{% endclaim %}。")):
        (tmp_path / "docs" / lang).mkdir(parents=True)
        (tmp_path / "docs" / lang / "demo-strings.yml").write_text("common:\n  play: x\n", encoding="utf-8")
        (tmp_path / "docs" / lang / "ttft-tps.md").write_text(f"# T\n\n{text}\n", encoding="utf-8")
    monkeypatch.setattr(site, "default_measurements", lambda project_dir: measurements)
    assert claims_cli(["--json", "--project", str(tmp_path)]) == 0
    claims = {c["lang"]: c for c in json.loads(capsys.readouterr().out)}
    assert claims["en"]["text"] == "falls slightly"
    assert [(w["word"], w["predicate"], w["negated"], w["bound"]) for w in claims["en"]["vocabulary"]] == [
        ("barely changes", "barely_changes", False, True), ("slightly", "slightly", False, True)]
    assert [w["word"] for w in claims["zh"]["vocabulary"]] == ["几乎不变", "略有"]


def wrapped_whole(condition: str) -> bool:
    """Whether one pair of parentheses encloses the whole condition ("(a or b)", not "(a or b) and (c or d)")."""
    if not (condition.startswith("(") and condition.endswith(")")):
        return False
    depth = 0
    for index, char in enumerate(condition):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return index == len(condition) - 1
    return False


def test_wrapped_whole_tells_a_wrapped_condition_from_two_groups():
    assert wrapped_whole("(a < 1 or b < 1)") and wrapped_whole("((a < 1) and b)")
    assert not wrapped_whole("(a < 1 or b < 1) and (c >= 1 or d >= 1)") and not wrapped_whole("a < 1")


def test_the_chapters_conditions_are_written_as_people_write_them():
    # Percentages as 37%, not 0.37; no parentheses around a whole condition.
    from hooks.claims.syntax import find_claims

    for path in sorted(DOCS.glob("*/*.md")):
        for claim in find_claims(path.read_text(encoding="utf-8")):
            for alternative in claim.alternatives:
                condition = alternative.condition
                assert not wrapped_whole(condition), f"{path.name}: {condition}"
                assert not SHARE_AS_DECIMAL.search(condition), f"{path.name}: write a share as a percentage: {condition}"


def test_every_word_the_chapters_use_in_a_claim_is_bound(measurements):
    """The real chapters pass the check (the figures do not matter here: only the binding is checked)."""
    from hooks.claims.check import check_claim
    from hooks.claims.syntax import find_claims

    resolver = FigureResolver("en", measurements, None)
    for path in sorted(DOCS.glob("*/*.md")):
        resolver.lang = path.parent.name
        for claim in find_claims(path.read_text(encoding="utf-8")):
            check = check_claim(claim, resolver)
            assert not [m for p in check.phrasings for _, _, m in p.unbound], f"{path}:{claim.line}"


def test_the_vocabulary_is_documented_where_authors_look():
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    assert "docs/vocabulary.yml" in readme
    for lang in LANGUAGES:
        assert "docs/vocabulary.yml" in (DOCS / lang / "demo-strings.yml").read_text(encoding="utf-8")
    assert "docs/vocabulary.yml" in (DOCS.parent / "hooks" / "claims" / "__init__.py").read_text(encoding="utf-8")


def test_the_cli_lists_vocabulary_words_left_outside_claims_with_their_lines(tmp_path, capsys):
    for lang, text in (("en", "# T\n\nDecode is memory-bound.\n\n```\nfull load\n```\n\n"
                              "{% claim sweep.tps@128 > 0 %}far from nothing{% endclaim %} `idle`\n"),
                       ("zh", "# T\n\n计算单元闲置。\n")):
        (tmp_path / "docs" / lang).mkdir(parents=True)
        (tmp_path / "docs" / lang / "demo-strings.yml").write_text("common:\n  play: x\n", encoding="utf-8")
        (tmp_path / "docs" / lang / "x.md").write_text(text, encoding="utf-8")
    assert claims_cli(["--words", "--project", str(tmp_path)]) == 0
    # not the word in the fence, in the claim (checked there) or in inline code
    assert capsys.readouterr().out.splitlines() == ["docs/en/x.md:3: “memory-bound” (memory_bound)",
                                                   "docs/zh/x.md:3: “闲置” (idle)"]


def test_a_negation_inside_another_word_or_before_a_quote_negates_nothing():
    uses = VOCABULARY.uses_in("“几乎不变”“远低于”", "zh")
    assert [(u.word, u.negated) for u in uses] == [("几乎不变", False), ("远低于", False)]
    assert [(u.word, u.negated) for u in VOCABULARY.uses_in("并非计算密集型", "zh")] == [("计算密集型", True)]


def test_the_noise_margin_is_one_number_for_the_words_and_the_prose(tmp_path):
    """docs/vocabulary.yml's `noise:` is what the words' conditions read and what {{ vocabulary.noise }} prints,
    so a sentence that states the margin cannot disagree with the claims judged by it."""
    assert VOCABULARY.noise == pytest.approx(0.10)
    figure = FigureResolver("zh", None, None).figure("vocabulary.noise")
    assert (figure.value, figure.text) == (VOCABULARY.noise, "10%") and "10%" in figure.title
    faster, same = VOCABULARY.predicates["faster"], VOCABULARY.predicates["about_the_same"]
    assert faster(8.9, 10) and not faster(9.1, 10) and same(9.1, 10)
    assert faster.summary().endswith("shorter_time < longer_time * (1 - 10%) (noise = 10%)") and "10%" in faster.means["en"] and "{noise}" not in faster.means["zh"]
    path = tmp_path / "vocabulary.yml"
    path.write_text("noise:\n  value: 20%\n  means: {en: 'runs vary by {noise}'}\nwords:\n  faster:\n"
                    "    args: [a, b]\n    true_when: a < b * (1 - noise)\n    means: {en: 'more than {noise} shorter'}\n"
                    "    en: [faster]\n", encoding="utf-8")
    wider = load_vocabulary(path, "vocabulary.yml")
    assert not wider.predicates["faster"](8.5, 10) and wider.predicates["faster"](7.9, 10)
    assert wider.noise_means == {"en": "runs vary by 20%"} and wider.predicates["faster"].means["en"] == "more than 20% shorter"


@pytest.mark.parametrize("noise", ["ten", "0%", "150%", "{means: {en: x}}"])
def test_a_noise_margin_that_is_not_a_percentage_names_the_file_and_its_line(tmp_path, noise):
    path = tmp_path / "vocabulary.yml"
    path.write_text(f"negations:\n  en: [not]\nnoise: {noise}\nwords:\n  a:\n    args: [x]\n    true_when: x < 1\n"
                    "    en: [fine]\n", encoding="utf-8")
    with pytest.raises(PluginError, match=r"vocabulary.yml:3: `noise:` needs value \(a percentage between 0% and 100%"):
        load_vocabulary(path, "vocabulary.yml")
