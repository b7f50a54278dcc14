"""Budgets end to end: ``--objective peak``, infeasible explained, ``tradeoff`` and ``--budgets``,
on tiny instances against brute force (the runner settles them by scoring every plan, so each
run is exact and quick) and through the CLI."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import write_json
from portfolio.api import choose_backends, run
from portfolio.errors import ProblemError
from portfolio.evaluate import evaluate
from portfolio.memory.budgets import at_budget, parse_budgets
from portfolio.memory.tradeoff import run_tradeoff
from portfolio.options import RunOptions
from portfolio.problem import Capacity
from tiny import brute_peaks, make_problem, tiny

CASES = settings(max_examples=60, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])
"""Every drawn instance reaches an assertion: the oracle (``tiny.brute_peaks``, every plan scored
in plain Python) decides which one, never the result under test."""


class Oracle:
    """What brute force says about a tiny instance's memory, whatever its capacity."""

    def __init__(self, problem) -> None:
        plans = brute_peaks(problem)
        self.clean = [(peak, cost) for _, cost, forbidden, peak in plans if not forbidden]
        self.peaks = [peak for *_, peak in plans]
        self.by_plan = {tuple(plan): (cost, forbidden, peak) for plan, cost, forbidden, peak in plans}
        self.least = min((p for p, _ in self.clean), default=None)
        """The least peak of a plan without forbidden choices (None: every plan is forbidden)."""

    def of(self, plan) -> tuple:
        """(cost, has a forbidden choice, peak) of ``plan`` by brute force."""
        return self.by_plan[tuple(int(s) for s in plan)]

    def cheapest_within(self, budget: int):
        """The cheapest plan without forbidden choices that fits ``budget``, or None."""
        return min((c for p, c in self.clean if p <= budget), default=None)

    def any_fits(self, budget: int) -> bool:
        """Whether some plan fits ``budget``, forbidden choices allowed: when none does, the
        runner's enumeration of a tiny instance proves the budget infeasible."""
        return any(p <= budget for p in self.peaks)


def options(seconds: float = 20.0, **kw) -> RunOptions:
    return RunOptions(seconds, presolve=False, exhaustive=True, **kw)


def greedy():
    return choose_backends("greedy")


def contest_shaped(p) -> bool:
    return p.is_contest_shaped and p.usage_limit is not None


# ------------------------------------------------------------------------------------------ budgets
def test_budget_values_absolute_fractions_and_percent():
    assert parse_budgets("0.9,1.0,110%,500", 1000) == [500, 900, 1000, 1100]
    assert parse_budgets([0.5, 700, "1/4"], 1000) == [250, 500, 700]


@pytest.mark.parametrize("text, why", [
    ("0.9,,1.1", "value 1 ('') is empty"), ("0.9,abc", "value 1 ('abc') is not a number"),
    ("-5", "value 0 ('-5') must be positive"), ("0", "must be positive"),
    ("0.0000001", "gives a budget of 0"), ("1e40", "above the largest limit")])
def test_bad_budget_values_get_one_clear_line(text, why):
    with pytest.raises(ProblemError, match=re.escape(why)) as err:
        parse_budgets(text, 1000)
    assert str(err.value).startswith("budgets: value ")


def test_a_fraction_needs_a_limit():
    with pytest.raises(ProblemError, match="no single memory limit"):
        parse_budgets("0.9", None)
    assert parse_budgets("12", None) == [12]


# ------------------------------------------------------------------------------------------ peak
@CASES
@given(tiny(general=False, max_nodes=4))
def test_objective_peak_finds_the_least_peak_and_its_cheapest_plan(problem):
    oracle = Oracle(problem)
    result = run(problem, greedy(), options(objective="peak"))
    doc = result.memory
    assert doc["objective"] == "peak"
    if oracle.least is None:   # every plan takes a forbidden choice: no least peak to find
        assert doc["least_peak"] is None and doc["bound"]["value"] is None, doc
        assert result.solution is None or result.evaluation.has_forbidden
        assert doc["text"].startswith("No plan without forbidden choices was found"), doc
    else:
        assert doc["least_peak"] == oracle.least, doc
        assert result.cost == oracle.cheapest_within(oracle.least)
        assert oracle.of(result.solution) == (result.cost, False, oracle.least)
        assert doc["bound"]["value"] <= oracle.least


