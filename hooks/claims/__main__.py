"""`python -m hooks.claims [--json] [--lang LANG] [--words]`: list every claim of the site and whether it holds.

Reads the same cached measurements as the build (`.cache/traces/`, `PD_MODEL`): after a build it takes
seconds. Exit status 1 when any claim does not hold (or is malformed), else 0. `--words` instead lists the
vocabulary's words that stand in the chapters outside any claim (definitions, analogies, or a sentence
about a measurement that should become a claim), for an author to review; it measures nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

from hooks import site
from hooks.claims.check import show_raw
from hooks.claims.sources import FoundClaim, find_all, languages
from hooks.claims.syntax import find_claims
from hooks.language.vocabulary import VOCABULARY_FILE, load_vocabulary
from hooks.markdown_blocks import iter_fences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks.claims", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print a JSON list of the claims")
    parser.add_argument("--lang", help="only this language (default: every language under docs/)")
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    parser.add_argument("--words", action="store_true",
                        help="list the vocabulary's words used outside claims in the chapters, and exit")
    args = parser.parse_args(argv)
    project_dir = args.project.resolve()
    docs_dir = project_dir / "docs"
    known = languages(docs_dir)
    if args.lang and args.lang not in known:
        print(f"{docs_dir}: no language {args.lang!r} — allowed: {', '.join(known) or 'none'}", file=sys.stderr)
        return 2
    if args.words:
        for line in words_outside_claims(project_dir, docs_dir, [args.lang] if args.lang else known):
            print(line)
        return 0
    try:
        found = list(find_all(project_dir, docs_dir, [args.lang] if args.lang else known,
                              site.default_measurements(project_dir)))
    except PluginError as error:
        print(error, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([claim.record() for claim in found], ensure_ascii=False, indent=1))
    else:
        print(table(found))
    return 0 if all(claim.check.holds for claim in found) else 1


def words_outside_claims(project_dir: Path, docs_dir: Path, langs: list[str]) -> list[str]:
    """`file:line: word (predicate)` for each vocabulary word in a chapter's prose outside claims and code."""
    vocabulary_file = docs_dir / VOCABULARY_FILE
    vocabulary = load_vocabulary(vocabulary_file) if vocabulary_file.exists() else load_vocabulary()
    lines = []
    for lang in langs:
        for chapter in sorted((docs_dir / lang).rglob("*.md")):
            source = chapter.read_text(encoding="utf-8")
            blanked = list(source)
            for claim in find_claims(source):  # a claim's words are checked by the claim itself
                blanked[claim.start:claim.end] = [c if c == "\n" else " " for c in source[claim.start:claim.end]]
            prose = "".join(blanked).split("\n")
            for fence in list(iter_fences(prose)):  # blanked, not removed: line numbers stay the file's
                prose[fence.start:fence.end + 1] = [""] * (fence.end + 1 - fence.start)
            shown = chapter.relative_to(project_dir).as_posix()
            for number, text in enumerate(prose, start=1):
                for use in vocabulary.uses_in(text, lang):
                    negated = "not " if use.negated else ""
                    lines.append(f"{shown}:{number}: “{use.word}” ({negated}{use.predicate})")
    return lines


def table(found: list[FoundClaim]) -> str:
    """One entry per claim: where, whether it holds and under which condition, its figures, its text."""
    lines = []
    for claim in found:
        record = claim.record()
        mark = "holds" if record["holds"] else "FAILS"
        lines.append(f"{mark}  {record['file']}:{record['line']}  [{record['lang']}]  {record['condition']}")
        for name, figure in record["figures"].items():
            shown = f"text “{figure['text']}”" if figure["value"] is None else f"{show_raw(figure['value'])} ({figure['text']})"
            lines.append(f"         {name} = {shown}")
        if record["vocabulary"]:
            words = dict.fromkeys(f"“{w['word']}” {'not ' if w['negated'] else ''}{w['predicate']}"
                                  + ("" if w["bound"] else " (NOT APPLIED)") for w in record["vocabulary"])
            lines.append(f"         words: {'; '.join(words)}")
        if record.get("error"):
            lines += [f"         {line}" for line in record["error"].split("\n")]
        elif record["text"] is not None:
            lines.append(f"         → {' '.join(record['text'].split())}")
    failing = sum(not claim.check.holds for claim in found)
    lines.append(f"{len(found)} claims: {len(found) - failing} hold, {failing} {'does' if failing == 1 else 'do'} not")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
