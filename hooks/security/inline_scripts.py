"""Find the inline scripts a browser would execute, and hash them the way CSP does."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# <script type> values a browser executes; anything else (application/json, text/template…) is data,
# and CSP does not apply to it.
_EXECUTABLE_TYPES = {
    "", "module", "text/javascript", "application/javascript", "application/ecmascript",
    "text/ecmascript", "application/x-javascript", "text/jscript", "text/livescript",
}
_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href"}


def csp_hash(source: str) -> str:
    """The CSP source expression for a script body: `'sha256-<base64>'` over its UTF-8 text."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


@dataclass
class InlineCode:
    """What a page runs inline: script bodies (hashable) and handlers/URLs a hash cannot allow."""

    scripts: list[str] = field(default_factory=list)
    unhashable: list[str] = field(default_factory=list)

    @property
    def hashes(self) -> list[str]:
        """CSP hashes of the inline scripts, without duplicates, in page order."""
        return list(dict.fromkeys(csp_hash(script) for script in self.scripts))


class _InlineCodeParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.found = InlineCode()
        self._script_parts: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        for name, value in attributes.items():
            if name.startswith("on"):
                self.found.unhashable.append(f"<{tag} {name}=…> event handler")
            elif name in _URL_ATTRIBUTES and re.match(r"\s*javascript:", value, re.I):
                self.found.unhashable.append(f"<{tag} {name}=\"javascript:…\"> URL")
        if tag == "script" and "src" not in attributes:
            kind = attributes.get("type", "").strip().lower()
            self._script_parts = [] if kind in _EXECUTABLE_TYPES else None

    def handle_data(self, data: str) -> None:
        if self._script_parts is not None:
            self._script_parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script_parts is not None:
            # The HTML tokenizer turns CRLF and lone CR into LF before the browser hashes a script.
            self.found.scripts.append("".join(self._script_parts).replace("\r\n", "\n").replace("\r", "\n"))
            self._script_parts = None


def find_inline_code(html: str) -> InlineCode:
    """Inline executable scripts (exact text, as the browser hashes it) and unhashable inline code."""
    parser = _InlineCodeParser()
    parser.feed(html)
    parser.close()
    return parser.found
