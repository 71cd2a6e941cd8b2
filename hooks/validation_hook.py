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

from hooks import authoring
from hooks.authoring import AuthoringMistake
from hooks.demos.render import environment
from hooks.demos.strings import load_strings, readable_strings
from hooks.validation_view import PARTS


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    wanted = [marker for marker in PARTS if marker in markdown]
    if not wanted:
        return markdown
    project_dir = Path(config.config_file_path).resolve().parent
    lang = str(config.theme.get("language") or "en")
    default_lang = getattr(config.plugins.get("i18n"), "default_language", None) or lang
    box = ""
    try:
        strings = load_strings(Path(config.docs_dir), lang, default_lang, project_dir)
    except AuthoringMistake as error:  # a build stops; under `mkdocs serve` the box goes above the tables
        box = authoring.report(error)
        strings = readable_strings(Path(config.docs_dir), lang, default_lang, project_dir)
        if strings is None:
            return markdown.replace(wanted[0], f"\n\n{box}\n\n", 1)
    template = environment(str(Path(config.theme.custom_dir or project_dir / "overrides") / "pd")).get_template(
        "validation.html")
    for marker in wanted:
        html = template.render(**PARTS[marker](strings, lang))
        # One raw-HTML block: no blank lines inside, blank lines around, so Markdown leaves it whole.
        block = "\n".join(line.strip() for line in html.splitlines() if line.strip())
        markdown = markdown.replace(marker, f"\n\n{box}\n\n{block}\n\n" if box else f"\n\n{block}\n\n")
        box = ""  # shown once, above the first table
    return markdown