def test_objective_peak_is_refused_in_deterministic_mode():
    with pytest.raises(ProblemError, match="objective: 'peak' is not supported in deterministic"):
        RunOptions(10, objective="peak", deterministic=True)
    with pytest.raises(ProblemError, match="objective: expected one of cost, peak"):
        RunOptions(10, objective="memory")


# ------------------------------------------------------------------------------------------ explain
@CASES
@given(tiny(general=False, max_nodes=4))
def test_infeasible_explained_against_brute_force(problem):
    oracle = Oracle(problem)
    if oracle.least is None:   # not a memory question: every plan takes a forbidden choice
        result = run(problem, greedy(), options(5))
        assert result.solution is None or result.evaluation.has_forbidden
        assert result.memory["verdict"] == "every plan is forbidden", result.memory
        assert result.memory["bound"]["value"] is None
    elif oracle.least == 0:    # no budget below the least peak: a plan fits, nothing to explain
        result = run(at_budget(problem, 0), greedy(), options(5))
        assert result.cost == oracle.cheapest_within(0) and result.memory is None
    else:                      # one unit below the least peak: no plan without forbidden choices fits
        limit = oracle.least - 1
        result = run(at_budget(problem, limit), greedy(), options(5))
        doc = result.memory
        assert result.solution is None or result.evaluation.has_forbidden
        assert doc["limit"] == limit and doc["bound"]["value"] <= oracle.least, doc
        # the runner's repair may find no plan without forbidden choices (it ignores edges on one
        # node): then no best, never a wrong one
        assert doc["best"] is None or doc["best"]["peak"] >= oracle.least, doc
        if not oracle.any_fits(limit):
            # no plan at all fits: the runner's enumeration proves it, whatever the bound says
            assert doc["verdict"] == "proven infeasible", doc
        else:
            # only plans with forbidden choices fit: no claim can exist, the certified bound decides
            assert result.infeasible_proven_by is None
            certified = doc["bound"]["value"] > limit
            assert doc["verdict"] == ("proven infeasible" if certified else "not found in time"), doc
        assert f"{doc['bound']['value']:,}" in doc["text"]


def test_proof_by_the_certified_bound_names_both_figures():
    # forbidden pair: the trivial bound (3) fits the limit 10, the pair bound (11) does not
    p = make_problem(costs=[[0, 0], [0, 0]], intervals=[(0, 2), (1, 3)], usages=[[1, 10], [2, 10]],
                     edges=[[0, 1]], tables=[[10**18, 0, 0, 0]], capacity=Capacity.uniform(10))
    result = run(p, greedy(), options(5))
    doc = result.memory
    assert result.solution is None or result.evaluation.has_forbidden
    assert doc["verdict"] == "proven infeasible" and doc["bound"]["value"] == 11
    assert doc["best"]["peak"] == 11 and doc["best"]["time"] == 1
    assert "limit 10" in doc["text"] and "11" in doc["text"]


