"""Conditions of claims: a small, safe expression language over figures.

Parsed with Python's `ast` and evaluated by walking a whitelist; nothing is ever passed to `eval`.
Allowed: numbers (32, 0.5, 1e3, and percentages: 37% is 0.37), figure names exactly as in `{{ }}`
(sweep.ttft_ms@4096; an operator after an @ARG needs a space before it), + - * /, unary minus,
comparisons (chained: 0.3 < x < 0.9), and, or, not, parentheses, the functions abs, min, max, and the
predicates of the vocabulary (docs/vocabulary.yml), called by name: barely_changes(sweep.decode_growth).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALLOWED = ("numbers (32, 0.5, 1e3, 37% = 0.37), figure names as in {{ }} (sweep.tps_drop_pct, "
           "sweep.ttft_ms@4096), + - * /, unary minus, comparisons (< <= > >= == !=, chained: 0.3 < x < 0.9), "
           "and, or, not, parentheses, abs(), min(), max(), and the predicates of docs/vocabulary.yml "
           "(barely_changes(x), far_below(a, b), full_load(x)…)")

# A figure name has a dot (sweep.tps) and may carry @ARG up to a space, a parenthesis or a comma.
_FIGURE = re.compile(r"(?<![\w.@])[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)+(?:@[^\s(),]+)?")
_PERCENT = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)%")
_PLACEHOLDER = "_pd_figure_{}"
_PREDICATES = "_pd_predicates"  # where evaluation finds the predicates (not a name conditions can write)
FUNCTIONS: dict[str, Callable[..., float]] = {"abs": abs, "min": min, "max": max}

_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b}
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
_OPERATOR_NAMES = {ast.Mod: "%", ast.Pow: "**", ast.FloorDiv: "//", ast.MatMult: "@", ast.BitAnd: "&",
                   ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Invert: "~",
                   ast.UAdd: "unary +", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


class ConditionError(ValueError):
    """A condition that is not in the language, or cannot be evaluated; the message says why."""


@dataclass(frozen=True)
class Call:
    """A predicate applied in a condition: its name, whether it stands under an odd number of `not`, and
    the figures its arguments use."""

    name: str
    negated: bool
    figures: tuple[str, ...]


@dataclass(frozen=True)
class Condition:
    """A parsed condition: its text, the figures it names (in order, each once), its checked tree, the
    predicates it may call (name → callable returning True or False) and the calls it makes."""

    text: str
    figures: tuple[str, ...]
    tree: ast.Expression
    predicates: Mapping[str, Callable[..., bool]] = field(default_factory=dict, compare=False)
    calls: tuple[Call, ...] = ()


def parse_condition(text: str, predicates: Mapping[str, Callable[..., bool]] | None = None,
                    params: tuple[str, ...] = ()) -> Condition:
    """Parse and check `text`; anything outside the language is a ConditionError saying what it is.
    `predicates` may be called by name (with their `args`' count, if they have `args`); `params` are bare
    names allowed as values (the arguments of a predicate's own body)."""
    predicates = predicates or {}
    figures: list[str] = []

    def to_placeholder(match: re.Match[str]) -> str:
        if match.group(0) not in figures:
            figures.append(match.group(0))
        return _PLACEHOLDER.format(figures.index(match.group(0)))

    python = _PERCENT.sub(r"(\1/100)", _FIGURE.sub(to_placeholder, text))
    try:
        tree = ast.parse(python.strip(), mode="eval")
    except SyntaxError:
        raise ConditionError("is not an expression of the condition language") from None
    names: set[str | int] = {_PLACEHOLDER.format(i) for i in range(len(figures))} | set(params)
    names |= {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}  # called function names
    for node in ast.walk(tree):
        _check(node, names, predicates)
    calls = tuple(_calls(tree.body, False, figures))
    return Condition(text, tuple(figures), tree, predicates, calls)


def _calls(node: ast.AST, negated: bool, figures: list[str]) -> list[Call]:
    """The predicate calls under `node`, each with whether an odd number of `not` stands above it."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _calls(node.operand, not negated, figures)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in FUNCTIONS:
        used = [n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)]
        named = tuple(figures[int(u.rsplit("_", 1)[1])] for u in used if u.startswith(_PLACEHOLDER[:-2]))
        return [Call(node.func.id, negated, tuple(dict.fromkeys(named)))]
    return [call for child in ast.iter_child_nodes(node) for call in _calls(child, negated, figures)]


def _check(node: ast.AST, names: set[str | int], predicates: Mapping[str, Callable[..., bool]]) -> None:
    """Accept `node` if the language allows it; `names` holds the figures' placeholders, the parameters and
    the ids of the Name nodes that are called (a function name is allowed only when called)."""
    allowed_nodes = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.USub, ast.Not, ast.BinOp,
                     ast.Compare, ast.Load, *_BINARY, *_COMPARE)
    if isinstance(node, allowed_nodes):
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return
        what = "strings" if isinstance(node.value, (str, bytes)) else f"the constant {node.value!r}"
        raise ConditionError(f"uses {what}, which conditions do not allow")
    if isinstance(node, ast.Name):
        if node.id in names or (id(node) in names and (node.id in FUNCTIONS or node.id in predicates)):
            return
        raise ConditionError(f"names {node.id!r}, which is not a figure (figure names have a dot: sweep.tps@512)")
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS and name not in predicates:
            called = f"`{name}`" if name else "something that is not a function name"
            known = ", ".join(sorted(predicates)) or "none loaded"
            raise ConditionError(f"calls {called}: the only functions are abs, min and max, and the vocabulary's "
                                 f"predicates ({known})")
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ConditionError(f"passes keyword or starred arguments to {name}()")
        if name in predicates:
            args = getattr(predicates[name], "args", None)
            if args is not None and len(node.args) != len(args):
                raise ConditionError(f"calls {name}() with {len(node.args)} argument(s): it takes "
                                     f"{len(args)} ({', '.join(args)})")
            return
        wanted = 1 if name == "abs" else 2
        if len(node.args) < wanted or (name == "abs" and len(node.args) != 1):
            raise ConditionError(f"calls {name}() with {len(node.args)} argument(s): abs takes one, "
                                 "min and max two or more")
        return
    if isinstance(node, ast.Attribute):
        raise ConditionError(f"uses attribute access (.{node.attr}), which conditions do not allow")
    if isinstance(node, ast.Subscript):
        raise ConditionError("uses a subscript ([…]), which conditions do not allow")
    if type(node) in _OPERATOR_NAMES:
        raise ConditionError(f"uses the operator {_OPERATOR_NAMES[type(node)]}, which conditions do not allow")
    raise ConditionError(f"uses {type(node).__name__} syntax, which conditions do not allow")


def evaluate(condition: Condition, values: dict[str, float], params: dict[str, float] | None = None) -> bool:
    """True or False, with each of `condition.figures` given its raw number in `values` (and each of a
    predicate body's parameters its value in `params`)."""
    named: dict[str, Any] = {_PLACEHOLDER.format(i): values[name] for i, name in enumerate(condition.figures)}
    named |= params or {}
    named[_PREDICATES] = condition.predicates
    result = _evaluate(condition.tree.body, named)
    if not isinstance(result, bool):
        raise ConditionError("is a number, not true or false: compare it with something "
                             "(e.g. sweep.tps_drop_pct < 10%)")
    return result


def _evaluate(node: ast.AST, named: dict[str, Any]) -> float | bool:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return named[node.id]
    if isinstance(node, ast.BoolOp):
        operands = [_truth(_evaluate(value, named)) for value in node.values]  # all evaluated: all checked
        return all(operands) if isinstance(node.op, ast.And) else any(operands)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, named)
        return not _truth(operand) if isinstance(node.op, ast.Not) else -_number(operand)
    if isinstance(node, ast.BinOp):
        left, right = _number(_evaluate(node.left, named)), _number(_evaluate(node.right, named))
        if isinstance(node.op, ast.Div) and right == 0:
            raise ConditionError("divides by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        values = [_number(_evaluate(v, named)) for v in (node.left, *node.comparators)]
        return all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:], strict=False))
    if isinstance(node, ast.Call):
        args = [_number(_evaluate(arg, named)) for arg in node.args]
        if node.func.id in FUNCTIONS:
            return FUNCTIONS[node.func.id](*args)
        return bool(named[_PREDICATES][node.func.id](*args))
    raise ConditionError(f"uses {type(node).__name__} syntax, which conditions do not allow")  # unreachable


def _number(value: float | bool) -> float:
    if isinstance(value, bool):
        raise ConditionError("does arithmetic or a comparison on a true/false value")
    return value


def _truth(value: float | bool) -> bool:
    if not isinstance(value, bool):
        raise ConditionError("uses a number where true or false is needed (and, or, not take comparisons)")
    return value
