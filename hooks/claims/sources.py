"""Every claim of the site, found and checked the way the build does, without MkDocs running.

Texts come from each language's chapters (`docs/<lang>/*.md`), their demo blocks' `note:` and the
language's strings file; figures from the same cached measurements as the build
(`hooks.site.default_measurements`, `.cache/traces/`, `PD_MODEL`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.claims.check import ClaimCheck
from hooks.claims.resolve import checks_in, value_lines
from hooks.demos import blocks
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.measurements import recording_key
from hooks.demos.readouts import trace_readouts
from hooks.demos.strings import STRINGS_FILE, read_strings
from hooks.language.vocabulary import VOCABULARY_FILE, load_vocabulary


@dataclass(frozen=True)
class FoundClaim:
    """A checked claim and where it is."""

    file: str
    lang: str
    check: ClaimCheck

    def record(self) -> dict[str, Any]:
        """The claim as `python -m hooks.claims --json` prints it."""
        check = self.check
        chosen = check.chosen
        record = {
            "file": self.file, "line": check.claim.line, "lang": self.lang,
            "condition": chosen.condition if chosen else " | ".join(p.condition for p in check.phrasings),
            "alternatives": [{"condition": p.condition, "holds": p.holds, "figures": _figures(p.figures)}
                             for p in check.phrasings],
            "figures": _figures(check.figures), "holds": check.holds, "text": chosen.text if chosen else None,
            "vocabulary": _words(check),
        }
        if check.errors:
            record["error"] = "\n".join(message for _, message in check.errors)
        return record


def _words(check: ClaimCheck) -> list[dict[str, Any]]:
    """The vocabulary words of every phrasing: the word as written, its predicate, negated or not, the
    phrasing's condition, and whether that condition applies the predicate as the word is used."""
    return [{"word": use.word, "predicate": use.predicate, "negated": use.negated, "condition": p.condition,
             "bound": all(use is not unbound for unbound, _, _ in p.unbound)}
            for p in check.phrasings for use in p.words]


def _figures(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: {"value": figure.value, "text": figure.text} for name, figure in figures.items()}


class PageReadouts:
    """The readouts of a chapter's first demo of each kind, recorded (or read from the cache) on first use,
    as the build's page figures are."""

    def __init__(self, page_blocks: list[blocks.DemoBlock], measurements: Any) -> None:
        self.blocks = page_blocks
        self.measurements = measurements

    def get(self, kind: str) -> dict[str, Any] | None:
        block = next((b for b in self.blocks if b.kind == kind and b.kind in blocks.RECORDING_KINDS), None)
        if block is None or not isinstance(block.prompt, str):
            return None
        max_new, chat = block.options.get("max_new_tokens", blocks.DEFAULT_MAX_NEW_TOKENS[kind]), block.options.get("chat", True)
        readouts = trace_readouts(self.measurements.trace(block.prompt, max_new, chat))
        return {**readouts, "entry": recording_key(block.prompt, max_new, chat)}  # its timings' ledger entries


def languages(docs_dir: Path) -> list[str]:
    """The languages of the site: folders of docs/ that have a strings file."""
    return sorted(p.parent.name for p in docs_dir.glob(f"*/{STRINGS_FILE}"))


def find_all(project_dir: Path, docs_dir: Path, langs: list[str], measurements: Any) -> Iterator[FoundClaim]:
    """Every claim of these languages, checked: chapters, then their demo notes, then the strings file."""

    def shown(path: Path) -> str:
        try:
            return path.resolve().relative_to(project_dir.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    vocabulary_file = docs_dir / VOCABULARY_FILE
    vocabulary = load_vocabulary(vocabulary_file, shown(vocabulary_file)) if vocabulary_file.exists() else None
    for lang in langs:
        not_on_a_page = FigureResolver(lang, measurements, None)
        for chapter in sorted((docs_dir / lang).rglob("*.md")):
            path, source = shown(chapter), chapter.read_text(encoding="utf-8")
            page_blocks = blocks.parse_blocks(source, path)
            page = FigureResolver(lang, measurements, PageReadouts(page_blocks, measurements))
            for check in checks_in(source, page, vocabulary=vocabulary):
                yield FoundClaim(path, lang, check)
            for block in page_blocks:
                note = block.options.get("note")
                if isinstance(note, str):
                    for check in checks_in(note, not_on_a_page, block.option_lines.get("note", block.line), vocabulary):
                        yield FoundClaim(path, lang, check)
        strings_file = docs_dir / lang / STRINGS_FILE
        strings = read_strings(strings_file, lang, shown(strings_file))
        lines = value_lines(strings_file)
        for key, value in strings.values.items():
            for check in checks_in(value, not_on_a_page, lines.get(key, 1), vocabulary):
                yield FoundClaim(strings.path, lang, check)
