"""The packages import one another one way: no cycle among simulations/ and hooks/, function-level imports included
(an import inside a function hides a cycle from Python's import machinery, not from a reader); benchmarks → hooks →
simulations, and harness/ below the tests and the benchmarks, which import the project as installed."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("simulations", "hooks")
# What each folder of the project may import of the others (the tests may import everything).
LAYERS = {
    "simulations": set(),
    "hooks": {"simulations"},
    "harness": set(),
    "benchmarks": {"harness", "hooks", "simulations"},
}
PROJECT = {*LAYERS, "tests"}
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


def project_imports(path: Path) -> set[str]:
    """The project's packages (top-level names) `path` imports anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found & PROJECT


def test_each_folder_imports_only_the_layers_below_it():
    found = [f"{path.relative_to(REPO)} imports {', '.join(sorted(wrong))}"
             for folder, allowed in LAYERS.items() for path in sorted((REPO / folder).rglob("*.py"))
             if (wrong := project_imports(path) - allowed - {folder})]
    assert not found, "imports against the layers (what the tests and benchmarks share lives in harness/):\n" + \
        "\n".join(found)


def test_no_module_edits_sys_path():
    """Everything imports the project as installed (`pip install -e`, .ci/setup); `python -m benchmarks.<script>`
    runs a benchmark from the repository root."""
    found = [f"{path.relative_to(REPO)}:{node.lineno}" for folder in PROJECT for path in sorted((REPO / folder).rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
             if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
             and node.value.id == "sys"]
    assert not found, f"sys.path used at {', '.join(sorted(found))}"
