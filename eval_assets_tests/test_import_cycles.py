"""No import cycle in ``eval_assets``, those made through ``importlib`` included.

The graph is read from the source (``ast``): every ``import`` and ``from ... import`` (at module
level or inside a function, relative ones resolved), plus every dynamic import. A call of
``importlib.import_module`` or ``__import__`` with a string literal is an edge like any other; one
whose module is computed must belong to a function of :data:`DYNAMIC_IMPORTERS`, whose resolver
turns its call sites (or its rule) into edges, or the test fails: an import the graph cannot
follow is how a cycle hides (``family_spec`` once loaded the modules that import it that way).
A package's ``__init__`` run by importing one of its modules is not an edge (Python allows it).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "eval_assets"

Edge = tuple[str, str]


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at ``root`` by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that importing ``name`` runs last: ``name``, or its nearest parent."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _dynamic_call(node: ast.AST) -> ast.Call | None:
    """``importlib.import_module(...)``, ``import_module(...)`` or ``__import__(...)``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return node if name in ("import_module", "__import__") else None


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(qualified function name, node) for every node, "" at module level."""
    def walk(node: ast.AST, owner: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            inner = owner
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = f"{owner}.{child.name}" if owner else child.name
            yield inner, child
            yield from walk(child, inner)
    return walk(tree, "")


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _calls_of(trees: dict[str, ast.AST], function: str) -> Iterator[tuple[str, ast.Call]]:
    """(calling module, call) for every call of a function named ``function``."""
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name == function:
                    yield module, node


def _value(module: str, tree: ast.AST, node: ast.AST) -> object:
    """A literal, ``__name__``, or a module-level name bound to a literal."""
    if isinstance(node, ast.Name):
        if node.id == "__name__":
            return module
        for stmt in getattr(tree, "body", []):
            if (isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None
                    and node.id in {t.id for t in (stmt.targets if isinstance(stmt, ast.Assign)
                                                   else [stmt.target])
                                    if isinstance(t, ast.Name)}):
                return _literal(stmt.value)
        return None
    return _literal(node)


def _lazy_exports(trees: dict[str, ast.AST], modules: dict[str, Path]) -> set[Edge]:
    """``lazy_exports(__name__, _EXPORTS)``: the package's ``__getattr__`` imports
    ``package.<module>`` for each module of the mapping; both must be read from the source."""
    edges = set()
    for caller, call in _calls_of(trees, "lazy_exports"):
        package, exports = (_value(caller, trees[caller], a) for a in call.args[:2])
        assert isinstance(package, str) and isinstance(exports, dict), (
            f"{caller}: lazy_exports takes the package's name and a literal mapping")
        edges |= {(caller, f"{package}.{module}") for module in exports.values()}
    return edges


def _engines(trees: dict[str, ast.AST], modules: dict[str, Path]) -> set[Edge]:
    """``_engine(name, "module", extra)``: an optional executor's package, named literally."""
    edges = set()
    for caller, call in _calls_of(trees, "_engine"):
        if caller != "eval_assets.defs.executors" or len(call.args) < 2:
            continue
        name = _literal(call.args[1])
        assert isinstance(name, str), f"{caller}: _engine's module must be a literal"
        if (target := _target(name, modules)) is not None:
            edges.add((caller, target))
    return edges


def _package_scan(package: str) -> Callable[[dict[str, ast.AST], dict[str, Path]], set[Edge]]:
    """A package that imports every module of its own (the metric registry's discovery)."""
    def resolve(trees: dict[str, ast.AST], modules: dict[str, Path]) -> set[Edge]:
        return {(package, m) for m in modules
                if m.rpartition(".")[0] == package and m != package}
    return resolve


# Every function that imports a computed module name -> what it imports.
DYNAMIC_IMPORTERS: dict[str, Callable[[dict[str, ast.AST], dict[str, Path]], set[Edge]]] = {
    "eval_assets.lazy:lazy_exports.__getattr__": _lazy_exports,
    "eval_assets.defs.executors:_engine": _engines,
    "eval_assets.scoring:_discovered": _package_scan("eval_assets.scoring"),
}


def import_graph(root: Path, package: str,
                 dynamic: dict[str, Callable[..., set[Edge]]] | None = None,
                 ) -> tuple[dict[str, set[str]], list[str]]:
    """The package's import graph (module -> modules of ours it imports) and the dynamic imports
    it could not follow ("module:function: source")."""
    dynamic = DYNAMIC_IMPORTERS if dynamic is None else dynamic
    modules = module_files(root, package)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
             for m, p in modules.items()}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    unresolved, used = [], set()

    def add(source: str, name: str) -> None:
        target = _target(name, modules)
        if target is not None and target != source:
            graph[source].add(target)

    for module, tree in trees.items():
        for owner, node in _functions(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(module, alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = _base(module, modules[module], node)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    add(module, full if full in modules else base)
            elif (call := _dynamic_call(node)) is not None:
                name = _literal(call.args[0])
                key = f"{module}:{owner}"
                if isinstance(name, str):
                    add(module, name)
                elif key in dynamic:
                    used.add(key)
                else:
                    unresolved.append(f"{key}: {ast.unparse(call)}")
    for key in used:
        for source, target in dynamic[key](trees, modules):
            add(source, target)
    unresolved += [f"{key}: listed in DYNAMIC_IMPORTERS but imports nothing computed"
                   for key in dynamic if key not in used and key.split(":")[0] in modules]
    return graph, unresolved


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@functools.cache
def _ours() -> tuple[dict[str, set[str]], list[str]]:
    return import_graph(PACKAGE_DIR, "eval_assets")


def test_eval_assets_has_no_import_cycle() -> None:
    graph, unresolved = _ours()
    assert len(graph) > 100
    assert unresolved == []
    assert cycles(graph) == []


def test_the_graph_follows_importlib_and_the_registries() -> None:
    graph, _ = _ours()
    assert "eval_assets.report.charts" in graph["eval_assets.report.markup"]  # import_module
    assert "eval_assets.report.leaderboard" in graph["eval_assets.report"]  # lazy_exports
    assert "eval_assets.scoring.vqa" in graph["eval_assets.scoring"]  # metric discovery
    # The family registry is the bottom floor: it imports nothing of ours.
    assert graph["eval_assets.family_spec"] == set()
    assert {"eval_assets.vqa.families", "eval_assets.vqa.spatial.declared"} <= graph[
        "eval_assets.vqa.declarations"]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_cycle_through_importlib_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "low.py": "import importlib\n\ndef load():\n    importlib.import_module('pkg.high')\n",
        "high.py": "from pkg.low import load\n",
        "other.py": "from . import low\n"})
    graph, unresolved = import_graph(root, "pkg", dynamic={})
    assert unresolved == []
    assert cycles(graph) == [["pkg.high", "pkg.low"]]


def test_a_computed_import_the_graph_cannot_follow_fails(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "low.py": "import importlib\n\nMODULES = ('pkg.high',)\n\ndef load():\n"
                  "    for m in MODULES:\n        importlib.import_module(m)\n"})
    _, unresolved = import_graph(root, "pkg", dynamic={})
    assert unresolved == ["pkg.low:load: importlib.import_module(m)"]
