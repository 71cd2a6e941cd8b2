"""Checking a claim against the figures, and saying plainly why it does not hold.

`check_claim` evaluates every phrasing's condition (all of them, so a typo in a later phrasing is found
even while an earlier one holds) and keeps each figure's raw value and text for the message and the CLI.
It also finds the vocabulary's words in each phrasing (docs/vocabulary.yml) and refuses a phrasing whose
condition does not apply a word's predicate (negated, for a negated use) to a figure the phrasing shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hooks.claims.syntax import SYNTAX, Claim
from hooks.demos.cache import CACHE_DIR
from hooks.demos.figure_names import GLOBAL_NAMES, PAGE_NAMES, figure_error, parse_ref
from hooks.demos.figure_refs import find_refs
from hooks.demos.figure_resolver import Figure, FigureResolver
from hooks.language.conditions import ALLOWED, Condition, ConditionError, evaluate, parse_condition
from hooks.language.vocabulary import Vocabulary, WordUse, load_vocabulary


@dataclass
class PhrasingCheck:
    """One phrasing: its condition, whether it holds (None when it could not be evaluated), the figures
    its condition uses, and what went wrong, if anything."""

    condition: str
    text: str
    line: int
    holds: bool | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    error: str | None = None
    words: list[WordUse] = field(default_factory=list)
    unbound: list[tuple[WordUse, int, str]] = field(default_factory=list)  # each word not applied: line, message


@dataclass
class ClaimCheck:
    claim: Claim
    phrasings: list[PhrasingCheck]

    @property
    def errors(self) -> list[tuple[int, str]]:
        """(line, message) of each mistake in the claim's markup or conditions."""
        if self.claim.problem:
            return [(self.claim.line, f"claim “{self.claim.excerpt}”: {self.claim.problem} — write {SYNTAX}")]
        errors = []
        for p in self.phrasings:
            if p.error:
                errors.append((p.line, f"claim “{self.claim.excerpt}”: condition `{p.condition}` {p.error}"))
            errors += [(line, f"claim “{self.claim.excerpt}”: {message}") for _, line, message in p.unbound]
        return errors

    @property
    def chosen(self) -> PhrasingCheck | None:
        """The phrasing the page prints: the first that holds, provided nothing in the claim is wrong."""
        if self.errors:
            return None
        return next((p for p in self.phrasings if p.holds), None)

    @property
    def holds(self) -> bool:
        return self.chosen is not None

    @property
    def figures(self) -> dict[str, Figure]:
        return {name: figure for p in self.phrasings for name, figure in p.figures.items()}

    def failure(self) -> str:
        """Why no phrasing holds: each condition with every figure it uses, raw and as printed."""
        lines = [f"claim “{self.claim.excerpt}”: none of its conditions holds:"]
        for p in self.phrasings:
            values = ", ".join(f"{name} = {show_raw(f.value)} ({f.text})" for name, f in p.figures.items())
            lines.append(f"  `{p.condition}` is false" + (f" with {values}" if values else ""))
        lines.append("  — every phrasing states when it is true: reword the claim for these figures, or add "
                     "{% elif CONDITION %} with a phrasing that holds")
        if any(f.source == "measured" for p in self.phrasings for f in p.figures.values()):
            # a measurement is cached until its inputs change, so one taken on a busy machine stays
            lines.append(f"  — measured figures are kept in {CACHE_DIR.as_posix()}/: if this machine was busy when "
                         "they were measured, delete that folder and build again to measure them afresh")
        return "\n".join(lines)


def check_claim(claim: Claim, resolver: FigureResolver, vocabulary: Vocabulary | None = None) -> ClaimCheck:
    """Evaluate every phrasing of `claim` with the resolver's figures, and check the vocabulary words
    each phrasing uses against its condition."""
    vocabulary = vocabulary or load_vocabulary()
    return ClaimCheck(claim, [_check_phrasing(a.condition, a.text, a.line, resolver, vocabulary)
                              for a in claim.alternatives])


