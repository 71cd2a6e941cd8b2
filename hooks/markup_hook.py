"""MkDocs hook: the patches to the HTML that Markdown and Material render (hooks/page_markup.py) — row
headers for comparison tables, a named search dialog, no head hreflang links, Material's script loaded at
the reader's first gesture. Chapter numbers and reading time are hooks/chapter_hook.py's.
"""

from __future__ import annotations

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from hooks import page_markup


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return page_markup.label_table_rows(html)


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    output = page_markup.drop_head_alternates(output)
    return page_markup.load_theme_script_on_engagement(page_markup.name_search_dialog(output))
