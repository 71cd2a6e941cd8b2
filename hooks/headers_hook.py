"""MkDocs hook: write `_headers` (CSP with per-page script hashes, and the other security headers).

Must be the last hook in mkdocs.yml so that every other hook has finished changing the pages.
mkdocs-static-i18n builds each extra language inside its own on_post_build, so this runs once per
language; each run rescans the whole site_dir and rewrites the file, so the last run covers every
page of every language (and 404.html, which no page event sees).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority, get_plugin_logger

from hooks.security.headers_file import write_headers_file

log = get_plugin_logger(__name__)


# After mkdocs-static-i18n's on_post_build (-100), which builds the other languages and rewrites
# the search index: the top-level call then sees the finished site.
@event_priority(-110)
def on_post_build(*, config: MkDocsConfig) -> None:
    found = write_headers_file(Path(config.site_dir))
    for page, code in found.items():
        for what in dict.fromkeys(code.unhashable):
            # A hash cannot allow these: under the CSP they would silently do nothing.
            log.warning(f"{page}: inline {what} is blocked by the Content-Security-Policy; "
                        "move it into a script file under docs/assets/")
