"""MkDocs hook: under `mkdocs serve` without `--strict`, an author's mistake is shown in the page at its
place (and printed) instead of stopping the rebuild, so the browser never waits on a frozen build.

`mkdocs build`, `mkdocs gh-deploy` and `mkdocs serve --strict` stop on the first mistake, as before.
The work is in hooks/authoring.py; this only tells it which command runs.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority

from hooks import authoring

# on_startup runs once per process (serve keeps the process across rebuilds); on_config once per build.
_command = "build"


def on_startup(*, command: str, dirty: bool) -> None:
    global _command
    _command = command


# Before every other hook and plugin reads a page: the choice holds for the whole build.
@event_priority(100)
def on_config(config: MkDocsConfig) -> None:
    templates = Path(config.theme.custom_dir) / "pd" if config.theme.custom_dir else None
    authoring.configure(show=_command == "serve" and not config.strict, templates=templates)
