"""Greedy backend: feasible, forbidden-free plans, quickly."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io import load_problem
from portfolio.problem import Capacity
from portfolio.kernels.engine import greedy_plan, prepare
from portfolio_plugins.greedy import GreedyBackend

from conftest import bench_path

NAMES = ("A", "B", "G", "K", "M", "N", "S")


def bench(name: str):
    return load_problem(bench_path(name))


def test_greedy_on_bundled_example(bundled_example):
    problem = load_problem(bundled_example)
    rep = NullReporter()
    res = GreedyBackend().solve(problem, time.time() + 10, 0, None, rep)
    assert res.status is Status.FEASIBLE
    ev = evaluate(problem, res.solution)
    assert ev.feasible and not ev.has_forbidden
    assert rep.reports and np.array_equal(rep.reports[-1][1], res.solution)


@pytest.mark.parametrize("design", [1, 2])
def test_greedy_designs_on_synthetic(design):
    problem = generate_problem(nodes=400, seed=3)
    prep = prepare(problem)
    sol, ok, _ = greedy_plan(prep, design)
    assert ok
    ev = evaluate(problem, prep.expand(sol))
    assert ev.feasible


def test_greedy_says_so_when_memory_cannot_fit():
    problem = generate_problem(nodes=50, seed=1)
    tight = dataclasses.replace(problem, capacity=Capacity.uniform(1))
    res = GreedyBackend().solve(tight, time.time() + 10, 0, None, NullReporter())
    assert res.status is Status.NO_SOLUTION and res.solution is None


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("design", [1, 2])
def test_greedy_feasible_without_forbidden_on_benchmarks(name, design):
    problem = bench(name)
    report = NullReporter({"design": design})   # an option since backend options, not an argument
    res = GreedyBackend().solve(problem, time.time() + 60, 0, None, report)
    assert res.status is Status.FEASIBLE
    ev = evaluate(problem, res.solution)
    assert ev.feasible
    assert ev.forbidden_node_choices == 0 and ev.forbidden_edge_entries == 0
