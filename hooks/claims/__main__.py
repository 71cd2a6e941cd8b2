"""`python -m hooks.claims [--json] [--lang LANG] [--words | --figures]`: list every claim of the site and whether it holds.

Reads the same cached measurements as the build (`.cache/traces/`, `PD_MODEL`): after a build it takes
seconds. Exit status 1 when any claim does not hold (or is malformed), else 0. `--words` instead lists the
vocabulary's words that stand in the chapters outside any claim (definitions, analogies, or a sentence
about a measurement that should become a claim), for an author to review; it measures nothing. `--figures`
instead lists every figure name the pages use (in `{{ }}` and in claims' conditions), each language's value
and text, and the ledger entry it is (assets/ledger.json: median, spread, repeats); it fails, as the build
does, when one quantity would be printed with two values.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from hooks import site
from hooks.claims.check import show_raw
from hooks.claims.sources import FoundClaim, find_all, languages
from hooks.claims.syntax import find_claims
from hooks.demos.figure_names import GLOBAL_NAMES
from hooks.demos.figure_refs import find_refs, line_of
from hooks.demos.figure_resolver import FigureResolver
from hooks.language.vocabulary import VOCABULARY_FILE, load_vocabulary
from hooks.markdown_blocks import iter_fences

FIGURE_NAME = re.compile(r"\b[a-z_]+\.[a-z_][a-z0-9_.]*(?:@[^\s,()]+)?")  # a figure in a claim's condition


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks.claims", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print a JSON list of the claims")
    parser.add_argument("--lang", help="only this language (default: every language under docs/)")
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    parser.add_argument("--words", action="store_true",
                        help="list the vocabulary's words used outside claims in the chapters, and exit")
    parser.add_argument("--figures", action="store_true",
                        help="list every figure name the pages use, its value and its ledger entry, and exit")
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
    if args.figures:
        try:
            figures = figures_used(docs_dir, [args.lang] if args.lang else known, site.default_measurements(project_dir))
        except (PluginError, LookupError) as error:
            print(error, file=sys.stderr)
            return 1
        print(json.dumps(figures, ensure_ascii=False, indent=1) if args.json else figures_table(figures))
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


def figures_used(docs_dir: Path, langs: list[str], measurements: Any) -> list[dict[str, Any]]:
    """Every global figure name the pages use, per language: value, text, where it is used, and its ledger entry.
    Resolving them all holds every entry to one value (`Measurements.check_printed`); a LookupError says which."""
    entries = measurements.ledger().get("entries", {})
    used: dict[tuple[str, str], dict[str, Any]] = {}
    for lang in langs:
        resolver = FigureResolver(lang, measurements, None)
        for page in sorted((docs_dir / lang).rglob("*.md")):
            source = page.read_text(encoding="utf-8")
            bodies = [(match["body"].strip(), line_of(source, match.start())) for match in find_refs(source)]
            for claim in find_claims(source):
                for alternative in claim.alternatives:
                    bodies += [(name, claim.line) for name in FIGURE_NAME.findall(alternative.condition or "")]
            for body, line in bodies:
                name = body.split("@")[0]
                if name not in GLOBAL_NAMES:
                    continue  # a page's own demo figures come from its recording, not the ledger
                record = used.setdefault((lang, body), {"name": body, "lang": lang, "used_at": []})
                where = f"{page.relative_to(docs_dir.parent).as_posix()}:{line}"
                if where not in record["used_at"]:
                    record["used_at"].append(where)
                if "text" not in record:
                    figure = resolver.figure(body)
                    entry = entries.get(figure.entry) if figure.entry else None
                    record.update({"value": figure.value, "text": figure.text, "source": figure.source,
                                   "entry": figure.entry,
                                   **({"median": entry["median"], "spread": entry["spread"],
                                       "repeats": entry["repeats"], "unit": entry["unit"]} if entry else {})})
    return sorted(used.values(), key=lambda r: (r["name"], r["lang"]))


def figures_table(figures: list[dict[str, Any]]) -> str:
    lines = []
    for f in figures:
        entry = (f"  = {f['entry']} (median of {f['repeats']}, spread {f['spread']:.0%})" if f.get("repeats")
                 else f"  = {f['entry']}" if f.get("entry") else "")
        lines.append(f"{f['name']:44s} [{f['lang']}] {f['text']}{entry}  ({len(f['used_at'])} uses)")
    lines.append(f"{len(figures)} figure names in use; every ledger entry has one value")
    return "\n".join(lines)


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
