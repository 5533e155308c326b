"""The core library must stay free of Dagster so it can be used and tested on its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "eval_assets"
# The orchestration layer is one package, the local runner (the Python API) included.
DAGSTER_LAYER = {"defs"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_modules_do_not_import_dagster() -> None:
    core = [p for p in PACKAGE.rglob("*.py")
            if p.relative_to(PACKAGE).parts[0] not in DAGSTER_LAYER]
    assert len(core) > 5
    offenders = [str(p.relative_to(PACKAGE)) for p in core if "dagster" in _imports(p)]
    assert offenders == []


def test_the_dagster_layer_is_one_package() -> None:
    """The folder tree shows the split: no Dagster module beside the core packages."""
    top = [p for p in PACKAGE.glob("*.py") if "dagster" in _imports(p)]
    assert sorted(p.name for p in top) == []


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """Past 600 lines a module holds several things a reader must tell apart: split it."""
    modules = list(PACKAGE.rglob("*.py"))
    assert len(modules) > 5
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
               for p in modules}
    assert {name: n for name, n in sorted(lengths.items()) if n > MAX_MODULE_LINES} == {}
