"""Fixes to the rendered HTML: row headers a screen reader can announce, prose tables the keyboard can scroll,
a named search dialog, no head
hreflang links, Material's script prefetched for the first gesture — applied to every page by markup_hook."""

from __future__ import annotations

import markdown

from hooks import markup_hook
from hooks.markup_hook import (
    drop_head_alternates,
    focusable_tables,
    label_table_rows,
    load_theme_script_on_engagement,
    name_search_dialog,
)

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


HEAD = ('<head><link rel="alternate" href="/en/decode/" hreflang="en">\n'
        '<link rel="alternate" href="/decode/" hreflang="zh"></head>')
SEARCH = ('<div class="md-search" data-md-component="search" role="dialog">'
          '<input type="text" class="md-search__input" name="query" aria-label="搜索" placeholder="搜索">')
SWITCHER = '<a href="/en/decode/" hreflang="en" class="md-select__link">English</a>'


def test_the_heads_hreflang_links_go_and_the_language_switchers_stay():
    page = f"{HEAD}<body>{SWITCHER}</body>"
    assert drop_head_alternates(page) == f"<head></head><body>{SWITCHER}</body>"


def test_every_prose_table_takes_keyboard_focus_so_a_reader_can_scroll_it_on_a_phone():
    html = focusable_tables(label_table_rows(render(PLAIN) + render(COMPARISON)))
    assert html.count('<table tabindex="0">') == 2 and "<table>" not in html
    demo = '<table class="pd-demo__table" tabindex="0"><tr><td>1</td></tr></table>'
    assert focusable_tables(demo) == demo  # the demos' and the appendix's own tables are left as they are


def test_the_search_dialog_is_named_by_its_placeholder_in_the_pages_language():
    named = name_search_dialog(SEARCH)
    assert '<div class="md-search" data-md-component="search" role="dialog" aria-label="搜索">' in named
    assert name_search_dialog("<body>no search</body>") == "<body>no search</body>"


def test_the_markup_hook_applies_every_patch_to_each_finished_page():
    page = (f"{HEAD}<body>{SEARCH}"
            '<script src="../assets/javascripts/bundle.a5f9d56c.min.js"></script></body>')
    patched = markup_hook.on_post_page(page, page=None, config=None)
    assert "hreflang" not in patched and 'aria-label="搜索">' in patched and "data-pd-theme-script" in patched
    table = markup_hook.on_page_content(render(COMPARISON), page=None, config=None, files=None)
    assert '<th scope="row">Runs</th>' in table and '<table tabindex="0">' in table
