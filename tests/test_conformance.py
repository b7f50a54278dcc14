"""One conformance suite over every registered backend, built-in and the example plugin: the
contract (names, declarations, availability), the options each declares (well formed, every
default accepted, given values reaching ``solve``, unknown ones refused before a run), and, for
backends that declare deterministic support, the same plan twice at a small work budget."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from portfolio.backend import Capabilities, Status, declared
from portfolio.backend_options import OptionError, resolve
from portfolio.generate import generate_problem
from portfolio.options import RunOptions
from portfolio.registry import Registry
from portfolio.runner import run_portfolio

from conftest import REPO

PLUGIN = REPO / "plugins" / "example-plugin"


def _registry() -> Registry:
    sys.path.insert(0, str(PLUGIN))
    try:
        import portfolio_example_plugin
    finally:
        sys.path.remove(str(PLUGIN))
    return Registry(plugins=[portfolio_example_plugin])


REGISTRY = _registry()
NAMES = [info.backend.name for info in REGISTRY.infos() if not info.meta.test_only]


@pytest.fixture(params=NAMES)
def info(request):
    return REGISTRY.info(request.param)


def test_the_example_plugin_and_every_built_in_are_checked():
    assert {"example", "minusage", "greedy", "localsearch", "bound", "cpsat", "maxsat",
            "toulbar2", "mip"} <= set(NAMES)


def test_the_contract(info):
    backend = info.backend
    assert isinstance(backend.name, str) and backend.name and "," not in backend.name
    assert isinstance(backend.description, str) and "\n" not in backend.description
    assert isinstance(backend.capabilities, Capabilities)
    meta, problems = declared(backend)
    assert problems == [], problems          # its declarations as written are all taken
    assert meta == info.meta
    ok, why = REGISTRY.available([backend])[0]
    assert ok, why                           # every engine comes with the plain install


def test_every_declared_option_is_well_formed_and_its_defaults_accepted(info):
    options = info.meta.options
    assert len({o.name for o in options}) == len(options)
    for option in options:
        assert option.problems() == []
        for budget in (1.0, 10.0, 60.0, 240.0, None):
            value = option.default_for(budget)
            assert option.check(value) == value
            text = str(value).lower() if isinstance(value, bool) else str(value)
            assert option.parse(text) == value   # what --option would give
        assert option.describe()["help"]


def test_unknown_and_bad_options_are_refused_before_a_run(info):
    problem = generate_problem(20, seed=1)
    with pytest.raises(OptionError, match=f"unknown option {info.backend.name}.no_such_option"):
        run_portfolio(problem, [info.backend],
                      RunOptions(time_limit=5, backend_options={info.backend.name:
                                                                {"no_such_option": 1}}))
    for option in info.meta.options:
        bad = "not a value" if option.kind != "choice" else 12345
        with pytest.raises(OptionError, match=f"option {info.backend.name}.{option.name}"):
            run_portfolio(problem, [info.backend], RunOptions(
                time_limit=5, backend_options={info.backend.name: {option.name: bad}}))


def test_given_options_reach_the_backend_and_are_recorded(info):
    """Each option given at a value other than the run's default (where one is allowed) is what
    the run records as in effect, and the backend still answers with an honest status."""
    options = info.meta.options
    given = {}
    for option in options:
        default = option.default_for(5.0)
        other = _another_value(option, default)
        if other is not None:
            given[option.name] = other
    problem = generate_problem(30, seed=2)
    result = run_portfolio(problem, [info.backend], RunOptions(
        time_limit=6, early_stop=False,
        backend_options={info.backend.name: given} if given else {}))
    assert result.options[info.backend.name] == resolve(options, given, 6.0)
    run = result.runs[info.backend.name]
    # never an error or a rejected answer (a timeout is the runner's containment of a slow
    # backend on a loaded machine, not a breach of the contract)
    assert run.status in (Status.FEASIBLE, Status.OPTIMAL, Status.NO_SOLUTION, Status.UNSUPPORTED,
                          Status.INFEASIBLE_PROVEN, Status.TIMEOUT), (run.status, run.note)


def _another_value(option, default):
    if option.kind == "bool":
        return not default
    if option.kind == "choice":
        return next((c for c in option.choices if c != default), None)
    if option.name.startswith("max_") and default == 0:   # "0: no cap": a small cap instead
        return 2
    low = option.low if option.low is not None else default
    high = option.high if option.high is not None else default * 2 + 1
    mid = (low + high) / 2 if option.kind == "float" else int((low + high) // 2)
    return mid if mid != default else None


@pytest.fixture(params=[n for n in NAMES if REGISTRY.info(n).meta.deterministic])
def deterministic(request):
    return REGISTRY.info(request.param)


def test_deterministic_backends_give_the_same_plan_twice(deterministic):
    problem = generate_problem(200, seed=3, forbidden_fraction=0.0)
    options = RunOptions(time_limit=120, work=1500, seed=4, presolve=True)
    first, second = (run_portfolio(problem, [deterministic.backend], options) for _ in range(2))
    assert first.deterministic["complete"], first.deterministic
    assert second.deterministic["complete"], second.deterministic
    assert first.deterministic["identity"] == second.deterministic["identity"]
    assert (first.solution is None) == (second.solution is None)
    if first.solution is not None:
        assert np.array_equal(first.solution, second.solution)
