"""Replacing claims by the phrasing that holds: in a chapter, a demo block's note, a strings file.

Every claim of a text is checked before anything is reported, so one build names all the failing claims
of a page. Each mistake goes through `hooks.authoring.mistake` (which stops the build, or, under
`mkdocs serve`, returns the HTML shown at the claim's place).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hooks.authoring import AuthoringMistake, mistake
from hooks.claims.check import ClaimCheck, check_claim
from hooks.claims.syntax import find_claims
from hooks.demos.blocks import DemoBlock
from hooks.demos.figure_names import figure_error
from hooks.demos.figure_refs import find_refs
from hooks.demos.figure_resolver import FigureResolver
from hooks.demos.strings import Strings
from hooks.language.vocabulary import Vocabulary


@dataclass
class Mistakes:
    """Reports each mistake through `mistake()` and keeps those that stop the build, to raise together.

    `as_text` is for labels and notes, which reach the page escaped: where `mistake()` returns an error
    box (under `mkdocs serve`), they get the same message as plain text instead of HTML.
    """

    as_text: bool = False
    found: list[AuthoringMistake] = field(default_factory=list)

    def report(self, path: str, line: int | None, message: str) -> str:
        try:
            shown = mistake(path, line, message)
        except AuthoringMistake as error:
            self.found.append(error)
            return ""
        return f"⚠ {AuthoringMistake(path, line, message)}" if self.as_text else shown

    def raise_found(self) -> None:
        if len(self.found) == 1:
            raise self.found[0]
        if self.found:
            first = self.found[0]
            listed = "\n".join(str(error) for error in self.found)
            raise AuthoringMistake(first.path, first.line, f"{len(self.found)} claims need attention:\n{listed}")


def checks_in(text: str, resolver: FigureResolver, first_line: int = 1,
              vocabulary: Vocabulary | None = None) -> list[ClaimCheck]:
    """Every claim of `text`, checked (against `vocabulary`, by default docs/vocabulary.yml); lines counted
    from `first_line` (the line where `text` starts)."""
    checks = [check_claim(claim, resolver, vocabulary) for claim in find_claims(text)]
    return [_shift(check, first_line - 1) for check in checks]


def _shift(check: ClaimCheck, lines: int) -> ClaimCheck:
    check.claim.line += lines
    for phrasing in check.phrasings:
        phrasing.line += lines
    return check


def resolve_text(text: str, path: str, resolver: FigureResolver, mistakes: Mistakes, first_line: int = 1,
                 check_refs: bool = False) -> str:
    """`text` with each claim replaced by its phrasing that holds (figure references left for the figure
    pass); every mistake reported to `mistakes`. With `check_refs`, the `{{ }}` references of the phrasings
    not printed are checked too, so a wrong name cannot wait for the day its phrasing is chosen."""
    pieces, position = [], 0
    for check in checks_in(text, resolver, first_line):
        pieces.append(text[position:check.claim.start])
        replacement = ""
        for line, message in check.errors:
            replacement += mistakes.report(path, line, message)
        chosen = check.chosen
        if chosen is not None:
            replacement = chosen.text
        elif not check.errors:
            replacement = mistakes.report(path, check.claim.line, check.failure())
        if check_refs:
            for phrasing in check.phrasings:
                if phrasing is not chosen:
                    replacement += _check_refs(phrasing.text, phrasing.line, path, resolver, mistakes)
        pieces.append(replacement)
        position = max(position, check.claim.end)
    pieces.append(text[position:])
    return "".join(pieces)


def printed_text(text: str, resolver: FigureResolver) -> str:
    """`text` with each claim replaced by the phrasing that holds, or by nothing where none does (no error
    is raised: the page's own build reports it)."""
    pieces, position = [], 0
    for check in checks_in(text, resolver):
        chosen = check.chosen
        pieces += [text[position:check.claim.start], chosen.text if chosen else ""]
        position = max(position, check.claim.end)
    return "".join([*pieces, text[position:]])


def _check_refs(text: str, line: int, path: str, resolver: FigureResolver, mistakes: Mistakes) -> str:
    shown = ""
    for ref in find_refs(text):
        try:
            resolver.figure(ref["body"])
        except LookupError as error:
            shown += mistakes.report(path, line + text.count("\n", 0, ref.start()), figure_error(error))
    return shown


def resolve_page(markdown: str, source: str, path: str, resolver: FigureResolver) -> str:
    """A chapter's Markdown with its claims resolved; lines are reported as in `source`, the raw file
    (front matter and other hooks' additions do not shift them)."""
    if "{%" not in markdown:
        return markdown
    offset = _line_offset(markdown, source)
    mistakes = Mistakes()
    resolved = resolve_text(markdown, path, resolver, mistakes, first_line=1 + offset, check_refs=True)
    mistakes.raise_found()
    return resolved


def _line_offset(markdown: str, source: str) -> int:
    """How many lines the raw file has above the Markdown's first claim (0 when they cannot be matched)."""
    in_markdown, in_source = find_claims(markdown), find_claims(source)
    if not in_markdown or len(in_markdown) != len(in_source):
        return 0
    return in_source[0].line - in_markdown[0].line


def resolve_note(block: DemoBlock, resolver: FigureResolver) -> None:
    """Resolve the claims of a demo block's `note:` in place (reported at the note's line)."""
    note = block.options.get("note")
    if not isinstance(note, str) or "{%" not in note:
        return
    mistakes = Mistakes(as_text=True)
    line = block.option_lines.get("note", block.line)
    block.options["note"] = resolve_text(note, block.src_path, resolver, mistakes, first_line=line)
    mistakes.raise_found()


def value_lines(path: Path) -> dict[str, int]:
    """The 1-based line of each value of a strings file, by flattened key (`common.play`)."""
    lines: dict[str, int] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(value, f"{prefix}{key.value}.")
        else:
            block_scalar = getattr(node, "style", None) in ("|", ">")  # its text starts on the next line
            lines[prefix[:-1]] = node.start_mark.line + 1 + (1 if block_scalar else 0)

    root = yaml.compose(path.read_text(encoding="utf-8"))
    if root is not None:
        walk(root, "")
    return lines


def resolve_strings(strings: Strings, project_dir: Path, resolver: FigureResolver) -> Strings:
    """The same `Strings` with the claims of every value resolved (reported at the value's YAML line;
    `strings.path` is relative to `project_dir`)."""
    if not any("{%" in value for value in strings.values.values()):
        return strings
    lines, mistakes = value_lines(project_dir / strings.path), Mistakes(as_text=True)
    values = {key: resolve_text(value, strings.path, resolver, mistakes, first_line=lines.get(key, 1))
              if "{%" in value else value for key, value in strings.values.items()}
    mistakes.raise_found()
    return Strings(strings.lang, strings.path, values)
