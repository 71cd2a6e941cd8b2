"""MkDocs hook: each page's kicker and reading time under its title, the landing page's reading time (the
reading path's total) and chapter cards, and translation-parity warnings (hooks/parity.py). Patches to
Material's HTML are hooks/markup_hook.py's.

Labels come from each language's `extra` block in mkdocs.yml (`chapter_label`, `going_further`,
`reading_time`, `card_minutes`), so a translator never edits Python. The printed text of the pages (each
claim's phrasing that holds) comes from the demo hook through `config[PRINTED_MARKDOWN]`: a hook never
imports another hook, which MkDocs loads as a module of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from hooks.chapters import (
    PRINTED_MARKDOWN,
    Chapter,
    Printed,
    article_reading_minutes,
    chapter_number,
    chapters_of,
    is_going_further,
    page_reading_minutes,
)
from hooks.language.vocabulary import load_vocabulary
from hooks.parity import parity_problems

log = get_plugin_logger(__name__)

_H1_LINE = re.compile(r"^#\s+.+$", re.M)
_READING_TIME = "<!-- pd:reading-time -->"
_CHAPTER_LIST = "<!-- pd:chapter-list -->"
_VOCABULARY = "<!-- pd:vocabulary -->"  # the qualitative words and their thresholds, from docs/vocabulary.yml
_NO_READING_TIME = ("404",)


def on_pre_build(*, config: MkDocsConfig) -> None:
    """Tell translators what is missing: each parity problem is a warning (an error under --strict)."""
    i18n = config.plugins.get("i18n")
    reference = getattr(i18n, "default_language", None) or config.theme.get("language")
    if config.theme.get("language") != reference:  # static-i18n builds once per language; report once
        return
    for problem in parity_problems(Path(config.docs_dir), reference=reference):
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


def _printed(config: MkDocsConfig) -> Printed | None:
    printed = config.get(PRINTED_MARKDOWN)
    return printed if callable(printed) else None


def _kicker(config: MkDocsConfig, slug: str, page: Page) -> str | None:
    number = chapter_number(slug)
    if number is not None:
        return _label(config, "chapter_label", page).format(number=number)
    return _label(config, "going_further", page) if is_going_further(slug) else None


def _card(config: MkDocsConfig, chapter: Chapter, page: Page) -> str:
    kicker = _kicker(config, chapter.slug, page)
    minutes = _label(config, "card_minutes", page).format(minutes=chapter.minutes)
    return f'[{kicker} · {chapter.title}]({chapter.slug}.md) <span class="pd-chapter-list__time">{minutes}</span>'


def _chapter_cards(config: MkDocsConfig, chapters: list[Chapter], page: Page) -> str:
    path = [f"{chapter.number}. {_card(config, chapter, page)}" for chapter in chapters if not chapter.going_further]
    further = [f"- {_card(config, chapter, page)}" for chapter in chapters if chapter.going_further]
    # md_in_html keeps the lists Markdown while giving them one class for styling; each list in its own
    # block, or Markdown would continue the numbered list with the unnumbered one.
    lists = "\n".join(f'<div class="pd-chapter-list__{name}" markdown>\n\n' + "\n".join(items) + "\n\n</div>"
                      for name, items in (("path", path), ("further", further)) if items)
    return f'<div class="pd-chapter-list" markdown>\n{lists}\n</div>'


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    slug = Path(page.file.src_uri).stem
    printed = _printed(config)
    if slug == "index":
        if _READING_TIME not in markdown and _CHAPTER_LIST not in markdown:
            return markdown
        language_dir = Path(config.docs_dir) / Path(page.file.src_uri).parts[0]
        total = _label(config, "reading_time", page).format(minutes=article_reading_minutes(language_dir, printed))
        markdown = markdown.replace(_READING_TIME, f"{total}\n{{ .pd-reading-time }}")
        return markdown.replace(_CHAPTER_LIST, _chapter_cards(config, chapters_of(language_dir, printed), page))
    if _VOCABULARY in markdown:
        markdown = markdown.replace(_VOCABULARY, load_vocabulary().word_list(str(config.theme.get("language"))))
    if slug in _NO_READING_TIME or not _H1_LINE.search(markdown):
        return markdown
    shown = printed(Path(page.file.abs_src_path)) if printed else None
    reading_time = _label(config, "reading_time", page).format(
        minutes=page_reading_minutes(shown if shown is not None else markdown))
    kicker = _kicker(config, slug, page)
    before = f"{kicker}\n{{ .pd-kicker }}\n\n" if kicker else ""
    return _H1_LINE.sub(lambda m: f"{before}{m.group(0)}\n\n{reading_time}\n{{ .pd-reading-time }}\n",
                        markdown, count=1)
