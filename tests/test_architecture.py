"""The import rules of docs/architecture.md hold: every import runs down the floors.

Imports are read from the source (``ast``, lazy imports inside functions included), so the rules are
checked without importing anything. A new top-level module or package must be given a floor here and
on the page; that is the point: the page then says where it sits.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

FLOORS = {
    "problem": 1, "jsonscan": 1, "hookspecs": 1, "results": 1, "data": 1, "clock": 1, "errors": 1,
    "evaluate": 2, "io": 2, "backend": 2, "report": 2, "options": 2,
    "presolve": 3, "generate": 3, "registry": 3, "exhaustive": 3,
    "kernels": 4, "runner": 4,
    "exact": 5, "bench": 5, "progress": 5, "adapters": 5,
    "distributed": 6,
    "api": 7, "plugins": 7,
    "cli": 8,
    "__main__": 9,
}
"""Floor of each unit (a top-level module or package of ``portfolio``, or ``plugins``)."""

ALLOWED_UPWARD: set[tuple[str, str]] = set()
"""Imports that run up or sideways on purpose (the known exception named on the page)."""

PLUGINS_MAY_NOT_USE = {"cli", "bench", "progress", "report"}


def _unit(path: Path) -> str:
    """The unit a source file belongs to."""
    rel = path.relative_to(REPO)
    if rel.parts[0] == "plugins":
        return "plugins"
    return Path(rel.parts[1]).stem


def _package(path: Path) -> list[str]:
    """Dotted package of a file, for resolving relative imports (plugins/ installs as portfolio_plugins)."""
    rel = path.relative_to(REPO)
    parts = ["portfolio_plugins" if rel.parts[0] == "plugins" else rel.parts[0], *rel.parts[1:-1]]
    return parts


def _imports(path: Path) -> set[str]:
    """Units of ``portfolio`` (and ``plugins``) that a file imports."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[list[str]] = []
        if isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (_package(path)[:len(_package(path)) - node.level + 1] if node.level else [])
            module = base + (node.module.split(".") if node.module else [])
            # ``from . import x`` / ``from portfolio import x``: x is a unit itself
            targets = [module + [a.name] for a in node.names] if len(module) == 1 else [module]
        for parts in targets:
            if parts[0] == "portfolio_plugins":
                out.add("plugins")
            elif parts[0] == "portfolio" and len(parts) > 1:
                out.add(parts[1])
    return out


def _sources() -> list[Path]:
    files = [p for p in (REPO / "portfolio").rglob("*.py") if "__pycache__" not in p.parts]
    files += sorted((REPO / "plugins").glob("*.py"))
    return sorted(files)


def test_every_unit_has_a_floor():
    units = {_unit(p) for p in _sources()} - {"__init__"}
    missing = sorted(units - FLOORS.keys())
    assert not missing, (f"{missing}: give each a floor in docs/architecture.md and in FLOORS here "
                         f"(imports may only run down the floors)")


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_run_down_the_floors(path):
    unit = _unit(path)
    if unit == "__init__":
        return
    for target in _imports(path):
        if target == unit or target == "__init__" or target not in FLOORS:
            continue  # within the unit, the package face, or a name that is not a unit
        assert FLOORS[target] < FLOORS[unit] or (unit, target) in ALLOWED_UPWARD, (
            f"{path.relative_to(REPO)} (floor {FLOORS[unit]}) imports {target} "
            f"(floor {FLOORS[target]}): imports run down the floors, see docs/architecture.md")
        if unit == "plugins":
            assert target not in PLUGINS_MAY_NOT_USE, f"{path.name} imports portfolio.{target}"


def test_the_library_never_imports_the_plugins():
    offenders = [str(p.relative_to(REPO)) for p in _sources()
                 if _unit(p) != "plugins" and "plugins" in _imports(p)]
    assert not offenders, f"{offenders}: backends arrive through entry points, not imports"


def test_the_rules_catch_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: an evaluate.py importing the runner is refused."""
    fake = REPO / "portfolio" / "evaluate.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "from .runner import run_portfolio\n")
    with pytest.raises(AssertionError, match="imports runner"):
        test_imports_run_down_the_floors(fake)


def test_every_package_ships():
    """A new package under portfolio/ must be listed in pyproject.toml, or a non-editable install
    (CI's quick start) lacks it: the floors above are useless if a floor is missing on install."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "portfolio").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found <= listed, f"{sorted(found - listed)}: add to [tool.setuptools] packages in pyproject.toml"
