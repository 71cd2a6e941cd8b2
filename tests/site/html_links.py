"""Small HTML readers for the built pages: links, sources and attributes, without a browser."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path


@dataclass
class Link:
    tag: str
    attr: str
    url: str
    classes: tuple[str, ...]
    in_article: bool
    attrs: dict[str, str] = field(default_factory=dict)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[Link] = []
        self.html_lang: str | None = None
        self._article_depth = 0  # >0 while inside <article> (the prose)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "html":
            self.html_lang = values.get("lang")
        if tag == "article":
            self._article_depth += 1
        classes = tuple(values.get("class", "").split())
        for attr in ("href", "src"):
            if attr in values:
                self.links.append(Link(tag, attr, values[attr], classes, self._article_depth > 0, values))

    def handle_endtag(self, tag: str) -> None:
        if tag == "article" and self._article_depth:
            self._article_depth -= 1


def read_page(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    return collector
