"""An author's mistake, reported at its place: the file, the line and what is allowed.

Every hook that finds a mistake in a chapter, a demo block, a figure reference, a checked claim or a
strings file reports it through `mistake()`. Today that always stops the build with a PluginError
(MkDocs prints "Aborted" and the message, no traceback). Under `mkdocs serve` without `--strict`, the
same message is meant to appear in the page, at the place of the mistake, while the rest of the page
still renders: `show_in_page` turns that on and `mistake()` then returns the HTML to put there.
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError


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


def mistake(path: str, line: int | None, message: str) -> str:
    """Stop the build with `path:line: message`, or, when mistakes are shown in the page, return the HTML
    that takes the mistake's place."""
    error = AuthoringMistake(path, line, message)
    if not show_in_page:
        raise error
    return error_box(error)


def error_box(error: AuthoringMistake) -> str:
    """The HTML of a visible error box for `error` (plain for now; the serve work styles it)."""
    from markupsafe import escape

    return f'<div class="pd-authoring-error" role="alert"><pre>{escape(str(error))}</pre></div>'
