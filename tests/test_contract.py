"""The backend contract as declared (issue 30): ``BackendMeta`` read through ``declared``, plugins
called through pluggy's hook, engine versions recorded, and the clock rule in the backends' code."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import types
from importlib.metadata import version
from pathlib import Path

import pluggy
import pytest
from click.testing import CliRunner

from conftest import REPO, bundled_example_path
from portfolio.backend import (PLAIN_ATTRIBUTES_REMOVED_IN, Backend, BackendMeta, Capabilities,
                               NullReporter, SolveResult, Status, declared, engine_versions,
                               options_of)
from portfolio.backend_options import Option
from portfolio.hookspecs import hookimpl
from portfolio.registry import Registry, RegistryError


class Plain(Backend):
    description = "a test backend"

    def __init__(self, name: str, **meta: object) -> None:
        self.name = name
        if meta:
            self.meta = BackendMeta(**meta)  # type: ignore[arg-type]

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, problem.min_usage_strategies.copy())


class Duck:
    """A backend that does not subclass Backend and declares nothing."""

    name = "duck"
    description = "duck-typed"
    capabilities = Capabilities()

    def available(self):
        return True, ""

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.NO_SOLUTION)


def plugin(name: str, *backends: object) -> types.ModuleType:
    """A plugin module named ``name`` whose hook returns ``backends``."""
    module = types.ModuleType(name)
    module.portfolio_backends = hookimpl(lambda: list(backends))
    return module


def registry(*plugins: object) -> Registry:
    return Registry(plugins=plugins, load_entry_points=False)


def _declared_default(reg: Registry) -> list[str]:
    """The backends whose declarations ask for the default set (an outside backend then joins it
    when a config adds it: tests/test_registry_outside.py)."""
    return sorted(i.backend.name for i in reg.infos() if i.meta.in_default)


# ------------------------------------------------------------------------------------------ the contract
def test_a_backend_without_meta_gets_every_default():
    assert declared(Duck()) == (BackendMeta(), [])
    reg = registry(plugin("ducks", Duck()))
    assert reg.warnings == [] and reg.info("duck").meta == BackendMeta()
    assert _declared_default(reg) == ["duck"]   # declares the default set by default


def test_wrong_typed_declarations_are_ignored_with_one_line_each():
    bad = Plain("bad", default="no", engines="ortools", requires=["json"], test_only=False)
    reg = registry(plugin("sloppy", bad))
    assert reg.names() == ["bad"]                       # still listed, its defaults stand
    assert reg.info("bad").meta == BackendMeta()
    assert _declared_default(reg) == ["bad"]
    assert len(reg.warnings) == 3 and all("\n" not in w for w in reg.warnings)
    assert all(w.startswith("sloppy: backend 'bad' meta.") for w in reg.warnings), reg.warnings
    assert any("meta.engines = 'ortools' is not tuple[str, ...]" in w for w in reg.warnings)


def test_a_meta_of_another_type_is_ignored_and_the_older_plain_attributes_are_honoured_for_now():
    """The plain-attribute form (the contract before ``BackendMeta``) is deprecated: honoured until
    the release that removes it, which every warning names."""
    class Dict(Plain):
        meta = {"default": False}   # type: ignore[assignment]

    class Old(Plain):
        test_only = True            # the declaration before BackendMeta: still keeps it out

    class OldOff(Plain):
        default = False

    class Both(Plain):
        meta = BackendMeta(engines=("numpy",))
        default = False             # beside a meta: ignored, the meta is the declaration

    class OldWrong(Plain):
        default = "no"

    with pytest.deprecated_call() as caught:
        reg = registry(plugin("olds", Dict("dict"), Old("old"), OldOff("off"), Both("both"),
                              OldWrong("wrong")))
    said = sorted(str(w.message).split(" outside meta")[0].rsplit(".", 1)[1] for w in caught)
    assert said == ["Old declares test_only", "OldOff declares default"]   # the honoured ones
    assert all(f"ignored from {PLAIN_ATTRIBUTES_REMOVED_IN}" in str(w.message) for w in caught)
    assert reg.info("dict").meta == BackendMeta()
    assert reg.info("old").meta == BackendMeta(test_only=True)
    assert reg.info("off").meta == BackendMeta(default=False)
    assert reg.info("both").meta == BackendMeta(engines=("numpy",))
    assert reg.info("wrong").meta == BackendMeta()
    assert _declared_default(reg) == ["both", "dict", "wrong"]
    assert any("'dict' meta is a dict, not a BackendMeta" in w for w in reg.warnings)
    assert any(f"'old' sets 'test_only' outside meta (the older contract, deprecated), honoured "
               f"until {PLAIN_ATTRIBUTES_REMOVED_IN}, which ignores it: declare "
               f"meta = BackendMeta(test_only=...)" in w for w in reg.warnings), reg.warnings
    assert any("'both' sets 'default' outside meta, ignored" in w for w in reg.warnings)
    assert any("'wrong' sets 'default' outside meta to 'no', not bool; ignored" in w
               for w in reg.warnings)
    assert all("\n" not in w for w in reg.warnings)


def test_the_deprecation_names_the_release_that_removes_it_on_every_path():
    """A plugin author's own test that calls the backend directly (``available``, ``options_of``)
    sees the warning too, naming the class; a backend with ``meta`` or with nothing declared, none."""
    class Old(Plain):
        default = False
        options = (Option("rounds", "int", 3, low=1, high=9, help="rounds"),)

    assert PLAIN_ATTRIBUTES_REMOVED_IN == "0.3.0"
    for call in (lambda: Old("old").available(), lambda: options_of(Old("old"), NullReporter()),
                 lambda: declared(Old("old"))):
        with pytest.deprecated_call(match=r"^test_contract\.Old declares default, options outside "
                                          r"meta, as plain class attributes: a form deprecated "
                                          r"since 0\.2\.0 and ignored from 0\.3\.0; declare "
                                          r"meta = BackendMeta"):
            call()
    with pytest.deprecated_call():
        assert options_of(Old("old"), NullReporter({"rounds": 5})) == {"rounds": 5}   # honoured
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        declared(Plain("new", default=False))
        declared(Duck())


def test_the_changelog_has_this_release_and_the_removal_it_announces():
    """CHANGELOG.md, the plugin author's record: an entry for the version being built, and the
    release that drops the old form as the code has it (the docs name the same one)."""
    import tomllib

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"\n## [{version}]" in changelog
    assert f"**Ignored from {PLAIN_ATTRIBUTES_REMOVED_IN}**" in changelog
    assert f"ignored from {PLAIN_ATTRIBUTES_REMOVED_IN}" in (REPO / "docs" / "plugins.md").read_text()
    for page in ("README.md", "docs/plugins.md"):
        assert "CHANGELOG.md" in (REPO / page).read_text(), page


OLD_FORM_ALLOWED = {"test_a_meta_of_another_type_is_ignored_and_the_older_plain_attributes_are_honoured_for_now",
                    "test_the_deprecation_names_the_release_that_removes_it_on_every_path"}
"""The tests of the deprecated form itself: the only places a backend may still use it."""


def _python_blocks(markdown: str) -> list[str]:
    return [b.split("\n", 1)[1] for b in markdown.split("```")[1::2] if b.startswith("python")]


def _classes(tree: ast.AST) -> list[tuple[ast.ClassDef, set[str], set[str], bool]]:
    """Each class of ``tree``: the node, its bases' names, the names its body sets or defines, and
    whether it sits inside a test of the old form."""
    allowed = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in OLD_FORM_ALLOWED]
    out = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        body = {t.id for st in cls.body if isinstance(st, (ast.Assign, ast.AnnAssign))
                for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
                if isinstance(t, ast.Name)}
        body |= {st.name for st in cls.body if isinstance(st, ast.FunctionDef)}
        bases = {getattr(b, "id", getattr(b, "attr", "")) for b in cls.bases}
        out.append((cls, bases, body, any(cls in ast.walk(f) for f in allowed)))
    return out


def _plain_declarations(trees: dict[str, ast.AST]) -> list[str]:
    """``where:line`` of each class-level assignment to a ``BackendMeta`` field in a backend class
    (one that defines ``solve``, ``capabilities`` or ``meta``, or derives from ``...Backend`` or
    from such a class of any of ``trees``), outside the tests of the old form."""
    names = {f.name for f in dataclasses.fields(BackendMeta)}
    classes = [(where, *c) for where, tree in trees.items() for c in _classes(tree)]
    backends = {"Backend"}
    while True:   # by name, across files: a helper base (Plain, _Test) and what derives from it
        more = {cls.name for _, cls, bases, body, _ in classes
                if body & {"solve", "capabilities", "meta"} or bases & backends
                or any(b.endswith("Backend") for b in bases)} - backends
        if not more:
            break
        backends |= more
    return sorted(f"{where}:{cls.lineno} {cls.name}.{n}"
                  for where, cls, bases, body, allowed in classes
                  if cls.name in backends and not allowed for n in sorted(body & names))


def test_nothing_but_the_tests_of_the_old_form_declares_outside_meta():
    """The built-ins, the example plugin, the test suite's backends and the docs' examples all
    declare through ``meta``: the deprecated form lives only in the tests that check it."""
    trees: dict[str, ast.AST] = {}
    for path in sorted([*REPO.glob("plugins/**/*.py"), *REPO.glob("portfolio/**/*.py"),
                        *REPO.glob("tests/**/*.py")]):
        trees[str(path.relative_to(REPO))] = ast.parse(path.read_text())
    for path in sorted([REPO / "README.md", *REPO.glob("docs/**/*.md"),
                        *REPO.glob("plugins/example-plugin/*.md")]):
        for i, block in enumerate(_python_blocks(path.read_text())):
            try:
                trees[f"{path.relative_to(REPO)} block {i + 1}"] = ast.parse(block)
            except SyntaxError:
                continue
    found = _plain_declarations(trees)
    assert not found, f"declare through meta = BackendMeta(...): {found}"
    bad = ast.parse("class Base:\n    def solve(self): ...\nclass X(Base):\n    default = False\n"
                    "class Option:\n    default = 1\n")
    assert _plain_declarations({"x": bad}) == ["x:3 X.default"]   # the check itself


def test_default_and_test_only_are_honoured_by_select_and_resolve():
    reg = registry(plugin("mixed", Plain("plain"), Plain("off", default=False),
                          Plain("probe", test_only=True)))
    assert reg.warnings == []
    assert _declared_default(reg) == ["plain"]
    assert reg.select(None) == []   # an outside backend's default=True alone does not do it
    assert [b.name for b in reg.select(None, add_to_default=("plain",))] == ["plain"]
    assert [b.name for b in reg.select(["off", "probe"])] == ["off", "probe"]   # by name only
    with pytest.raises(RegistryError) as err:
        reg.resolve(["nope"])
    assert err.value.args[0].endswith("available: off, plain")                    # no test backend
    rows = {r["name"]: r["default"] for r in reg.describe(add_to_default=("plain",))}
    assert rows == {"plain": True, "off": False, "probe": False}
    why = {r["name"]: r["default_why"] for r in reg.describe()}
    assert why["off"] == "declares default=False: runs only when named"
    assert why["probe"] == "a test's backend: runs only when named"
    assert why["plain"].startswith("from mixed (registered in code), not built in: runs when named")


def test_meta_requires_drives_available_and_the_pip_hint():
    missing = Plain("missing", requires=("no_such_module_xyz",), requirement="no-such-dist>=1")
    present = Plain("present", requires=("json",), requirement="json-dist")
    assert present.available() == (True, "")
    ok, why = missing.available()
    assert not ok and why.startswith("no-such-dist is not installed")
    assert "pip install 'no-such-dist>=1'" in why and "comes with" not in why  # not our dependency
    reg = registry(plugin("needy", missing, present))
    with pytest.raises(RegistryError, match=r"not available here: missing \(no-such-dist"):
        reg.resolve(["missing"])
    assert missing.meta.install_hint == "pip install 'no-such-dist>=1'"


# ------------------------------------------------------------------------------------------ the reporter
def _reporter_members() -> set[str]:
    """Every member the ``Reporter`` protocol declares (its own and ``PriceExchange``'s)."""
    from portfolio.backend import Reporter

    out: set[str] = set()
    for cls in Reporter.__mro__:
        if cls.__module__ in ("portfolio.backend", "portfolio.prices"):
            out |= {n for n in vars(cls) if not n.startswith("_")} | set(vars(cls).get("__annotations__", {}))
    return out | {"__call__"}


def test_every_reporter_has_every_declared_member():
    """The reporter's capabilities are declared, not optional: the null reporter and the runner's
    have each member of the protocol, the price methods, ``work`` and ``options`` included."""
    from multiprocessing import Pipe

    from portfolio.runner.points import PointReporter
    from portfolio.runner.worker import PipeReporter

    members = _reporter_members()
    assert {"best", "bound", "demand", "work", "options", "publish_prices", "shared_prices"} <= members
    mine, theirs = Pipe()
    try:
        runner = PipeReporter(mine, 0.0, None)
        runner.closed = True   # ends its flusher thread
        for reporter in (NullReporter(), NullReporter({"x": 1}), runner):
            assert not [m for m in members if not hasattr(reporter, m)], type(reporter).__name__
        assert all(hasattr(PointReporter, m) for m in members - {"work", "options"})
    finally:
        mine.close()
        theirs.close()

    class Mine(NullReporter):   # a reporter of one's own: a subclass, whole without super().__init__
        def __init__(self) -> None:
            self.plans: list = []

        def __call__(self, solution, note=""):
            self.plans.append(solution)

    assert Mine().options == {} and Mine().work is None and Mine().shared_prices("1:x") is None


PROBE_ROOTS = ("portfolio", "plugins")


def _probes(tree: ast.AST) -> list[int]:
    """Lines of ``getattr``/``hasattr`` calls on a reporter (``report``, ``reporter``,
    ``self.report``, ...)."""
    def named(node: ast.AST) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in ("getattr", "hasattr") and n.args
            and named(n.args[0]).lstrip("_") in ("report", "reporter")]


