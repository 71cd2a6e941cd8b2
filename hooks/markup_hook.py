"""MkDocs hook: small fixes to the HTML that Markdown and Material render — row headers for comparison
tables, prose tables the keyboard can scroll, a named search dialog, heading anchors' tooltips in the page's language, no head hreflang links, Material's script loaded at the reader's first
gesture. Chapter numbers and reading time are hooks/chapter_hook.py's.
"""

from __future__ import annotations

import re

from markupsafe import escape
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

_HEAD_ALTERNATE = re.compile(r'\s*<link rel="alternate" href="[^"]*" hreflang="[^"]*">')
_SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog">'
_SEARCH_PLACEHOLDER = re.compile(r'<input type="text" class="md-search__input"[^>]*\splaceholder="([^"]*)"')


def drop_head_alternates(html: str) -> str:
    """Remove the head's hreflang links. Material's script fetches sitemap.xml beside each of them, and
    mkdocs-static-i18n makes them page URLs, so every page would 404 twice. The header's language
    switcher keeps its own links, and the i18n sitemap carries hreflang for crawlers."""
    head, separator, body = html.partition("</head>")
    return _HEAD_ALTERNATE.sub("", head) + separator + body


def name_search_dialog(html: str) -> str:
    """Give Material's search dialog an accessible name: its own placeholder text, in the page's language."""
    placeholder = _SEARCH_PLACEHOLDER.search(html)
    if _SEARCH_DIALOG not in html or placeholder is None:
        return html
    named = _SEARCH_DIALOG.replace('role="dialog"', f'role="dialog" aria-label="{placeholder.group(1)}"')
    return html.replace(_SEARCH_DIALOG, named, 1)


_THEME_SCRIPT = re.compile(r'<script src="([^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js)"></script>')


def load_theme_script_on_engagement(html: str) -> str:
    """Turn Material's script tag into a prefetch link that assets/pd/theme.js runs at the reader's first
    gesture. What it drives (search and its shortcuts, back-to-top, the table of contents following the
    reader) waits for a gesture anyway, but starting it with the page cost a phone two long tasks
    (~200 ms at Lighthouse's mobile CPU); prefetched, it is ready when wanted."""
    link = r'<link rel="prefetch" href="\1" as="script" data-pd-theme-script>'
    return _THEME_SCRIPT.sub(link, html, count=1)


_TABLE = re.compile(r"<table>(.*?)</table>", re.S)
_EMPTY_CORNER = re.compile(r"<thead>\s*<tr>\s*<th(?: [^>]*)?></th>", re.S)
_HEADER_CELL = re.compile(r"<th(?= |>)(?! scope=)")
_FIRST_BODY_CELL = re.compile(r"(<tr>\s*)<td((?: [^>]*)?)>(.*?)</td>", re.S)


def label_table_rows(html: str) -> str:
    """A Markdown table whose top-left header cell is empty compares things row by row: its first column
    names each row. Mark those cells as row headers (and the header row's cells as column headers), so
    a screen reader announces "Decode, limited by: memory bandwidth" rather than a bare cell."""

    def label(table: re.Match[str]) -> str:
        inner = table.group(1)
        if not _EMPTY_CORNER.search(inner):
            return table.group(0)
        head, separator, body = inner.partition("<tbody>")
        head = _HEADER_CELL.sub('<th scope="col"', head)
        body = _FIRST_BODY_CELL.sub(r'\1<th scope="row"\2>\3</th>', body)
        return f"<table>{head}{separator}{body}</table>"

    return _TABLE.sub(label, html)


def focusable_tables(html: str) -> str:
    """Let the keyboard reach every prose table. On a phone a table wider than the screen scrolls sideways in
    its own box (Material's wrapper once its script runs, the table itself before), and a box that scrolls must
    take focus for a reader without a pointer to scroll it (axe: scrollable-region-focusable). Focused, the table
    scrolls its wrapper with the arrow keys. The demos' and the appendix's tables carry the same tabindex."""
    return html.replace("<table>", '<table tabindex="0">')


_PERMALINK = re.compile(r'(<a class="headerlink" href="[^"]*" title=")Permanent link(")')


def translate_permalinks(html: str, title: str | None) -> str:
    """The heading anchors' tooltip in the page's language (Python-Markdown's toc writes "Permanent link"
    whatever the language): `extra.permalink_title` of the language in mkdocs.yml."""
    if not title:
        return html
    return _PERMALINK.sub(lambda m: f"{m.group(1)}{escape(title)}{m.group(2)}", html)


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    title = config.extra.get("permalink_title") if config is not None else None
    return translate_permalinks(focusable_tables(label_table_rows(html)), title)


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    return load_theme_script_on_engagement(name_search_dialog(drop_head_alternates(output)))
