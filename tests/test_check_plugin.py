"""``portfolio check-plugin`` and ``portfolio.testing``: an honest backend passes; every faulty and
hostile backend of the runner's own tests (tests/faulty_backends.py, tests/hostile/) is flagged, on
the check that fits what it does."""

from __future__ import annotations

import json

import pytest

import faulty_backends as fb
from conftest import REPO
from portfolio.errors import ProblemError
from portfolio.evaluate import evaluate
from portfolio.plugincheck import check_backend, check_instances
from portfolio.testing import CliResult, PortfolioCli, assert_backend_passes

HOSTILE = REPO / "tests" / "hostile"
PLUGIN = REPO / "plugins" / "example-plugin"


@pytest.fixture(scope="module")
def instances():
    return {i.name: i for i in check_instances()}


def test_the_instances_are_what_they_say(instances):
    forbidden = instances["forbidden"]
    least = evaluate(forbidden.problem, forbidden.problem.min_usage_strategies)
    assert least.feasible and least.forbidden_edge_entries == 8   # the trap
    assert forbidden.optimum == 734 and instances["example"].optimum == 305
    assert instances["generated"].clean and instances["generated"].known_cost is not None
    infeasible = instances["infeasible"].problem
    assert not evaluate(infeasible, infeasible.min_usage_strategies).feasible


def test_the_example_plugin_passes(monkeypatch, instances):
    monkeypatch.syspath_prepend(str(PLUGIN))
    from portfolio_example_plugin import ExampleBackend

    report = assert_backend_passes(ExampleBackend(), time_limit=3.0)
    costs = {o.instance.name: o.cost for o in report.backends[0].outcomes}
    assert costs["example"] == 305 and costs["infeasible"] is None
    assert costs["forbidden"] < 10**18    # a clean plan: the safe start


@pytest.mark.parametrize("backend, check", [
    (fb.Raises(), "runs"), (fb.Segfaults(), "runs"), (fb.Exits(), "runs"),
    (fb.Hangs(), "on time"), (fb.HangsSilently(), "on time"), (fb.PrepareHangs(), "on time"),
    (fb.WrongLength(), "valid output"), (fb.OutOfRange(), "valid output"),
    (fb.Infeasible(), "valid output"), (fb.BadStatus(), "valid output"),
    (fb.FalseOptimum(), "true claims"), (fb.FalseBound(), "true claims"),
    (fb.ClaimsInfeasible(), "true claims"), (fb.QuickFalseOptimum(), "true claims"),
    (fb.OptimumThenFalseBound(), "true claims"), (fb.PrepareRaises(), "runs"),
])
def test_each_faulty_backend_is_flagged(instances, backend, check):
    report = check_backend(backend, time_limit=3.0, instances=[instances["example"]])
    assert not report.ok
    assert check in {b.check for b in report.breaches}, report.text()
    with pytest.raises(AssertionError, match=check):
        assert_backend_passes(backend, time_limit=3.0, instances=[instances["example"]])


def test_an_exceptions_traceback_is_in_the_report(instances):
    report = check_backend(fb.Raises(), time_limit=3.0, instances=[instances["example"]])
    outcome = report.backends[0].outcomes[0]
    assert "boom in solve" in outcome.traceback and "faulty_backends.py" in outcome.traceback


def test_unknown_names_and_junk_are_refused():
    with pytest.raises(ProblemError, match="unknown backend or plugin 'no-such'"):
        check_backend("no-such")
    with pytest.raises(ProblemError, match="not a backend"):
        check_backend(object())


def _check_cli(cli: PortfolioCli, module: str, *args: str) -> CliResult:
    hostile = cli.configured(plugins=module, path=[HOSTILE], timeout=300)
    return hostile.run("check-plugin", module, "-t", "3", *args)


@pytest.mark.slow
@pytest.mark.parametrize("module, checks", [
    ("hostile_print", {"quiet stdout"}),
    ("hostile_float", {"valid output"}),
    ("hostile_available", {"registers"}),
    ("hostile_hook_raises", {"registers"}),
    ("hostile_hook_hangs", {"registers"}),
    ("hostile_junk", {"registers"}),
    ("hostile_impostor", {"registers", "no forbidden"}),
    ("hostile_memory", {"runs"}),
    ("hostile_spawn", {"on time", "runs"}),
])
def test_each_hostile_plugin_is_flagged_by_the_cli(module, checks, portfolio_cli):
    proc = _check_cli(portfolio_cli, module, "--json", "--memory-limit", "300M")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    found = {b["check"] for b in doc["registration"]}
    for backend in doc["backends"]:
        found |= {b["check"] for b in backend["registration"]}
        found |= {b["check"] for o in backend["instances"] for b in o["breaches"]}
    assert checks <= found, (found, proc.stderr)


def test_the_cli_passes_the_example_and_exits_0(portfolio_cli):
    example = portfolio_cli.configured(plugins="portfolio_example_plugin", path=[PLUGIN],
                                       env={"COLUMNS": "120"}, timeout=300)
    proc = example.run("check-plugin", "example", "-t", "3")
    assert proc.returncode == 0, proc.stderr
    assert "check-plugin example: no breach" in proc.stderr
    assert "BREACH" not in proc.stderr and proc.stdout == ""
