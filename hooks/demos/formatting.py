"""Numbers as the prose and the fallbacks show them: value, unit, thousands separators."""

from __future__ import annotations

# What follows a ratio: 23.9 倍, 23.9× (the one place the two languages write numbers differently).
TIMES: dict[str, str] = {"zh": " 倍", "en": "×"}


def number(value: float, lang: str, decimals: int | None = None) -> str:
    """Thousands separators; decimals chosen by magnitude unless given (3 significant digits or so)."""
    if decimals is None:
        magnitude = abs(value)
        decimals = 0 if magnitude >= 100 or float(value).is_integer() else 1 if magnitude >= 10 else 2
    return f"{value:,.{decimals}f}"


def with_unit(value: float, unit: str, lang: str, decimals: int | None = None) -> str:
    return f"{number(value, lang, decimals)} {unit}"


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
    return f"{number(ratio, lang, decimals)}{TIMES.get(lang, '×')}"


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
