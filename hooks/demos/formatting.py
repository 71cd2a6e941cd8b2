"""Numbers as the prose and the fallbacks show them: value, unit, thousands separators.

The words around a number that differ between languages (what follows a ratio: 23.9 倍, 23.9×; "above 64")
come from the `numbers` section of docs/<lang>/demo-strings.yml, so translators never edit Python.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hooks.demos.strings import STRINGS_FILE, read_strings

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
FALLBACK = {"numbers.times": "×", "numbers.above": "> {n}", "numbers.never": "never",
            "numbers.flop_per_byte": "FLOP/byte"}  # a language without a strings file (tests)
# Units a language writes its own way (FLOP/字节), by their key in the `numbers` section.
UNIT_WORDS = {"FLOP/byte": "numbers.flop_per_byte"}


def number_word(key: str, lang: str, **fields: str) -> str:
    """`numbers.<key>` of this language's strings file, its {placeholders} filled."""
    path = DOCS_DIR / lang / STRINGS_FILE
    words = _number_words(path, lang, path.stat().st_mtime_ns) if path.exists() else {}
    return words.get(key, FALLBACK[key]).format(**fields)


@cache
def _number_words(path: Path, lang: str, mtime: int) -> dict[str, str]:  # keyed by mtime: `mkdocs serve`
    values = read_strings(path, lang, f"docs/{lang}/{STRINGS_FILE}").values
    return {key: value for key, value in values.items() if key.startswith("numbers.")}


def number(value: float, lang: str, decimals: int | None = None) -> str:
    """Thousands separators; decimals chosen by magnitude unless given (3 significant digits or so)."""
    if decimals is None:
        magnitude = abs(value)
        decimals = 0 if magnitude >= 100 or float(value).is_integer() else 1 if magnitude >= 10 else 2
    return f"{value:,.{decimals}f}"


def with_unit(value: float, unit: str, lang: str, decimals: int | None = None) -> str:
    shown = number_word(UNIT_WORDS[unit], lang) if unit in UNIT_WORDS else unit
    return f"{number(value, lang, decimals)} {shown}"


def ms(value: float, lang: str) -> str:
    return with_unit(value, "ms", lang)


def tps(value: float, lang: str) -> str:
    return with_unit(value, "tok/s", lang)


def percent(fraction: float, lang: str) -> str:
    value = 100 * fraction
    return f"{number(value, lang, 0 if abs(value) >= 10 else 1)}%"


def times(ratio: float, lang: str) -> str:
    """A "times" ratio: 23.9 倍 in Chinese (a measure word, spaced like a unit), 23.9× in English; a whole
    ratio without decimals (32 倍)."""
    decimals = 0 if ratio >= 100 or float(ratio).is_integer() else 1
    return f"{number(ratio, lang, decimals)}{number_word('numbers.times', lang)}"


def nbytes(value: float, lang: str) -> str:
    """Decimal units (1 KB = 1000 bytes), as bandwidths in GB/s are."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= scale:
            return with_unit(value / scale, unit, lang)
    return with_unit(value, "B", lang, 0)


def megabytes(value: float, lang: str) -> str:
    return with_unit(value / 1e6, "MB", lang)


def count(value: float, lang: str) -> str:
    return number(value, lang, 0)


def params(value: float, lang: str) -> str:
    """Parameter counts the way model names write them: 135M, 8.0B."""
    for suffix, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            scaled = value / scale
            return f"{number(scaled, lang, 0 if scaled >= 100 else 1)}{suffix}"
    return count(value, lang)
