"""The packages import one another one way: no cycle among simulations/ and hooks/, function-level imports included
(an import inside a function hides a cycle from Python's import machinery, not from a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("simulations", "hooks")
# Cycles being removed elsewhere (the formats/loader split, the hooks' demos/claims layering); delete each entry
# when its cycle is gone: the test then keeps it gone.
def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))}


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules `name` imports anywhere in its body: each import resolved to the deepest module it
    names (`from . import kernels` is simulations.kernels, `from .kernels import describe` too), and the packages
    above it, whose __init__ runs first."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import simulations.kernels.f32 as f` -> the module itself
                target = target.rpartition(".")[0]
            # importing a.b.c runs a/__init__ and a/b/__init__ first, unless they are the importer's own packages
            while target and target != name and not name.startswith(target + "."):
                found.add(target)
                target = target.rpartition(".")[0]
    return found


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "simulations.paths" in graph["simulations.kernels"]  # imported inside configure()
    assert "simulations.kernels.weight_formats" in graph["simulations.quantized"]


def test_no_module_of_simulations_or_hooks_imports_itself_in_a_circle():
    found = cycles(import_graph())
    new = [sorted(cycle) for cycle in found]
    assert not new, "import cycles (function-level imports included):\n" + "\n".join(" <-> ".join(c) for c in new)


def test_no_hook_imports_another_hook():
    graph = import_graph()
    hooks = {name for name in graph if name.startswith("hooks.") and name.endswith("_hook")}
    found = {(name, target) for name in hooks for target in graph[name] & hooks}
    assert not found, f"hooks importing hooks: {sorted(found)}"
