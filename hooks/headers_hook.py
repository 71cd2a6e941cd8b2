"""MkDocs hook: every page carries its Content-Security-Policy (a `<meta>` element with the page's
script hashes), and `_headers` carries the same policy plus what only a header can (frame-ancestors,
X-Frame-Options, nosniff…) for the hosts that read it.

Must be the last hook in mkdocs.yml so that every other hook has finished changing the pages.
mkdocs-static-i18n builds each extra language inside its own on_post_build, so this runs once per
language; each run rescans the whole site_dir (placing each page's policy again, idempotently) and
rewrites the file, so the last run covers every page of every language (and 404.html, which no page
event sees).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority, get_plugin_logger

from hooks.security.headers_file import scan_site, write_headers_file
from hooks.security.page_meta import with_policy

log = get_plugin_logger(__name__)

# `mkdocs serve` injects its live-reload script inline into every page it serves, with a new body each
# time: no hash can allow it, so the pages it serves carry no policy (it sends no headers either).
_pages_carry_policy = True


def on_startup(*, command: str, dirty: bool) -> None:
    global _pages_carry_policy
    _pages_carry_policy = command != "serve"


# After mkdocs-static-i18n's on_post_build (-100), which builds the other languages and rewrites
# the search index: the top-level call then sees the finished site.
@event_priority(-110)
def on_post_build(*, config: MkDocsConfig) -> None:
    site_dir = Path(config.site_dir)
    found = scan_site(site_dir)
    for page, code in found.items():
        for what in dict.fromkeys(code.unhashable):
            # A hash cannot allow these: under the CSP they would silently do nothing.
            log.warning(f"{page}: inline {what} is blocked by the Content-Security-Policy; "
                        "move it into a script file under docs/assets/")
        if not _pages_carry_policy:
            continue
        path = site_dir / page
        html = path.read_text(encoding="utf-8")
        secured = with_policy(html, code.hashes)
        if secured is None:
            log.warning(f"{path.name}: no <meta charset> or <head> to put the Content-Security-Policy after; "
                        "on a host without headers this page runs unprotected")
        elif secured != html:
            path.write_text(secured, encoding="utf-8")
    write_headers_file(site_dir, found)
