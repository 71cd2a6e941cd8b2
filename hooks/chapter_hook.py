"""MkDocs hook: chapter numbers above each chapter title, the landing page's reading time and chapter list,
and translation-parity warnings (hooks/parity.py). Patches to Material's HTML are hooks/markup_hook.py's.

Labels come from each language's `extra` block in mkdocs.yml (`chapter_label`, `reading_time`), so a
translator never edits Python.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from hooks import demo_hook
from hooks.chapters import article_reading_minutes, chapter_number, chapters_of
from hooks.parity import parity_problems

log = get_plugin_logger(__name__)

_H1_LINE = re.compile(r"^#\s+.+$", re.M)
_READING_TIME = "<!-- pd:reading-time -->"
_CHAPTER_LIST = "<!-- pd:chapter-list -->"


def on_pre_build(*, config: MkDocsConfig) -> None:
    """Tell translators what is missing: each parity problem is a warning (an error under --strict)."""
    if config.theme.get("language") != "zh":  # static-i18n builds once per language; report once
        return
    for problem in parity_problems(Path(config.docs_dir), reference="zh"):
        log.warning("translation parity: %s", problem)


def _label(config: MkDocsConfig, key: str, page: Page) -> str:
    label = config.extra.get(key)
    if not isinstance(label, str):
        language = config.theme.get("language", "?")
        raise PluginError(
            f"mkdocs.yml: language '{language}' has no extra.{key} (needed by {page.file.src_uri}); "
            f"add it under plugins → i18n → languages → extra"
        )
    return label


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    slug = Path(page.file.src_uri).stem
    number = chapter_number(slug)
    if number is not None:
        kicker = _label(config, "chapter_label", page).format(number=number)
        return _H1_LINE.sub(lambda m: f"{kicker}\n{{ .pd-kicker }}\n\n{m.group(0)}", markdown, count=1)
    if slug != "index" or (_READING_TIME not in markdown and _CHAPTER_LIST not in markdown):
        return markdown
    language_dir = Path(config.docs_dir) / Path(page.file.src_uri).parts[0]
    minutes = article_reading_minutes(language_dir, demo_hook.printed_markdown)
    reading_time = _label(config, "reading_time", page).format(minutes=minutes)
    chapter_label = _label(config, "chapter_label", page)
    chapter_list = "\n".join(
        f"{chapter.number}. [{chapter_label.format(number=chapter.number)} · {chapter.title}]({chapter.slug}.md)"
        for chapter in chapters_of(language_dir)
    )
    markdown = markdown.replace(_READING_TIME, f"{reading_time}\n{{ .pd-reading-time }}")
    # md_in_html keeps the list Markdown while giving the whole list one class for styling.
    return markdown.replace(_CHAPTER_LIST, f'<div class="pd-chapter-list" markdown>\n\n{chapter_list}\n\n</div>')

