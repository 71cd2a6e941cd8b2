"""Demo labels per language, from docs/<lang>/demo-strings.yml (the file translators edit).

Keys are `section.name` (sections: `common` and one per demo kind). Every language must have every key
the default language has; a missing key is an AuthoringMistake naming the file, the line and the key.
Under `mkdocs serve`, `readable_strings` is what the demos show meanwhile.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from hooks.authoring import AuthoringMistake

STRINGS_FILE = "demo-strings.yml"
# libyaml's parser when PyYAML has it (its wheels do): the same data and line numbers, some 40 times faster than
# the pure-Python one on a strings file, which every build reads several times.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Strings:
    """The flattened labels of one language, and the line of each key in its file."""

    lang: str
    path: str  # for error messages, relative to the project (docs/zh/demo-strings.yml)
    values: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict, compare=False)

    def __getitem__(self, key: str) -> str:
        try:
            return self.values[key]
        except KeyError:
            section = self.lines.get(key.split(".", 1)[0])
            raise AuthoringMistake(self.path, section, f"language '{self.lang}' has no demo string '{key}' — "
                                   f"add it (see the comments in docs/zh/{STRINGS_FILE})") from None

    def format(self, key: str, **fields: Any) -> str:
        """The label with its {placeholders} filled; an unknown placeholder is a build error."""
        template = self[key]
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        unknown = names - fields.keys()
        if unknown:
            raise AuthoringMistake(self.path, self.lines.get(key),
                                   f"demo string '{key}' ({self.lang}) uses unknown placeholder(s) "
                                   f"{', '.join(sorted(unknown))} — allowed: {', '.join(sorted(fields)) or 'none'}")
        return template.format(**fields)

    def section(self, *sections: str) -> dict[str, str]:
        """`common` plus the named sections, keys kept with their section prefix (for the browser)."""
        return {key: value for key, value in self.values.items() if key.split(".", 1)[0] in sections}


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = "" if value is None else str(value)
    return flat


def key_lines(text: str) -> dict[str, int]:
    """The 1-based line of every key (sections and labels, flattened as `section.name`) in YAML text."""
    lines: dict[str, int] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        for key, value in node.value:
            name = f"{prefix}{key.value}"
            lines.setdefault(name, key.start_mark.line + 1)
            walk(value, f"{name}.")

    root = yaml.compose(text, Loader=YAML_LOADER)
    if root is not None:
        walk(root, "")
    return lines


@lru_cache(maxsize=16)
def _parsed(text: str) -> tuple[Any, dict[str, int]]:
    """A strings file's data and key lines. A build reads each file several times (every language checks the
    reference's keys, figures read the number words), `mkdocs serve` on every rebuild: parsed once per text."""
    data = yaml.load(text, Loader=YAML_LOADER)
    return data, key_lines(text) if isinstance(data, dict) else {}


def read_strings(path: Path, lang: str, shown_path: str) -> Strings:
    try:
        text = path.read_text(encoding="utf-8")
        data, lines = _parsed(text)
    except FileNotFoundError:
        raise AuthoringMistake(shown_path, None, f"missing demo strings file for language '{lang}' — "
                               f"copy docs/zh/{STRINGS_FILE} and translate it") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).split("\n")[0]
        raise AuthoringMistake(shown_path, mark.line + 1 if mark is not None else None,
                               f"malformed YAML ({problem}) — allowed: sections (common, conversation, …) "
                               "of `key: text` lines, text with a `:` or `#` in quotes") from None
    if not isinstance(data, dict):
        raise AuthoringMistake(shown_path, None, "expected a mapping of sections (common, conversation, …)")
    return Strings(lang, shown_path, flatten(data), dict(lines))


def shown_path(path: Path, project_dir: Path) -> str:
    """A path as error messages show it: relative to the project when inside it."""
    return path.relative_to(project_dir).as_posix() if path.is_relative_to(project_dir) else path.as_posix()


def language_strings(docs_dir: Path, language: str, project_dir: Path) -> Strings:
    path = docs_dir / language / STRINGS_FILE
    return read_strings(path, language, shown_path(path, project_dir))


def load_strings(docs_dir: Path, lang: str, reference_lang: str, project_dir: Path) -> Strings:
    """One language's strings, checked to have every key of the reference (default) language."""
    strings = language_strings(docs_dir, lang, project_dir)
    if reference_lang != lang:
        reference = language_strings(docs_dir, reference_lang, project_dir)
        missing = [key for key in reference.values if key not in strings.values]
        if missing:
            section = strings.lines.get(missing[0].split(".", 1)[0])
            raise AuthoringMistake(strings.path, section, f"language '{lang}' is missing demo string(s) "
                                   f"{', '.join(missing)} — copy them from {reference.path} and translate them")
    return strings


def readable_strings(docs_dir: Path, lang: str, reference_lang: str, project_dir: Path) -> Strings | None:
    """What the demos show while this language's strings have a mistake (under `mkdocs serve`): its
    readable labels, the reference language's where it has none; None when neither file can be read."""

    def readable(language: str) -> Strings | None:
        try:
            return language_strings(docs_dir, language, project_dir)
        except AuthoringMistake:
            return None

    own, reference = readable(lang), readable(reference_lang)
    shown = own or reference
    if shown is None:
        return None
    values = {**(reference.values if reference else {}), **(own.values if own else {})}
    return Strings(lang, shown.path, values, shown.lines)
