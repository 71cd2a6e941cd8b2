"""Translation parity: every language has every page, the same demo blocks in the same order, the same
number of headings, the same collapsible blocks (`???`, `???+`), the same generated-content markers (<!-- pd:NAME -->) in the same order and the same
checked claims (the same conditions, in any order) as the reference language, every label of its strings
file, and its own words in every entry of the qualitative vocabulary (docs/vocabulary.yml).

Run on its own:  python -m hooks.parity [DOCS_DIR] [--reference zh]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from hooks.claims.syntax import find_claims
from hooks.demos.strings import STRINGS_FILE, YAML_LOADER, flatten, key_lines
from hooks.language.vocabulary import VOCABULARY_FILE
from hooks.markdown_blocks import collapsible_marks, demo_fences, without_fences

_HEADING = re.compile(r"^#{1,6}\s+\S", re.M)
_KIND = re.compile(r"^kind\s*:\s*(\S+)", re.M)
_MARKER = re.compile(r"<!--\s*pd:([a-z0-9-]+)\s*-->")


@dataclass(frozen=True)
class PageShape:
    demo_kinds: tuple[str, ...]
    headings: int
    markers: tuple[str, ...] = ()
    # Each claim's conditions, whitespace folded: the words are translated, what they are checked against is not.
    claims: tuple[tuple[str, ...], ...] = ()
    collapsible: tuple[str, ...] = ()  # the `???` blocks in order, closed or open (`???+`)


def page_shape(markdown: str) -> PageShape:
    """What must match across languages: the demo kinds in order, the heading count, the markers a hook
    replaces with generated content (the reading time, a generated table…), in order, and the claims."""
    lines = markdown.split("\n")
    kinds = [kind.group(1) if (kind := _KIND.search("\n".join(fence.body(lines)))) else "?"
             for fence in demo_fences(markdown)]
    prose = without_fences(markdown)
    claims = tuple(tuple(" ".join(a.condition.split()) for a in claim.alternatives) for claim in find_claims(markdown))
    return PageShape(tuple(kinds), len(_HEADING.findall(prose)), tuple(_MARKER.findall(prose)), claims,
                     tuple(collapsible_marks(markdown)))


def _claims_problems(page: Path, have: PageShape, ref_page: Path, want: PageShape) -> list[str]:
    """Claims the translation lacks or adds, by their conditions (a translation may reorder sentences)."""

    def shown(conditions: tuple[str, ...]) -> str:
        return " | ".join(f"`{c}`" for c in conditions) or "(no condition)"

    missing, extra = Counter(want.claims) - Counter(have.claims), Counter(have.claims) - Counter(want.claims)
    return ([f"{page}: lacks the claim checking {shown(c)} (as in {ref_page})" for c in missing.elements()]
            + [f"{page}: has a claim checking {shown(c)} that {ref_page} does not have" for c in extra.elements()])


def language_dirs(docs_dir: Path) -> list[Path]:
    return sorted(d for d in docs_dir.iterdir() if d.is_dir() and any(d.glob("*.md")))


def _label_keys(strings_file: Path) -> set[str]:
    data = yaml.load(strings_file.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    return set(flatten(data)) if isinstance(data, dict) else set()


def _strings_problems(reference: Path, other: Path) -> list[str]:
    ref_file, other_file = reference / STRINGS_FILE, other / STRINGS_FILE
    if not ref_file.exists():
        return []
    if not other_file.exists():
        return [f"{other_file}: missing (the demo labels of {ref_file} need a translation)"]
    missing = _label_keys(ref_file) - _label_keys(other_file)
    return [f"{other_file}: missing key '{key}' (present in {ref_file})" for key in sorted(missing)]


def _vocabulary_problems(docs_dir: Path, reference: str, lang: str) -> list[str]:
    """Entries of the vocabulary (negations, the noise's meaning, each word) with the reference language's
    words and none of `lang`'s: its claims' qualitative words would go unchecked."""
    path = docs_dir / VOCABULARY_FILE
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    data, lines = yaml.load(text, Loader=YAML_LOADER), key_lines(text)
    if not isinstance(data, dict):
        return []
    entries = {"negations": data.get("negations"), "noise.means": (data.get("noise") or {}).get("means")}
    for name, entry in (data.get("words") or {}).items():
        entries[f"words.{name}"] = entry
        entries[f"words.{name}.means"] = entry.get("means") if isinstance(entry, dict) else None
    return [f"{path}:{lines.get(key, 1)}: '{key}' has no '{lang}' entry (translate its '{reference}' one)"
            for key, entry in entries.items() if isinstance(entry, dict) and reference in entry and lang not in entry]


def parity_problems(docs_dir: Path, reference: str = "zh") -> list[str]:
    """Every difference a translator must fix, one line each, naming the file."""
    ref_dir = docs_dir / reference
    if not ref_dir.is_dir():
        return [f"{ref_dir}: the reference language folder does not exist"]
    problems = []
    for other in language_dirs(docs_dir):
        if other == ref_dir:
            continue
        for ref_page in sorted(ref_dir.glob("*.md")):
            page = other / ref_page.name
            if not page.exists():
                problems.append(f"{page}: missing (translate {ref_page})")
                continue
            want = page_shape(ref_page.read_text(encoding="utf-8"))
            have = page_shape(page.read_text(encoding="utf-8"))
            if have.demo_kinds != want.demo_kinds:
                problems.append(
                    f"{page}: demo blocks {list(have.demo_kinds)} differ from {ref_page} {list(want.demo_kinds)}"
                )
            if have.headings != want.headings:
                problems.append(f"{page}: {have.headings} headings, but {ref_page} has {want.headings}")
            if have.markers != want.markers:
                problems.append(
                    f"{page}: generated-content markers {list(have.markers)} differ from {ref_page} {list(want.markers)}"
                )
            if have.collapsible != want.collapsible:
                problems.append(f"{page}: collapsible blocks {list(have.collapsible)} differ from {ref_page} "
                                f"{list(want.collapsible)} (??? closed, ???+ open)")
            problems += _claims_problems(page, have, ref_page, want)
        for extra_page in sorted(set(p.name for p in other.glob("*.md")) - set(p.name for p in ref_dir.glob("*.md"))):
            problems.append(f"{other / extra_page}: no such page in {ref_dir} (the reference language)")
        problems += _strings_problems(ref_dir, other)
        problems += _vocabulary_problems(docs_dir, reference, other.name)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks.parity", description=__doc__.splitlines()[0])
    parser.add_argument("docs_dir", nargs="?", default="docs", type=Path)
    parser.add_argument("--reference", default="zh", help="the language every other one is compared with")
    args = parser.parse_args(argv)
    problems = parity_problems(args.docs_dir, args.reference)
    for problem in problems:
        print(problem)
    languages = ", ".join(d.name for d in language_dirs(args.docs_dir))
    print(f"parity: {len(problems)} problem(s) across {languages}" if problems else f"parity: ok ({languages})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
