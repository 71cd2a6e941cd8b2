"""An author's mistake, reported at its place: the file, the line and what is allowed.

Every hook that finds a mistake in a chapter, a demo block, a figure reference, a checked claim or a
strings file reports it through `mistake()` (or raises an `AuthoringMistake` that the code owning the
mistake's place hands to `report()`). A build stops with a PluginError: MkDocs prints "Aborted" and the
message, no traceback. Under `mkdocs serve` without `--strict` (set by hooks/authoring_hook.py), the
same message is printed and also shown in the page, at the mistake's place, in an error box rendered
from overrides/pd/authoring-error.html; the rest of the page still renders, and the next good save
(live reload) takes the box away.
"""

from __future__ import annotations

import logging
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from mkdocs.exceptions import PluginError

# Under the "mkdocs" logger, so MkDocs prints (and counts) it; without a plugin prefix, so the line is
# exactly what a stopped build prints.
log = logging.getLogger("mkdocs.plugins.authoring")

TEMPLATE = "authoring-error.html"


class AuthoringMistake(PluginError):
    """A mistake in the site's sources, with where it is."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.what = message


# Set for `mkdocs serve` without --strict; False for every build.
show_in_page = False
templates_dir = Path(__file__).resolve().parent.parent / "overrides" / "pd"


def configure(*, show: bool, templates: Path | None = None) -> None:
    """Show mistakes in the page (or stop the build on them), with the error box from `templates`."""
    global show_in_page, templates_dir
    show_in_page = show
    if templates is not None:
        templates_dir = templates


def mistake(path: str, line: int | None, message: str) -> str:
    """Stop the build with `path:line: message`, or, when mistakes are shown in the page, return the HTML
    that takes the mistake's place (valid inside a paragraph as well as on its own)."""
    return report(AuthoringMistake(path, line, message))


def report(error: AuthoringMistake) -> str:
    """Raise `error`, or, when mistakes are shown in the page, print it as the build would and return
    the HTML of its error box."""
    if not show_in_page:
        raise error
    log.error(str(error))
    return error_box(error)


def error_box(error: AuthoringMistake) -> str:
    """The error box for `error`: one line of HTML whose text is inert under Markdown."""
    environment = Environment(loader=FileSystemLoader(str(templates_dir)), autoescape=select_autoescape(default=True),
                              undefined=StrictUndefined)
    html = environment.get_template(TEMPLATE).render(message=inert(str(error)), path=error.path,
                                                     line=error.line or "")
    return "".join(line.strip() for line in html.splitlines())


def inert(text: str) -> Markup:
    """`text` escaped for HTML with every ASCII punctuation mark as a character reference, so that
    neither Markdown (`*`, `_`, backticks, `:emoji:`) nor the figure syntax (`{{ }}`) acts on it,
    wherever the box lands; the reader sees the text literally."""
    return Markup("".join(f"&#{ord(c)};" if c.isascii() and not c.isalnum() and c != " " else c for c in text))
