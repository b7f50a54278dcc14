"""Local-search backend: feasible reports only, never worse than its warm start, deterministic."""

from __future__ import annotations

import time

import numpy as np
import pytest

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io import load_problem
from portfolio_plugins.localsearch import LocalSearchBackend

from conftest import bench_path
from reporters import Sharing


@pytest.fixture(scope="module")
def synthetic():
    return generate_problem(nodes=300, seed=7)


def test_reports_only_feasible_plans_and_improves(synthetic):
    rep = NullReporter({"max_rounds": 5})
    res = LocalSearchBackend().solve(synthetic, time.time() + 60, 1, None, rep)
    assert res.status is Status.FEASIBLE
    assert rep.reports
    costs = []
    for _, plan, _ in rep.reports:
        ev = evaluate(synthetic, plan)
        assert ev.feasible
        costs.append(ev.cost)
    assert costs == sorted(costs, reverse=True)
    assert evaluate(synthetic, res.solution).cost == costs[-1]


def test_never_worse_than_warm_start(synthetic):
    first = LocalSearchBackend().solve(synthetic, time.time() + 60, 3, None,
                                       NullReporter({"max_rounds": 8}))
    warm = first.solution
    warm_cost = evaluate(synthetic, warm).cost
    for seed in range(3):
        res = LocalSearchBackend().solve(synthetic, time.time() + 60, seed, warm,
                                         NullReporter({"max_rounds": 1}))
        assert evaluate(synthetic, res.solution).cost <= warm_cost


def test_adopts_a_better_plan_from_the_portfolio(synthetic):
    good = LocalSearchBackend().solve(synthetic, time.time() + 60, 3, None,
                                      NullReporter({"max_rounds": 8})).solution
    sharing = Sharing(good)
    sharing.options = {"max_rounds": 1, "kicks_per_round": 0}
    res = LocalSearchBackend().solve(synthetic, time.time() + 60, 0, None, sharing)
    assert evaluate(synthetic, res.solution).cost <= evaluate(synthetic, good).cost


def test_deterministic_for_a_fixed_seed_and_budget(synthetic):
    runs = [LocalSearchBackend().solve(synthetic, time.time() + 60, 11, None,
                                       NullReporter({"max_rounds": 4})).solution
            for _ in range(2)]
    assert np.array_equal(runs[0], runs[1])


def test_respects_the_deadline(synthetic):
    t0 = time.time()
    res = LocalSearchBackend().solve(synthetic, t0 + 2.0, 0, None, NullReporter())
    assert res.status is Status.FEASIBLE
    assert time.time() - t0 < 3.0


def test_bundled_example_reaches_the_optimum(bundled_example):
    problem = load_problem(bundled_example)
    res = LocalSearchBackend().solve(problem, time.time() + 30, 0, None,
                                     NullReporter({"max_rounds": 3}))
    assert evaluate(problem, res.solution).cost == 305


@pytest.mark.slow
def test_small_benchmark_short_run():
    problem = load_problem(bench_path("G"))
    res = LocalSearchBackend().solve(problem, time.time() + 8, 0, None, NullReporter())
    ev = evaluate(problem, res.solution)
    assert ev.feasible and not ev.has_forbidden
