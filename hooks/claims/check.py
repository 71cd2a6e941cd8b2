"""Checking a claim against the figures, and saying plainly why it does not hold.

`check_claim` evaluates every phrasing's condition (all of them, so a typo in a later phrasing is found
even while an earlier one holds) and keeps each figure's raw value and text for the message and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hooks.claims.conditions import ALLOWED, ConditionError, evaluate, parse_condition
from hooks.claims.syntax import SYNTAX, Claim
from hooks.demos.inline_figures import (
    GLOBAL_NAMES,
    PAGE_NAMES,
    Figure,
    FigureResolver,
    figure_error,
    parse_ref,
)


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


@dataclass
class ClaimCheck:
    claim: Claim
    phrasings: list[PhrasingCheck]

    @property
    def errors(self) -> list[tuple[int, str]]:
        """(line, message) of each mistake in the claim's markup or conditions."""
        if self.claim.problem:
            return [(self.claim.line, f"claim “{self.claim.excerpt}”: {self.claim.problem} — write {SYNTAX}")]
        return [(p.line, f"claim “{self.claim.excerpt}”: condition `{p.condition}` {p.error}")
                for p in self.phrasings if p.error]

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
            from hooks.demos.site import CACHE_DIR  # here, not at the top: the site module imports this one

            # a measurement is cached until its inputs change, so one taken on a busy machine stays
            lines.append(f"  — measured figures are kept in {CACHE_DIR.as_posix()}/: if this machine was busy when "
                         "they were measured, delete that folder and build again to measure them afresh")
        return "\n".join(lines)


def check_claim(claim: Claim, resolver: FigureResolver) -> ClaimCheck:
    """Evaluate every phrasing of `claim` with the resolver's figures."""
    return ClaimCheck(claim, [_check_phrasing(a.condition, a.text, a.line, resolver) for a in claim.alternatives])


def _check_phrasing(condition: str, text: str, line: int, resolver: FigureResolver) -> PhrasingCheck:
    check = PhrasingCheck(condition, text, line)
    try:
        parsed = parse_condition(condition)
    except ConditionError as error:
        check.error = f"{error} — allowed: {ALLOWED}"
        return check
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
