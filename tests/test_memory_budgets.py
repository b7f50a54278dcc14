"""Budgets end to end: ``--objective peak``, infeasible explained, ``tradeoff`` and ``--budgets``,
on tiny instances against brute force (the runner settles them by scoring every plan, so each
run is exact and quick) and through the CLI."""

from __future__ import annotations

import json
import re
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import run_script, write_json
from portfolio.api import choose_backends, run
from portfolio.errors import ProblemError
from portfolio.evaluate import evaluate
from portfolio.memory.budgets import at_budget, parse_budgets
from portfolio.memory.tradeoff import run_tradeoff
from portfolio.options import RunOptions
from portfolio.problem import Capacity
from tiny import make_problem, tiny

FIXED = settings(max_examples=6, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def scored(problem):
    """(peak, cost) of every plan without forbidden choices, in plain Python."""
    free = at_budget(problem, None)
    out = []
    for plan in product(*(range(int(k)) for k in problem.strategy_counts)):
        ev = evaluate(free, list(plan))
        if not ev.has_forbidden:
            out.append((ev.peak_usage, ev.cost))
    return out


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
@FIXED
@given(tiny(general=False, max_nodes=4))
def test_objective_peak_finds_the_least_peak_and_its_cheapest_plan(problem):
    plans = scored(problem)
    if not plans:
        return
    least = min(p for p, _ in plans)
    cheapest = min(c for p, c in plans if p == least)
    result = run(problem, greedy(), options(objective="peak"))
    doc = result.memory
    assert doc["objective"] == "peak" and doc["least_peak"] == least, doc
    assert result.cost == cheapest and doc["bound"]["value"] <= least
    assert evaluate(at_budget(problem, least), result.solution).feasible


def test_objective_peak_is_refused_in_deterministic_mode():
    with pytest.raises(ProblemError, match="objective: 'peak' is not supported in deterministic"):
        RunOptions(10, objective="peak", deterministic=True)
    with pytest.raises(ProblemError, match="objective: expected one of cost, peak"):
        RunOptions(10, objective="memory")


# ------------------------------------------------------------------------------------------ explain
@FIXED
@given(tiny(general=False, max_nodes=4))
def test_infeasible_explained_against_brute_force(problem):
    plans = scored(problem)
    if not plans:
        return
    least = min(p for p, _ in plans)
    tight = at_budget(problem, least - 1) if least > 0 else None
    if tight is None:
        return
    result = run(tight, greedy(), options(5))
    assert result.solution is None or result.evaluation.has_forbidden
    doc = result.memory
    assert doc["bound"]["value"] <= least and doc["limit"] == least - 1
    assert doc["best"]["peak"] >= least
    proven = doc["bound"]["value"] > least - 1 or bool(result.infeasible_proven_by)
    assert doc["verdict"] == ("proven infeasible" if proven else "not found in time")
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
@FIXED
@given(tiny(general=False, max_nodes=4))
def test_each_tradeoff_point_is_the_optimum_at_its_budget(problem):
    plans = scored(problem)
    if not plans:
        return
    peaks = sorted({p for p, _ in plans})
    budgets = sorted({max(1, peaks[0] - 1), *peaks[:4]})
    out = run_tradeoff(problem, greedy(), options(4 * len(budgets)), budgets)
    costs = []
    for point in out.points:
        fitting = [c for p, c in plans if p <= point.budget]
        if fitting:
            assert point.cost == min(fitting), (point, fitting)
            assert point.status in ("optimal", "feasible")
            costs.append(point.cost)
        else:
            assert point.cost is None and point.status in ("infeasible", "none")
    assert costs == sorted(costs, reverse=True)   # monotone: more memory never costs more


# ------------------------------------------------------------------------------------------ CLI
def test_cli_bad_budgets_exit_2_with_one_line(tmp_path, bundled_example):
    res = run_script("portfolio", "tradeoff", bundled_example, "--budgets", "0.9,x", "-t", "5",
                     "--runs-dir", tmp_path)
    assert res.returncode == 2, res.stderr
    assert "budgets: value 1 ('x') is not a number" in res.stderr
    assert "Traceback" not in res.stderr and not any(tmp_path.iterdir())


def test_cli_tradeoff_json_saves_a_run_report_reads(tmp_path, bundled_example):
    res = run_script("portfolio", "tradeoff", bundled_example, "--budgets", "0.5,0.9,1.0,60",
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
    again = run_script("portfolio", "tradeoff", bundled_example, "--budgets", "1.0", "-t", "3",
                       "--runs-dir", tmp_path, "--name", "t1")
    assert again.returncode == 2 and "already exists" in again.stderr
    rep = run_script("portfolio", "report", tmp_path / "t1", "--format", "json")
    assert rep.returncode == 0, rep.stderr
    saved = json.loads(rep.stdout)   # the tradeoff as saved, read back: the same rows
    assert [r["budget"] for r in saved["rows"]] == [35, 60, 63, 70]
    assert [r["cost"] for r in saved["rows"]] == [r["cost"] for r in rows]


def test_cli_solve_explains_an_infeasible_limit(tmp_path, bundled_example):
    doc = json.loads(open(bundled_example).read())
    doc["problem"]["usage_limit"] = 20
    path = write_json(tmp_path / "low.json", doc)
    res = run_script("portfolio", "solve", path, "-t", "5", "--json")
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
