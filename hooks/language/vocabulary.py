"""The article's qualitative words (docs/vocabulary.yml), each bound to one predicate with one threshold.

A predicate is called in a claim's condition like a function: `barely_changes(sweep.decode_growth)`,
`far_below(proj.kv_users@llama-3.1-8b/h100-sxm/fp16/4096, proj.knee@llama-3.1-8b/h100-sxm/fp16)`. Its
body (`true_when`) is written in the condition language over its arguments' names. `uses_in` finds the
words of one language in a phrasing, and says which of them are negated ("far from full load").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from hooks.authoring import AuthoringMistake
from hooks.language.conditions import Condition, ConditionError, evaluate, parse_condition

VOCABULARY_FILE = "vocabulary.yml"
# The name under which a predicate's true_when reads the vocabulary's `noise:` (the measurement noise, one
# number for every word that must not claim a difference smaller than it); prose prints it as
# {{ vocabulary.noise }}, so the threshold and the sentences that state it cannot drift apart.
NOISE = "noise"
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / VOCABULARY_FILE
# Scripts written without spaces between words: a word there is matched as the characters themselves.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
# How far before a word a negation may stand: in words (spaced scripts), in characters (unspaced).
_NEGATION_WORDS, _NEGATION_CHARS = 3, 4
_CLAUSE_END = re.compile(r"[,.;:!?，。；：！？、()（）“”「」\"\n]")
_HIDDEN = re.compile(r"\{\{.*?\}\}|`+[^`]*`+", re.S)  # figure references and inline code are not words


@dataclass(frozen=True)
class Predicate:
    """One entry: its name, its arguments, when it is true (a parsed condition over the arguments), what
    it means per language and its words per language."""

    name: str
    args: tuple[str, ...]
    true_when: Condition
    means: dict[str, str]
    words: dict[str, tuple[str, ...]]
    noise: float | None = None  # the vocabulary's measurement noise, the value of `noise` in true_when

    def __call__(self, *values: float) -> bool:
        constants = {NOISE: self.noise} if self.noise is not None else {}
        return evaluate(self.true_when, {}, {**constants, **dict(zip(self.args, values, strict=True))})

    def summary(self, lang: str = "en") -> str:
        """`far_below(a, b): a <= b / 2`, as messages and the CLI show it; the noise written out, and named
        (`faster(a, b): a < b * (1 - 10%)`, noise = 10%)."""
        body = self.true_when.text
        if self.noise is None or not re.search(rf"\b{NOISE}\b", body):
            return f"{self.name}({', '.join(self.args)}): {body}"
        shown = re.sub(rf"\b{NOISE}\b", percent_text(self.noise), body)
        return f"{self.name}({', '.join(self.args)}): {shown} ({NOISE} = {percent_text(self.noise)})"


@dataclass(frozen=True)
class WordUse:
    """One vocabulary word found in a phrasing: the text as written, its predicate, whether a negation
    stands before it (and which, when the negation is itself a vocabulary word), its offset."""

    word: str
    predicate: str
    negated: bool
    offset: int
    negated_by: str | None = None  # the predicate of the negating word, if it has one ("far from": far_below)


@dataclass(frozen=True)
class Vocabulary:
    path: str
    predicates: dict[str, Predicate]
    negations: dict[str, tuple[str, ...]]
    noise: float | None = None  # `noise:`, as a fraction (10% is 0.1); None when the file sets none
    noise_means: dict[str, str] | None = None  # what the noise is, per language (a figure's hover text)

    def word_predicate(self, lang: str) -> dict[str, str]:
        """Every word of `lang` (lower case) → its predicate's name."""
        return {word.lower(): p.name for p in self.predicates.values() for word in p.words.get(lang, ())}

    def uses_in(self, text: str, lang: str) -> list[WordUse]:
        """The vocabulary words of `lang` in `text`, longest first where they overlap, in text order."""
        words = self.word_predicate(lang)
        if not words:
            return []
        visible = _HIDDEN.sub(lambda m: " " * len(m.group(0)), text)
        lower = visible.lower()
        taken = [False] * len(lower)
        spans: list[tuple[int, int, str]] = []
        for word in sorted(words, key=len, reverse=True):
            for match in _word_pattern(word).finditer(lower):
                if any(taken[match.start():match.end()]):
                    continue
                taken[match.start():match.end()] = [True] * (match.end() - match.start())
                spans.append((match.start(), match.end(), word))
        found = []
        for start, end, word in sorted(spans):
            # A negation inside another word of the vocabulary (the 不 of 几乎不变) negates nothing after it.
            others = "".join(" " if taken[i] and not any(s <= i < e for s, e, w in spans if w in self.negations_of(lang))
                             else ch for i, ch in enumerate(lower[:start]))
            negation = self._negation_before(others, start, lang)
            found.append(WordUse(visible[start:end], words[word], negation is not None, start,
                                 words.get(negation) if negation else None))
        return found

    def word_list(self, lang: str) -> str:
        """Each qualitative word of `lang` (the first of its forms) and what it means, threshold written out, as a
        Markdown list: what
        About the numbers prints where it says `<!-- pd:vocabulary -->`, so the page and the checks never differ."""
        items = [f"- **{p.words[lang][0]}**: {p.means[lang]}"
                 for p in self.predicates.values() if p.words.get(lang) and p.means.get(lang)]
        return "\n".join(items)

    def negations_of(self, lang: str) -> tuple[str, ...]:
        return tuple(n.lower() for n in self.negations.get(lang, ()))

    def _negation_before(self, lower: str, start: int, lang: str) -> str | None:
        """The negation standing just before `start` in the same clause, if any."""
        before = _CLAUSE_END.split(lower[:start])[-1]
        for negation in sorted(self.negations.get(lang, ()), key=len, reverse=True):
            if _UNSPACED.search(negation):
                window = before[-(len(negation) + _NEGATION_CHARS):]
                if negation in window:
                    return negation
            else:
                window = " ".join(before.split()[-(_NEGATION_WORDS + negation.count(" ")):])
                if re.search(rf"(?<![\w-]){re.escape(negation)}(?![\w-])", window):
                    return negation
        return None


