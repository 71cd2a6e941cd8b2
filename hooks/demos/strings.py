"""Demo labels per language, from docs/<lang>/demo-strings.yml (the file translators edit).

Keys are `section.name` (sections: `common` and one per demo kind). Every language must have every key
the default language has; a missing key is a build error naming the language and the key.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from mkdocs.exceptions import PluginError

STRINGS_FILE = "demo-strings.yml"


@dataclass(frozen=True)
class Strings:
    """The flattened labels of one language."""

    lang: str
    path: str  # for error messages, relative to the project (docs/zh/demo-strings.yml)
    values: dict[str, str]

    def __getitem__(self, key: str) -> str:
        try:
            return self.values[key]
        except KeyError:
            raise PluginError(f"{self.path}: language '{self.lang}' has no demo string '{key}' — "
                              f"add it (see the comments in docs/zh/{STRINGS_FILE})") from None

    def format(self, key: str, **fields: Any) -> str:
        """The label with its {placeholders} filled; an unknown placeholder is a build error."""
        template = self[key]
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        unknown = names - fields.keys()
        if unknown:
            raise PluginError(f"{self.path}: demo string '{key}' ({self.lang}) uses unknown placeholder(s) "
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


def read_strings(path: Path, lang: str, shown_path: str) -> Strings:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginError(f"{shown_path}: missing demo strings file for language '{lang}' — "
                          f"copy docs/zh/{STRINGS_FILE} and translate it") from None
    except yaml.YAMLError as error:
        raise PluginError(f"{shown_path}: malformed YAML ({error})") from None
    if not isinstance(data, dict):
        raise PluginError(f"{shown_path}: expected a mapping of sections (common, conversation, …)")
    return Strings(lang, shown_path, flatten(data))


def load_strings(docs_dir: Path, lang: str, reference_lang: str, project_dir: Path) -> Strings:
    """One language's strings, checked to have every key of the reference (default) language."""

    def shown(language: str) -> str:
        path = docs_dir / language / STRINGS_FILE
        try:
            return path.relative_to(project_dir).as_posix()
        except ValueError:
            return path.as_posix()

    strings = read_strings(docs_dir / lang / STRINGS_FILE, lang, shown(lang))
    if reference_lang != lang:
        reference = read_strings(docs_dir / reference_lang / STRINGS_FILE, reference_lang, shown(reference_lang))
        missing = [key for key in reference.values if key not in strings.values]
        if missing:
            raise PluginError(f"{strings.path}: language '{lang}' is missing demo string(s) "
                              f"{', '.join(missing)} — copy them from {reference.path} and translate them")
    return strings
