"""MkDocs hook: the appendix's generated tables (published measurements beside their roofline bounds, the
summary per device class, the prefill crossover and the Neural Engine's range) replace their markers.

Thin wiring: the contexts come from hooks/validation_view.py, the markup from overrides/pd/validation.html,
the labels from the language's demo-strings.yml (section `validation`).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from hooks.demos.render import environment
from hooks.demos.strings import load_strings
from hooks.validation_view import PARTS


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    wanted = [marker for marker in PARTS if marker in markdown]
    if not wanted:
        return markdown
    project_dir = Path(config.config_file_path).resolve().parent
    lang = str(config.theme.get("language") or "en")
    default_lang = getattr(config.plugins.get("i18n"), "default_language", None) or lang
    strings = load_strings(Path(config.docs_dir), lang, default_lang, project_dir)
    template = environment(str(Path(config.theme.custom_dir or project_dir / "overrides") / "pd")).get_template(
        "validation.html")
    for marker in wanted:
        html = template.render(**PARTS[marker](strings, lang))
        # One raw-HTML block: no blank lines inside, blank lines around, so Markdown leaves it whole.
        block = "\n".join(line.strip() for line in html.splitlines() if line.strip())
        markdown = markdown.replace(marker, f"\n\n{block}\n\n")
    return markdown
