"""Figures in the prose: `{{ NAME }}` or `{{ NAME@ARG }}`, replaced at build time by a measured or
projected value with its unit, inside <span class="pd-figure" title="where it comes from">.

The names are in figure_names.py, references are found by figure_refs.py, and each name's value comes
from figure_resolver.py; this module only places the figures in a page.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import escape

from hooks.authoring import mistake
from hooks.demos.figure_names import figure_error
from hooks.demos.figure_refs import find_refs, source_lines
from hooks.demos.figure_resolver import FigureResolver


def replace_figures(markdown: str, source: str, src_path: str, resolver: FigureResolver,
                    titles: dict[str, Callable[[], str]]) -> str:
    """Replace every reference in `markdown`; errors name the line of the reference in `source` (the raw
    file: front matter and other hooks' additions do not shift the reported line)."""
    refs = find_refs(markdown)
    if not refs:
        return markdown
    pieces, position = [], 0
    for ref, line in zip(refs, source_lines(markdown, source, refs), strict=True):
        pieces.append(markdown[position:ref.start()])
        try:
            figure = resolver.figure(ref["body"])
        except LookupError as error:
            pieces.append(mistake(src_path, line, figure_error(error)))
        else:
            title = figure.title or titles[figure.source]()
            pieces.append(f'<span class="pd-figure" title="{escape(title)}">{escape(figure.text)}</span>')
        position = ref.end()
    pieces.append(markdown[position:])
    return "".join(pieces)
