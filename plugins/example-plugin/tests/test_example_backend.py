"""Tests a plugin author can copy: call ``solve`` directly with a NullReporter (no runner, no install)."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio_example_plugin import ExampleBackend

EXAMPLE = Path(str(resources.files("portfolio.data") / "example.json"))  # 8 nodes, optimum 305


def solve(problem, seconds=0.3, seed=0, warm_start=None):
    report = NullReporter()
    deadline = time.time() + seconds
    result = ExampleBackend().solve(problem, deadline, seed, warm_start, report)
    return result, report, time.time() - deadline


def test_every_plan_is_feasible_and_the_last_report_is_the_answer():
    problem = load_problem(EXAMPLE)
    result, report, late = solve(problem)
    assert result.status is Status.FEASIBLE and late < 0.1
    costs = [evaluate(problem, plan).cost for _, plan, _ in report.reports]
    assert all(evaluate(problem, plan).feasible for _, plan, _ in report.reports)
    assert costs == sorted(costs, reverse=True)  # reports only improve
    assert evaluate(problem, result.solution).cost == costs[-1] == 305


def test_same_seed_same_plans():
    problem = load_problem(EXAMPLE)
    a, b = (solve(problem, seed=7)[1].reports for _ in range(2))
    k = min(len(a), len(b))  # only where the clock stopped each run may differ
    assert [p.tolist() for _, p, _ in a[:k]] == [p.tolist() for _, p, _ in b[:k]]


def test_starts_from_the_warm_start():
    problem = load_problem(EXAMPLE)
    plan = solve(problem)[0].solution
    _, report, _ = solve(problem, seconds=0.05, warm_start=plan)
    assert report.reports[0][1].tolist() == plan.tolist()


def test_no_solution_when_even_the_min_usage_plan_is_too_big(tmp_path):
    doc = json.loads(EXAMPLE.read_text())
    doc["problem"]["usage_limit"] = 1
    (tmp_path / "tight.json").write_text(json.dumps(doc))
    result, report, _ = solve(load_problem(tmp_path / "tight.json"))
    assert result.status is Status.NO_SOLUTION and result.solution is None and not report.reports