# ------------------------------------------------------------------------------------------ tradeoff
@CASES
@given(tiny(general=False, max_nodes=4))
def test_each_tradeoff_point_is_the_optimum_at_its_budget(problem):
    oracle = Oracle(problem)
    peaks = sorted({p for p, _ in oracle.clean}) or [1, 10]
    budgets = sorted({max(1, peaks[0] - 1), *peaks[:4]})
    out = run_tradeoff(problem, greedy(), options(4 * len(budgets)), budgets)
    assert [point.budget for point in out.points] == budgets
    floor = out.least_peak_bound.value
    costs = []
    for point in out.points:
        cheapest = oracle.cheapest_within(point.budget)
        if cheapest is not None:   # enumerated at its budget: the optimum, proven
            assert (point.cost, point.status) == (cheapest, "optimal"), (point, cheapest)
            costs.append(point.cost)
        else:
            # infeasible when proven: below the certified bound (None: no plan without forbidden
            # choices at all), or no plan at all fits (enumeration); else none found
            proven = floor is None or point.budget < floor or not oracle.any_fits(point.budget)
            assert point.cost is None and point.status == ("infeasible" if proven else "none"), point
    assert costs == sorted(costs, reverse=True)   # monotone: more memory never costs more


# ------------------------------------------------------------------------------------------ CLI
def test_cli_bad_budgets_exit_2_with_one_line(tmp_path, bundled_example, portfolio_cli):
    runs = tmp_path / "runs"
    runs.mkdir()
    res = portfolio_cli.run("tradeoff", bundled_example, "--budgets", "0.9,x", "-t", "5",
                            "--runs-dir", runs)
    assert res.returncode == 2, res.stderr
    assert "budgets: value 1 ('x') is not a number" in res.stderr
    assert "Traceback" not in res.stderr and not any(runs.iterdir())


def test_cli_tradeoff_json_saves_a_run_report_reads(tmp_path, bundled_example, portfolio_cli):
    res = portfolio_cli.run("tradeoff", bundled_example, "--budgets", "0.5,0.9,1.0,60",
                            "-t", "8", "--json", "--runs-dir", tmp_path, "--name", "t1")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = doc["rows"]
    assert [r["budget"] for r in rows] == [35, 60, 63, 70]
    assert [r["own_limit"] for r in rows] == [False, False, False, True]
    costs = [r["cost"] for r in rows if r["cost"] is not None]
    assert costs == sorted(costs, reverse=True)
    for r in rows:
        assert set(r) >= {"budget", "cost", "bound", "status", "plan"}
    again = portfolio_cli.run("tradeoff", bundled_example, "--budgets", "1.0", "-t", "3",
                              "--runs-dir", tmp_path, "--name", "t1")
    assert again.returncode == 2 and "already exists" in again.stderr
    rep = portfolio_cli.run("report", tmp_path / "t1", "--format", "json")
    assert rep.returncode == 0, rep.stderr
    saved = json.loads(rep.stdout)   # the tradeoff as saved, read back: the same rows
    assert [r["budget"] for r in saved["rows"]] == [35, 60, 63, 70]
    assert [r["cost"] for r in saved["rows"]] == [r["cost"] for r in rows]


def test_cli_solve_explains_an_infeasible_limit(tmp_path, bundled_example, portfolio_cli):
    doc = json.loads(open(bundled_example).read())
    doc["problem"]["usage_limit"] = 20
    path = write_json(tmp_path / "low.json", doc)
    res = portfolio_cli.run("solve", path, "-t", "5", "--json")
    assert res.returncode == 1
    memory = json.loads(res.stdout)["memory"]
    assert memory["verdict"] == "proven infeasible" and memory["bound"]["value"] > 20
    assert "memory: No plan without forbidden choices fits the limit 20" in res.stderr.replace("\n", " ")


def test_a_probe_ends_at_its_first_plan_that_fits(bundled_example):
    from portfolio.api import load
    from portfolio.memory.objective import _probe

    problem = load(bundled_example)
    plan, claim = _probe(problem, 70, choose_backends("greedy,localsearch"),
                         RunOptions(10, exhaustive=False), 10, None)
    ev = evaluate(at_budget(problem, 70), plan)
    assert ev.feasible and not ev.has_forbidden and claim is None
    plan, claim = _probe(problem, 1, choose_backends("greedy"), RunOptions(3, exhaustive=True),
                         3, None)
    assert plan is None