def _check_phrasing(condition: str, text: str, line: int, resolver: FigureResolver,
                    vocabulary: Vocabulary) -> PhrasingCheck:
    check = PhrasingCheck(condition, text, line, words=vocabulary.uses_in(text, resolver.lang))
    try:
        parsed = parse_condition(condition, vocabulary.predicates)
    except ConditionError as error:
        check.error = f"{error} — allowed: {ALLOWED}"
        return check
    check.unbound = list(_unbound_words(check, parsed, vocabulary))
    for name in parsed.figures:
        try:
            check.figures[name] = resolver.figure(name)
        except LookupError as error:
            check.error = f"names {name}: {_figure_problem(name, error)}"
            return check
        if check.figures[name].value is None:
            check.error = (f"uses {name}, which is text (“{check.figures[name].text}”), not a number: it can be "
                           "shown with {{ }} but not compared — allowed: " + ALLOWED)
            return check
    try:
        check.holds = evaluate(parsed, {name: figure.value for name, figure in check.figures.items()})
    except ConditionError as error:
        check.error = f"{error} — allowed: {ALLOWED}"
    return check


def _unbound_words(check: PhrasingCheck, parsed: Condition,
                   vocabulary: Vocabulary) -> list[tuple[WordUse, int, str]]:
    """(word, line, message) for each word of the phrasing whose predicate its condition does not apply, as used
    (negated or not), to a figure of a measurement the phrasing shows (any figure, when it shows none): a
    sentence may show `cache.speedup@512` and its condition compare `cache.cached_ms@512`."""
    shown = {_measurement(" ".join(ref["body"].split())) for ref in find_refs(check.text)} - {None}
    unbound = []
    for use in check.words:
        def applies(name: str, negated: bool) -> bool:
            return any(call.name == name and call.negated == negated and call.figures
                       and (not shown or {_measurement(f) for f in call.figures} & shown) for call in parsed.calls)

        if applies(use.predicate, use.negated) or (use.negated and use.negated_by and applies(use.negated_by, False)):
            continue
        predicate = vocabulary.predicates[use.predicate]
        to = (f"to a figure of what it shows ({', '.join(sorted(shown))} figures)" if shown
              else "to the figure it is about")
        if use.negated:
            ways = f"not {predicate.name}(…)" + (f" or {use.negated_by}(…)" if use.negated_by else "")
            what = f"“{use.word}” stands negated, so its condition must apply {ways} {to}"
        else:
            what = f"its condition does not apply {predicate.name}(…) {to}"
        line = check.line + check.text.count("\n", 0, use.offset)
        unbound.append((use, line, f"“{use.word}” is a vocabulary word ({predicate.summary()}, {vocabulary.path}): "
                              f"{what} — condition now: `{check.condition}`; write {predicate.name}("
                              f"{', '.join(predicate.args)}) in it, or reword the phrasing"))
    return unbound


def _measurement(name: str) -> str | None:
    """Which measurement a figure comes from: its group (sweep, cache, roofline, batch, machine…), and for
    projections and published rows the MODEL/DEVICE/DTYPE (or row) it is about; None for a text figure."""
    try:
        base, arg = parse_ref(name)
    except LookupError:
        return None
    group = base.split(".", 1)[0]
    if group in ("model",) or base in ("machine.cpu", "machine.date"):
        return None
    if group == "proj" and arg:
        return f"proj@{'/'.join(arg.split('/')[:3])}"
    return f"pub@{arg}" if group == "pub" else group


def _figure_problem(name: str, error: LookupError) -> str:
    """The lookup error, or, for `figure.attr`, the attribute access it really is."""
    base, arg = parse_ref(name)
    if arg and any(operator in arg for operator in "<>=!*+"):
        return f"{error.args[0]} (an operator after an @ARG needs a space before it) — allowed: {ALLOWED}"
    for known in (*GLOBAL_NAMES, *PAGE_NAMES):
        if arg is None and base.startswith(known + "."):
            return (f"attribute access ({base[len(known):]} after {known}), which conditions do not allow — "
                    f"allowed: {ALLOWED}")
    return figure_error(error)


def show_raw(value: float) -> str:
    """A raw figure as a message shows it: 0.372, 23.9, 19142.3, 4096."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3g}"
