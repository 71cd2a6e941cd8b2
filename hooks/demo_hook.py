"""MkDocs hook: `demo` blocks become interactive demos, `{{ figure }}` references become measured values.

Thin wiring only: the work, and what survives rebuilds and the second language's build, is hooks/site.py's.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from hooks.chapters import PRINTED_MARKDOWN
from hooks.site import DemoSite, default_measurements

_site: DemoSite  # one per language build, made by on_files (which MkDocs runs before any page event)


# After mkdocs-static-i18n (priority -100) has chosen this language's pages and asset folders.
@event_priority(-110)
def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    global _site
    project_dir = Path(config.config_file_path).resolve().parent
    templates = Path(config.theme.custom_dir or project_dir / "overrides") / "pd"
    _site = DemoSite(project_dir, default_measurements(project_dir), templates)
    for file in _site.prepare(files, config):
        files.append(file)
    # The pages as printed, for the reading times (hooks/chapter_hook.py, which runs first on each page).
    config[PRINTED_MARKDOWN] = _site.printed_markdown
    return files


def on_page_read_source(*, page: Page, config: MkDocsConfig) -> str | None:
    return _site.source_of(page.file)


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _site.page_markdown(markdown, page)


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _site.page_content(html, page)
