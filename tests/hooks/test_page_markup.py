"""Fixes to the rendered HTML: comparison tables get row headers a screen reader can announce."""

from __future__ import annotations

import markdown

from hooks.page_markup import label_table_rows, load_theme_script_on_engagement

COMPARISON = """
|  | Prefill | Decode |
| --- | --- | --- |
| Limited by | compute | memory bandwidth |
| Runs | once per request | once per output token |
"""
PLAIN = """
| Model | Device |
| --- | --- |
| Llama-3.1-8B | H100 |
"""


def render(text: str) -> str:
    return markdown.markdown(text, extensions=["tables"])


def test_the_first_column_of_a_comparison_table_becomes_row_headers():
    html = label_table_rows(render(COMPARISON))
    assert '<th scope="row">Limited by</th>' in html
    assert '<th scope="row">Runs</th>' in html
    assert '<th scope="col">Prefill</th>' in html
    assert "<td>compute</td>" in html and "<td>memory bandwidth</td>" in html  # data cells stay cells


def test_a_table_with_a_named_first_column_is_left_alone():
    html = render(PLAIN)
    assert label_table_rows(html) == html


def test_aligned_columns_keep_their_style():
    html = label_table_rows(render(COMPARISON.replace("| --- | --- | --- |", "| :-- | :-: | --: |")))
    assert '<th scope="row" style="text-align: left;">Limited by</th>' in html
    assert '<td style="text-align: right;">memory bandwidth</td>' in html


def test_materials_script_becomes_a_prefetch_for_the_first_gesture_and_nothing_else_changes():
    page = ('<script src="../assets/javascripts/bundle.a5f9d56c.min.js"></script>\n'
            '<script src="../assets/pd/main.js" type="module"></script>')
    changed = load_theme_script_on_engagement(page)
    assert ('<link rel="prefetch" href="../assets/javascripts/bundle.a5f9d56c.min.js" as="script" '
            'data-pd-theme-script>') in changed
    assert "<script src=\"../assets/javascripts/bundle" not in changed
    assert '<script src="../assets/pd/main.js" type="module"></script>' in changed
    assert load_theme_script_on_engagement(changed) == changed
