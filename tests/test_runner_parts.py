"""The runner is made of parts, not mixins (issue 43; docs/architecture.md, "The runner's parts").

``Portfolio`` composes objects that own their state and talk through constructor arguments and
method calls. Read from the source with ``ast`` (nothing is imported), three rules keep it so:

(a) ``Portfolio`` has no base class (nor does any runner class stack up two runner classes: that is
    a mixin assembly by another name);
(b) no module reads a private attribute of anything but ``self``/``cls`` (``part._state`` is the
    part's own business: ask it through a method);
(c) no module imports a private name from a sibling (``from .launch import _Presolve``): a shared
    name is public, a private one stays in its module;
(d) a backend run's row (:class:`~portfolio.runner.result.BackendRun`) has one writer, its owner
    :class:`~portfolio.runner.rows.Rows` (``rows.py``): no other module assigns a row's field
    (``run.status = ...``, ``run.note += ...``) or changes a list of it (``run.claims.append``), so
    the next rule about a row's status is written in one place (issue 47).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

RUNNER = REPO / "portfolio" / "runner"

STDLIB_PRIVATE = {("os", "_exit")}
"""Underscored names that are the standard library's documented API, not anyone's private state:
a forked child leaves with ``os._exit`` (no atexit handlers, no flushing the parent's buffers)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _bases(tree: ast.Module) -> dict[str, list[str]]:
    """Each class of a module with the names of its bases (``a.B`` gives ``B``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            out[node.name] = [b.id if isinstance(b, ast.Name) else
                              b.attr if isinstance(b, ast.Attribute) else ast.unparse(b)
                              for b in node.bases] + [k.arg or "**" for k in node.keywords]
    return out


ROW_OWNER = "rows.py"
"""The one module that writes the rows (rule (d))."""

LIST_CHANGES = {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}


def _row_fields() -> set[str]:
    """The fields of a backend run's row, read from ``result.py``'s ``BackendRun``."""
    tree = ast.parse((RUNNER / "result.py").read_text())
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "BackendRun")
    return {n.target.id for n in cls.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def _written(node: ast.AST) -> list[ast.Attribute]:
    """The attributes ``node`` assigns (tuple targets included) or whose list it changes."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in LIST_CHANGES and isinstance(node.func.value, ast.Attribute):
        targets = [node.func.value]
    out: list[ast.Attribute] = []
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        elif isinstance(target, ast.Attribute):
            out.append(target)
    return out


def row_writes(folder: Path, fields: set[str]) -> list[str]:
    """Every write of a row's field outside its owner (rule (d)): ``x.field = ...`` with ``field``
    one of ``fields`` and ``x`` not ``self``/``cls`` (a class's own attribute of the same name)."""
    out = []
    for path in sorted(folder.glob("*.py")):
        if path.name == ROW_OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _written(node):
                owner = target.value
                if target.attr in fields and not (isinstance(owner, ast.Name)
                                                  and owner.id in ("self", "cls")):
                    out.append(f"{path.name}:{node.lineno}: (d) {ast.unparse(target)} written "
                               f"outside {ROW_OWNER}")
    return sorted(set(out))


def violations(folder: Path) -> list[str]:
    """Every breach of the rules (a), (b), (c) in the runner package at ``folder``, one line each
    (file:line and what), sorted; empty when the runner is made of parts."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(folder.glob("*.py"))}
    classes = {path: _bases(tree) for path, tree in trees.items()}
    runner_classes = {name for per_file in classes.values() for name in per_file}
    out: list[str] = []
    core = classes.get(folder / "core.py", {})
    if "Portfolio" not in core:
        out.append("core.py: no class Portfolio")
    elif [b for b in core["Portfolio"] if b != "object"]:
        out.append(f"core.py: (a) Portfolio has bases {core['Portfolio']}")
    for path, tree in trees.items():
        for name, bases in classes[path].items():
            mixed = [b for b in bases if b in runner_classes]
            if len(mixed) > 1:
                out.append(f"{path.name}: (a) class {name} is assembled from runner classes {mixed}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                owner = node.value
                if isinstance(owner, ast.Name) and (
                        owner.id in ("self", "cls") or (owner.id, node.attr) in STDLIB_PRIVATE):
                    continue
                out.append(f"{path.name}:{node.lineno}: (b) {ast.unparse(node)} reads another "
                           f"object's private attribute")
            elif isinstance(node, ast.ImportFrom) and (
                    node.level > 0 or (node.module or "").startswith("portfolio")):
                for alias in node.names:
                    if _private(alias.name):
                        out.append(f"{path.name}:{node.lineno}: (c) from "
                                   f"{'.' * node.level}{node.module or ''} import {alias.name}")
    return sorted(out)


def test_the_runner_is_made_of_parts():
    assert RUNNER.is_dir()
    found = violations(RUNNER)
    assert found == [], "\n".join(found)


def test_only_the_rows_write_a_row():
    fields = _row_fields()
    assert {"status", "note", "safety_net", "claims", "lower_bound"} <= fields
    assert (RUNNER / ROW_OWNER).is_file()
    found = row_writes(RUNNER, fields)
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source", [
    "def f(run):\n    run.status = 1\n", "def f(run):\n    run.note += 'x'\n",
    "def f(w):\n    w.run.phase, x = 'solve', 1\n", "def f(run, c):\n    run.claims.append(c)\n",
    "def f(run):\n    run.safety_net: bool = True\n",
])
def test_the_row_rule_catches_each_write(tmp_path, source):
    (tmp_path / "launch.py").write_text(source)
    (tmp_path / ROW_OWNER).write_text(source)    # the owner may
    found = row_writes(tmp_path, {"status", "note", "phase", "claims", "safety_net"})
    assert len(found) == 1 and found[0].startswith("launch.py:2: (d)"), found


def test_the_row_rule_lets_others_be(tmp_path):
    (tmp_path / "crew.py").write_text(
        "class Worker:\n    def __init__(self):\n        self.status = 1\n"
        "def f(worker, run, track):\n    worker.done = True\n    track.ended = True\n"
        "    x = run.status\n    run.claims.count(1)\n")
    assert row_writes(tmp_path, {"status", "note", "claims"}) == []


def test_portfolio_composes_its_parts():
    """The rule (a) at run time too: Portfolio's only base is object."""
    from portfolio.runner import Portfolio

    assert Portfolio.__bases__ == (object,)


@pytest.mark.parametrize("source, rule", [
    ("class A:\n    pass\nclass B:\n    pass\nclass Portfolio(A, B):\n    pass\n", "(a)"),
    ("class Portfolio(Base):\n    pass\n", "(a) Portfolio"),
    ("class Portfolio:\n    pass\nclass A:\n    pass\nclass B:\n    pass\nclass C(A, B):\n    pass\n",
     "(a) class C"),
    ("class Portfolio:\n    def f(self, part):\n        return part._state\n", "(b) part._state"),
    ("class Portfolio:\n    def f(self):\n        return self.part._state\n", "(b) self.part._state"),
    ("from .launch import _Presolve\nclass Portfolio:\n    pass\n", "(c) from .launch import _Presolve"),
    ("from portfolio.runner.supervise import Worker, _Worker\nclass Portfolio:\n    pass\n",
     "(c) from portfolio.runner.supervise import _Worker"),
])
def test_the_rules_catch_each_breach(tmp_path, source, rule):
    (tmp_path / "core.py").write_text(source)
    found = violations(tmp_path)
    assert found and all(rule in line for line in found), found


def test_the_rules_let_parts_be(tmp_path):
    """What parts may do: read their own privates, dunders, ``os._exit``, extend one runner class
    (a reporter that extends another), import public names."""
    (tmp_path / "worker.py").write_text("class PipeReporter:\n    pass\n")
    (tmp_path / "core.py").write_text(
        "import os\nfrom .worker import PipeReporter\n"
        "class Points(PipeReporter):\n    pass\n"
        "class Portfolio:\n    def __init__(self):\n        self._x = type(self).__name__\n"
        "    @classmethod\n    def make(cls):\n        return cls._y\n"
        "    def quit(self):\n        os._exit(0)\n")
    assert violations(tmp_path) == []


@pytest.mark.parametrize("deterministic", [False, True])
def test_what_a_hook_reads_is_there_in_both_modes(deterministic):
    """What ``on_update`` hooks read of the run (the live table of :mod:`portfolio.progress`, the
    incumbent, the clock, the exchange point) is read from the parts on a real run, and the last
    turn's view agrees with the result."""
    import io

    from rich.console import Console

    import det_backends as db
    from portfolio.generate import generate_problem
    from portfolio.options import RunOptions
    from portfolio.progress import live_table
    from portfolio.runner import run_portfolio

    problem = generate_problem(150, seed=1)
    seen: list[tuple[str, object, float, int]] = []

    def hook(runner) -> None:
        console = Console(width=200, file=io.StringIO(), record=True)
        console.print(live_table(runner))
        seen.append((console.export_text(), runner.incumbent(), runner.now(), runner.settled_point))

    options = (RunOptions(time_limit=30.0, deterministic=True, work=4_000, extra_seeds=False)
               if deterministic else RunOptions(time_limit=3.0, extra_seeds=False))
    result = run_portfolio(problem, [db.NodeSearch(), db.EdgeSearch()], options, on_update=hook)
    assert len(seen) >= 2 and result.cost is not None
    text, found, now, point = seen[-1]
    assert "det-node" in text and "det-edge" in text and "s left" in text, text
    assert ("exchange point" in text) == deterministic, text
    assert found is not None and found[0] >= result.cost   # the answer is never worse than seen
    assert 0.0 < now <= result.elapsed
    assert [s[2] for s in seen] == sorted(s[2] for s in seen)
    if deterministic:
        assert 0 < point <= result.deterministic["points"]
    else:
        assert point == 0