def test_no_reporter_member_is_probed_for():
    """Backends and the library read the reporter as declared: no ``getattr(report, ...,
    default)``, no ``hasattr(report, ...)`` (the old way of finding the optional price methods)."""
    found = [f"{path.relative_to(REPO)}:{line}"
             for root in PROBE_ROOTS for path in sorted((REPO / root).rglob("*.py"))
             for line in _probes(ast.parse(path.read_text()))]
    assert not found, f"read the reporter's declared members directly: {found}"
    assert _probes(ast.parse("x = getattr(report, 'work', None)\ny = hasattr(self._report, 'a')\n")) == [1, 2]


# ------------------------------------------------------------------------------------------ through pluggy
def test_each_plugin_is_called_through_the_plugin_manager_alone(monkeypatch):
    calls = []

    class Traced(pluggy.PluginManager):
        def __init__(self, project: str) -> None:
            super().__init__(project)
            self.add_hookcall_monitoring(
                lambda name, impls, kwargs: calls.append((name, [i.plugin for i in impls])),
                lambda outcome, name, impls, kwargs: None)

    monkeypatch.setattr(pluggy, "PluginManager", Traced)
    a, b = plugin("plugin_a", Plain("one")), plugin("plugin_b", Plain("two"))
    reg = registry(a, b)
    assert reg.names() == ["one", "two"]
    assert calls == [("portfolio_backends", [a]), ("portfolio_backends", [b])]


