"""Demo markup from the Jinja templates in overrides/pd/ (autoescaped: text from Markdown stays text).

While the page is still Markdown a demo is only an inert slot; its markup goes into the rendered page.
So the text a demo shows (prompts, answers, notes, labels from the strings files) never meets a
Markdown-level pass — `{{ figure }}` references, claims, Markdown itself — whatever it contains.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape
from mkdocs.exceptions import PluginError

_SLOT = '<div class="pd-demo-slot" data-pd-slot="{index}"></div>'
_SLOT_PATTERN = re.compile(r'<div class="pd-demo-slot" data-pd-slot="(\d+)"></div>')


def nl2br(text: str | None) -> Markup:
    """Escape, then keep the line breaks of generated text as <br>."""
    return Markup("<br>").join(escape(line) for line in (text or "").split("\n"))


@lru_cache(maxsize=4)
def environment(templates_dir: str) -> Environment:
    env = Environment(loader=FileSystemLoader(templates_dir), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, auto_reload=True)
    env.filters["nl2br"] = nl2br
    return env


def render_demo(templates_dir: Path, kind: str, context: dict[str, Any]) -> str:
    """The placeholder markup of one demo, as one raw-HTML block (no blank lines, so Markdown keeps it whole)."""
    html = environment(str(templates_dir)).get_template(f"{kind}.html").render(**context)
    return "\n".join(line.strip() for line in html.splitlines() if line.strip())


def slot(index: int) -> str:
    """The stand-in for the page's demo number `index` while the page is Markdown (a raw-HTML block)."""
    return _SLOT.format(index=index)


def fill_slots(html: str, markups: list[str], where: str) -> str:
    """The rendered page with each slot replaced by its demo's markup; a lost or repeated slot is an error."""
    found = sorted(int(index) for index in _SLOT_PATTERN.findall(html))
    if found != list(range(len(markups))):
        raise PluginError(f"{where}: the page's {len(markups)} demo placeholder(s) did not come through Markdown "
                          f"intact (found {found}) — another hook or extension changed them")
    return _SLOT_PATTERN.sub(lambda match: markups[int(match.group(1))], html)