@cache
def _word_pattern(word: str) -> re.Pattern[str]:
    if _UNSPACED.search(word):
        return re.compile(re.escape(word))
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])")


def load_vocabulary(path: Path = DEFAULT_PATH, shown: str | None = None) -> Vocabulary:
    """The vocabulary file, checked: every mistake names the file, the line and what is allowed."""
    return _load(path.resolve(), shown or _shown(path), path.stat().st_mtime_ns if path.exists() else 0)


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(DEFAULT_PATH.parents[1]).as_posix()
    except ValueError:
        return path.as_posix()


@cache
def _load(path: Path, shown: str, mtime: int) -> Vocabulary:  # keyed by mtime: `mkdocs serve` sees an edit
    if not path.exists():
        raise AuthoringMistake(shown, None, "the vocabulary file is missing: claims' qualitative words are "
                                            "defined there (see hooks/language/vocabulary.py)")
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise AuthoringMistake(shown, mark.line + 1 if mark else None, f"not valid YAML: {error}") from None
    lines = _entry_lines(root)
    if not isinstance(data, dict) or not isinstance(data.get("words"), dict):
        raise AuthoringMistake(shown, 1, "the vocabulary needs `negations:` (per language) and `words:` (one entry "
                                         "per predicate: args, true_when, means, and a list of words per language)")
    negations = {lang: tuple(str(w) for w in words) for lang, words in (data.get("negations") or {}).items()}
    noise, noise_means = _noise(data.get(NOISE), shown, _top_line(root, NOISE))
    predicates: dict[str, Predicate] = {}
    for name, entry in data["words"].items():
        line = lines.get(name)
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", str(name)) or name in ("abs", "min", "max", "not", "and", "or"):
            raise AuthoringMistake(shown, line, f"{name!r} cannot name a predicate — allowed: lower-case letters, "
                                                "digits and _, not abs, min, max, and, or, not")
        if not isinstance(entry, dict) or not isinstance(entry.get("args"), list) or not entry["args"] \
                or "true_when" not in entry:
            raise AuthoringMistake(shown, line, f"entry {name!r} needs args (a list of names), true_when (a condition "
                                                "over them), means and words per language (zh: […], en: […])")
        args = tuple(str(arg) for arg in entry["args"])
        if noise is not None and NOISE in args:
            raise AuthoringMistake(shown, line, f"{name}: `{NOISE}` names the vocabulary's measurement noise; "
                                                "call the argument something else")
        try:
            body = parse_condition(str(entry["true_when"]), params=args + ((NOISE,) if noise is not None else ()))
        except ConditionError as error:
            raise AuthoringMistake(shown, line, f"{name}: true_when `{entry['true_when']}` {error}") from None
        words = {lang: tuple(str(w) for w in value) for lang, value in entry.items()
                 if lang not in ("args", "true_when", "means") and isinstance(value, list)}
        means = {lang: _with_noise(str(text), noise) for lang, text in (entry.get("means") or {}).items()}
        predicates[name] = Predicate(name, args, body, means, words, noise)
    seen: dict[tuple[str, str], str] = {}
    for predicate in predicates.values():
        for lang, words in predicate.words.items():
            for word in words:
                other = seen.setdefault((lang, word.lower()), predicate.name)
                if other != predicate.name:
                    raise AuthoringMistake(shown, lines.get(predicate.name), f"the {lang} word {word!r} is bound to "
                                           f"both {other} and {predicate.name}: one word, one predicate")
    return Vocabulary(shown, predicates, negations, noise, noise_means)


def percent_text(fraction: float) -> str:
    """0.1 -> "10%", as the vocabulary file writes it."""
    return f"{100 * fraction:g}%"


def _with_noise(text: str, noise: float | None) -> str:
    """A `means:` text with {noise} written out (it says what a word means, threshold included)."""
    return text.replace("{" + NOISE + "}", percent_text(noise)) if noise is not None else text


def _noise(entry: object, shown: str, line: int | None) -> tuple[float | None, dict[str, str] | None]:
    """`noise: {value: 10%, means: {zh: …, en: …}}` as (0.1, its meanings); (None, None) when absent."""
    if entry is None:
        return None, None
    value = entry.get("value") if isinstance(entry, dict) else None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", str(value)) if value is not None else None
    if not match or not 0 < float(match.group(1)) < 100:
        raise AuthoringMistake(shown, line, f"`{NOISE}:` needs value (a percentage between 0% and 100%, such as "
                                            "10%) and means (zh: …, en: …): what the build machines' runs vary by")
    fraction = float(match.group(1)) / 100
    return fraction, {lang: _with_noise(str(text), fraction) for lang, text in (entry.get("means") or {}).items()}


def _top_line(root: yaml.Node | None, key: str) -> int | None:
    """The 1-based line of a top-level key."""
    if isinstance(root, yaml.MappingNode):
        for node, _ in root.value:
            if node.value == key:
                return node.start_mark.line + 1
    return None


def _entry_lines(root: yaml.Node | None) -> dict[str, int]:
    """The 1-based line of each entry under `words:`."""
    if not isinstance(root, yaml.MappingNode):
        return {}
    for key, value in root.value:
        if key.value == "words" and isinstance(value, yaml.MappingNode):
            return {k.value: k.start_mark.line + 1 for k, _ in value.value}
    return {}
