"""The site's languages as mkdocs.yml lists them (plugins → i18n → languages): tests never list them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's `!!python/...` tags (a slugify function) are not the languages: read as None."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def site_languages(config_file: Path = REPO / "mkdocs.yml") -> list[dict[str, Any]]:
    config = yaml.load(config_file.read_text(encoding="utf-8"), Loader=_Loader)
    for plugin in config.get("plugins", []):
        if isinstance(plugin, dict) and "i18n" in plugin:
            return list(plugin["i18n"]["languages"])
    raise LookupError(f"{config_file}: no i18n plugin")


_LANGUAGES = site_languages()
LANGUAGES: tuple[str, ...] = tuple(language["locale"] for language in _LANGUAGES)
DEFAULT_LANGUAGE: str = next(language["locale"] for language in _LANGUAGES if language.get("default"))
# Where each language's pages are: the default language at the root, the others under /<locale>/.
PREFIXES: dict[str, str] = {lang: "" if lang == DEFAULT_LANGUAGE else f"{lang}/" for lang in LANGUAGES}


def language_of(path: str) -> str:
    """The language of a page from its URL path relative to the site root ('' is the landing page)."""
    return next((lang for lang, prefix in PREFIXES.items() if prefix and path.startswith(prefix)), DEFAULT_LANGUAGE)
