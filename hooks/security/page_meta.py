"""The policy inside each page, for hosts that send no headers (GitHub Pages and most static hosts).

A `<meta http-equiv="Content-Security-Policy">` governs only what the parser meets after it, so it goes
right after `<meta charset>`, before the first script and stylesheet. `Referrer-Policy` travels as
`<meta name="referrer">`. The other headers (X-Frame-Options, nosniff, …) have no meta equivalent.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from hooks.security.policy import REFERRER_POLICY, content_security_policy

_CHARSET = re.compile(r"<meta\s+charset=[^>]*>", re.I)
_HEAD = re.compile(r"<head(?:\s[^>]*)?>", re.I)
# What an earlier pass wrote: i18n re-runs the post-build step per language, so a page may be seen twice.
_PLACED = re.compile(r'\n?[ \t]*<meta http-equiv="Content-Security-Policy" content="[^"]*">'
                     r'\n?[ \t]*<meta name="referrer" content="[^"]*">')


def with_policy(page: str, script_hashes: Sequence[str]) -> str | None:
    """The page with its policy right after `<meta charset>` (or the `<head>` tag), replacing what an
    earlier pass placed; None when the page has neither, so nothing can come before its scripts."""
    page = _PLACED.sub("", page, count=1)
    anchor = _CHARSET.search(page) or _HEAD.search(page)
    if anchor is None:
        return None
    policy = html.escape(content_security_policy(script_hashes, in_meta=True), quote=False).replace('"', "&quot;")
    elements = (f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
                f'      <meta name="referrer" content="{REFERRER_POLICY}">')
    return f"{page[: anchor.end()]}\n      {elements}{page[anchor.end():]}"