def test_a_plugins_own_wrapper_wraps_its_own_hook_and_no_other():
    def keep_shown():
        results = yield
        return [[b for b in found if b.name != "hidden"] for found in results]

    wrapping = plugin("wrapping", Plain("shown"), Plain("hidden"))
    wrapping.keep_shown = hookimpl(specname="portfolio_backends", wrapper=True)(keep_shown)
    reg = registry(wrapping, plugin("other", Plain("hidden2")))
    assert reg.names() == ["hidden2", "shown"] and reg.warnings == []


def test_a_hook_not_marked_as_hookimpl_is_named():
    module = types.ModuleType("unmarked")
    module.portfolio_backends = lambda: [Plain("never")]
    reg = registry(module, plugin("fine", Plain("fine")))
    assert reg.names() == ["fine"]
    assert reg.warnings == ["unmarked: portfolio_backends() is not marked @hookimpl "
                            "(portfolio.hookspecs); skipped"]


# ------------------------------------------------------------------------------------------ engine versions
def test_engine_versions_come_from_the_metadata_without_importing_an_engine():
    probe = ("import json, sys\n"
             "from portfolio.backend import engine_versions\n"
             "from portfolio.registry import Registry\n"
             "found = engine_versions(i.backend for i in Registry().infos())\n"
             "print(json.dumps([found, [m for m in ('ortools', 'pysat', 'pytoulbar2') "
             "if m in sys.modules]]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    found, imported = json.loads(out.stdout)
    assert imported == []
    for dist in ("ortools", "python-sat", "pytoulbar2", "numba", "numpy"):
        assert found[dist] == version(dist)
    assert engine_versions([Duck(), Plain("x", engines=("no-such-dist", "numpy"))]) == \
        {"numpy": version("numpy")}   # a missing one is left out


def test_backends_lists_each_engine_with_its_version():
    from portfolio.cli import cli

    env = {"COLUMNS": "1000"}
    doc = json.loads(CliRunner().invoke(cli, ["backends", "--json"], env=env).stdout)
    rows = {r["name"]: r for r in doc["backends"]}
    assert rows["cpsat"]["engines"] == {"ortools": version("ortools"), "numba": version("numba"),
                                        "numpy": version("numpy")}
    assert rows["maxsat"]["engines"]["python-sat"] == version("python-sat")
    assert rows["toulbar2"]["engines"]["pytoulbar2"] == version("pytoulbar2")
    assert rows["mip"]["engines"]["highspy"] == version("highspy")
    assert "load_errors" not in doc
    verbose = CliRunner().invoke(cli, ["backends", "--verbose"], env=env).output
    assert "engines" in verbose and f"ortools {version('ortools')}" in verbose
    assert "engines" not in CliRunner().invoke(cli, ["backends"], env=env).output


def test_solve_results_record_the_engines_of_their_backends():
    import portfolio

    result = portfolio.solve(bundled_example_path(), time_limit=3, backends=["minusage", "maxsat"])
    doc = result.to_dict()
    expected = {d: version(d) for d in ("numba", "numpy", "python-sat")}
    assert doc["engines"] == doc["run"]["engines"] == expected
    from portfolio.cli import cli

    out = CliRunner().invoke(cli, ["solve", str(bundled_example_path()), "-b", "minusage", "-t", "2",
                                   "--json", "-q"])
    assert json.loads(out.stdout)["engines"] == {"numpy": version("numpy")}


def test_run_records_carry_the_engine_versions():
    from portfolio.bench.environment import package_versions

    versions = package_versions()
    for dist in ("iopddl-portfolio", "ortools", "python-sat", "pytoulbar2", "highspy", "numba",
                 "numpy"):
        assert versions[dist] == version(dist)


# ------------------------------------------------------------------------------------------ the clock rule
BACKEND_CODE = sorted((REPO / "plugins").glob("*.py"))
BACKEND_CODE += sorted((REPO / "plugins" / "example-plugin" / "portfolio_example_plugin").glob("*.py"))
BACKEND_CODE += [REPO / "portfolio" / "kernels" / "engine.py", REPO / "portfolio" / "kernels" / "backend.py"]
BACKEND_CODE += [REPO / "portfolio" / "kernels" / "bound.py"]
BACKEND_CODE += sorted((REPO / "portfolio" / "exact").glob("*.py"))
for engine in ("toulbar2", "cpsat", "maxsat", "mip"):   # the engines of the thin backends
    BACKEND_CODE += sorted((REPO / "portfolio" / engine).glob("*.py"))


@pytest.mark.parametrize("path", BACKEND_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_backends_read_the_deadline_once_and_keep_time_on_the_monotonic_clock(path: Path):
    """The clock rule of docs/plugins.md: ``deadline`` only through ``time_left``, never
    ``time.time()``, never ``deadline - ...`` arithmetic."""
    tree = ast.parse(path.read_text(), str(path))
    wrong = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "time"
                and isinstance(node.value, ast.Name) and node.value.id == "time"):
            wrong.append(f"line {node.lineno}: time.time")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and any(
                isinstance(side, ast.Name) and side.id == "deadline" for side in (node.left, node.right)):
            wrong.append(f"line {node.lineno}: arithmetic on deadline")
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "deadline":
            wrong.append(f"line {node.lineno}: deadline changed")
    assert not wrong, f"{path.name}: {wrong}"
