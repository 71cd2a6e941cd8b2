"""The text a reader reads on a built page, without a browser: the article's prose as printed, before
anything is opened (a closed <details> shows its <summary> only), without code blocks, the chapter kicker,
the reading time and the headings' permalinks."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
SKIPPED_TAGS = {"script", "style", "pre", "svg", "template", "noscript"}
SKIPPED_CLASSES = {"pd-kicker", "pd-reading-time", "headerlink", "pd-authoring-error"}
# The demos and the appendix's generated tables are consulted, not read: the reading time leaves them out.
CONSULTED_CLASSES = {"pd-demo", "pd-validation"}


class _Prose(HTMLParser):
    def __init__(self, *, consulted: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.skipped_classes = SKIPPED_CLASSES if consulted else SKIPPED_CLASSES | CONSULTED_CLASSES
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, skipped, a closed <details>)
        self.in_article = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "article":
            self.in_article += 1
        if tag in VOID:
            return
        parent_skipped, parent_closed = self.stack[-1][1:] if self.stack else (False, False)
        skipped = (parent_skipped or tag in SKIPPED_TAGS or bool(set(values.get("class", "").split()) & self.skipped_classes)
                   or (parent_closed and tag != "summary"))
        self.stack.append((tag, skipped, tag == "details" and "open" not in values))

    def handle_endtag(self, tag: str) -> None:
        if tag == "article" and self.in_article:
            self.in_article -= 1
        if any(open_tag == tag for open_tag, _, _ in self.stack):
            while self.stack and self.stack.pop()[0] != tag:
                pass
        if tag in ("p", "li", "h1", "h2", "h3", "h4", "td", "th", "summary", "div", "dt", "dd"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.in_article:
            return
        skipped, closed = self.stack[-1][1:] if self.stack else (False, False)
        if not skipped and not closed:
            self.parts.append(data)


def printed_prose(html: str, *, consulted: bool = False) -> str:
    """The article's text as a reader sees it before opening anything; the demos and generated tables only
    when `consulted`."""
    parser = _Prose(consulted=consulted)
    parser.feed(html)
    return "".join(parser.parts)
