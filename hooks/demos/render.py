"""Demo markup from the Jinja templates in overrides/pd/ (autoescaped: text from Markdown stays text)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape


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
