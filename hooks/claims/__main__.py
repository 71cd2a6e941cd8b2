"""`python -m hooks.claims [--json] [--lang LANG]`: list every claim of the site and whether it holds.

Reads the same cached measurements as the build (`.cache/traces/`, `PD_MODEL`): after a build it takes
seconds. Exit status 1 when any claim does not hold (or is malformed), else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

from hooks.claims.check import show_raw
from hooks.claims.sources import FoundClaim, find_all, languages
from hooks.demos import site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks.claims", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print a JSON list of the claims")
    parser.add_argument("--lang", help="only this language (default: every language under docs/)")
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    args = parser.parse_args(argv)
    project_dir = args.project.resolve()
    docs_dir = project_dir / "docs"
    known = languages(docs_dir)
    if args.lang and args.lang not in known:
        print(f"{docs_dir}: no language {args.lang!r} — allowed: {', '.join(known) or 'none'}", file=sys.stderr)
        return 2
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
