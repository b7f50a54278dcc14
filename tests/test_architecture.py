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
    "problem": 1, "jsonscan": 1, "hookspecs": 1, "results": 1, "data": 1, "clock": 1, "errors": 0, "work": 1,
    "prices": 1, "procstat": 1, "cpuload": 1, "backend_options": 1,
    "evaluate": 2, "io": 2, "backend": 2, "report": 2, "options": 2,
    "presolve": 3, "generate": 3, "registry": 3, "exhaustive": 3, "configure": 3, "leastpeak": 3,
    "identity": 3, "kernels": 4, "runner": 4, "features": 4,
    "exact": 5, "bench": 5, "progress": 5, "adapters": 5,
    "distributed": 6, "toulbar2": 6, "cpsat": 6, "maxsat": 6, "mip": 6, "memory": 6, "tuning": 6,
    "selection": 6,
    "api": 7, "plugins": 7, "plugincheck": 7,
    "frontends": 8,
    "cli": 9, "testing": 9,
    "__main__": 10,
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


def test_nothing_imports_a_plugin():
    """Backends arrive through entry points, never through imports: the library does not import
    ``plugins/``, and no plugin imports another (each file of ``plugins/`` is a backend module; an
    engine and its helpers live in the library, what two backends share too)."""
    offenders = [str(p.relative_to(REPO)) for p in _sources() if "plugins" in _imports(p)]
    assert not offenders, (f"{offenders}: backends arrive through entry points, not imports; "
                           f"move what is imported into the library (docs/architecture.md)")


def test_the_plugin_rule_catches_an_import(monkeypatch):
    """The checker itself: a plugin importing another one, lazily and relatively or by its
    package name, is refused."""
    read = Path.read_text
    for source in ("def f():\n    from .cpsat import X\n", "from portfolio_plugins import toulbar2\n"):
        monkeypatch.setattr(Path, "read_text", lambda self, *a, _s=source, **k:
                            _s if self.name == "bound.py" else read(self, *a, **k))
        with pytest.raises(AssertionError, match="plugins/bound.py"):
            test_nothing_imports_a_plugin()


def test_the_rules_catch_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: an evaluate.py importing the runner is refused."""
    fake = REPO / "portfolio" / "evaluate.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "from .runner import run_portfolio\n")
    with pytest.raises(AssertionError, match="imports runner"):
        test_imports_run_down_the_floors(fake)


TORCH_HOME = ("portfolio", "frontends", "torch")
"""The one package that may import torch (an optional extra: docs/frontends.md)."""


def _imports_torch(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "torch":
            return True
    return False


def test_only_the_torch_front_end_imports_torch():
    """torch is an optional extra: a module outside ``portfolio/frontends/torch/`` that imported
    it (even lazily) would break the plain install or make every command slow to start."""
    offenders = [str(p.relative_to(REPO)) for p in _sources()
                 if p.relative_to(REPO).parts[:3] != TORCH_HOME and _imports_torch(p)]
    assert not offenders, f"{offenders} import torch; only portfolio/frontends/torch/ may"


def test_the_torch_rule_catches_an_import(monkeypatch):
    read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k:
                        "def f():\n    from torch.fx import Node\n" if self.name == "evaluate.py"
                        else read(self, *a, **k))
    with pytest.raises(AssertionError, match="evaluate.py"):
        test_only_the_torch_front_end_imports_torch()


def test_every_package_ships():
    """A new package under portfolio/ must be listed in pyproject.toml, or a non-editable install
    (CI's quick start) lacks it: the floors above are useless if a floor is missing on install."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "portfolio").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found <= listed, f"{sorted(found - listed)}: add to [tool.setuptools] packages in pyproject.toml"


# ------------------------------------------------------------------------------ plugins and cycles
def _module(path: Path) -> str:
    """Dotted module name of a source file (plugins/ installs as portfolio_plugins)."""
    parts = _package(path) + [path.stem]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_imports(path: Path, known: set[str]) -> set[str]:
    """Modules of ``known`` that a file imports (eager and lazy), each resolved to the module
    itself: ``from pkg import mod`` names ``pkg.mod`` when that is a module, else ``pkg``."""
    def nearest(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        return ".".join(parts) if parts else None

    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str | None] = []
        if isinstance(node, ast.Import):
            names = [nearest(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            pkg = _package(path)
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            names = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else nearest(module)
                     for a in node.names]
        out.update(n for n in names if n is not None)
    return out


def _import_graph() -> dict[str, set[str]]:
    known = {_module(p) for p in _sources()}
    return {_module(p): _module_imports(p, known) - {_module(p)} for p in _sources()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_no_import_cycle():
    """No cycle among the modules of portfolio/ and plugins/, lazy imports included: a cycle makes
    the import order matter and the two modules one unit in all but name."""
    cycle = _find_cycle(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _find_cycle(graph) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
    known = {_module(p) for p in _sources()}
    assert "portfolio.toulbar2.child" in known and "portfolio_plugins.toulbar2" in known
    resolved = _module_imports(REPO / "plugins" / "bound.py", known)
    assert "portfolio.toulbar2.bound" in resolved and "portfolio.kernels.bound" in resolved
