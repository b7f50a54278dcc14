"""The instant fallback (plain numpy, nothing compiled) avoids forbidden entries it can avoid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio.problem import FORBIDDEN, Capacity
from portfolio.runner.fallback import (PairEdges, _assign_in_order, _pick, consistent_strategies,
                                      safe_plan)
from portfolio_plugins.minusage import MinUsageBackend
from portfolio.backend import NullReporter, Status
from tiny import make_problem, tiny

F = FORBIDDEN


def _pair(table, usages=([1, 5], [1, 5]), limit=None):
    return make_problem([[0, 0], [0, 0]], [[0, 2], [0, 2]], list(usages), [[0, 1]], [table],
                        capacity=None if limit is None else Capacity.uniform(limit))


def test_least_memory_pair_is_forbidden_and_the_fallback_repairs_it():
    prob = _pair([F, 0, 0, 0])          # (0, 0) is the least-memory pair, and it is forbidden
    assert evaluate(prob, prob.min_usage_strategies).forbidden_edge_entries == 1
    plan = safe_plan(prob)
    ev = evaluate(prob, plan)
    assert not ev.has_forbidden and ev.peak_usage == 6


def test_strategy_without_an_allowed_partner_is_removed_by_consistency():
    prob = _pair([F, F, 0, 0])          # node 0 strategy 0 has no allowed partner at all
    alive = consistent_strategies(prob)
    assert alive.tolist() == [False, True, True, True]
    assert safe_plan(prob).tolist() == [1, 0]


def test_chain_of_forbidden_edges_is_followed():
    eq = [0, F, F, 0]                    # equality: both ends pick the same strategy
    prob = make_problem([[0, 0]] * 4, [[0, 1]] * 4, [[1, 3], [1, 3], [1, 3], [3, 1]],
                        [[0, 1], [1, 2], [2, 3]], [eq, eq, eq])
    plan = safe_plan(prob)
    assert not evaluate(prob, plan).has_forbidden
    assert len(set(plan.tolist())) == 1


def test_no_forbidden_free_plan_keeps_the_plain_least_memory_plan():
    prob = _pair([F, F, F, F])
    assert consistent_strategies(prob) is None
    assert safe_plan(prob).tolist() == prob.min_usage_strategies.tolist()


def test_memory_comes_first_when_the_forbidden_free_plan_does_not_fit():
    prob = _pair([F, 0, 0, 0], limit=5)  # only (0, 0) fits in memory
    plan = safe_plan(prob)
    assert evaluate(prob, plan).feasible and plan.tolist() == [0, 0]


@settings(max_examples=60, deadline=None)
@given(tiny())
def test_fallback_always_returns_a_valid_plan(prob):
    plan = safe_plan(prob, seconds=0.2)
    ev = evaluate(prob, plan)   # raises on a malformed plan
    plain = evaluate(prob, prob.min_usage_strategies)
    if plain.feasible:
        assert ev.feasible


def test_minusage_backend_reports_the_plain_plan_then_the_safe_one():
    prob = _pair([F, 0, 0, 0])
    report = NullReporter()
    import time

    result = MinUsageBackend().solve(prob, time.time() + 2, 0, None, report)
    assert result.status is Status.FEASIBLE and not evaluate(prob, result.solution).has_forbidden
    assert [n for _, _, n in report.reports] == ["min-usage plan",
                                                 "min-usage plan avoiding forbidden entries"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_on_a_forest_of_forbidden_edges_consistency_and_order_avoid_every_forbidden_entry(seed):
    """On a forest, arc consistency plus a breadth-first pick is forbidden-free whenever a
    forbidden-free plan exists: no repair and no luck involved."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    k = [int(x) for x in rng.integers(1, 5, n)]
    edges = [[int(rng.integers(0, i)), i] for i in range(1, n)]  # a random tree, parents first
    rng.shuffle(edges)
    tables = [[F if rng.random() < 0.6 else int(rng.integers(0, 9))
               for _ in range(k[a] * k[b])] for a, b in edges]
    costs = [[int(c) for c in rng.integers(0, 9, kk)] for kk in k]
    usages = [[int(x) for x in rng.integers(0, 50, kk)] for kk in k]
    prob = make_problem(costs, [[0, 1]] * n, usages, edges, tables)
    alive = consistent_strategies(prob)
    if alive is None:
        return
    rank = prob.strategy_usage_rank
    start = _pick(prob, alive, rank).astype(np.int64)
    plan = _assign_in_order(prob, start, alive, rank, PairEdges(prob), float("inf"))
    assert not evaluate(prob, plan).has_forbidden          # the order alone, before any repair
    assert not evaluate(prob, safe_plan(prob)).has_forbidden


@pytest.mark.parametrize("name", ["A", "B", "K", "M", "N", "S"])
def test_fallback_is_forbidden_free_on_contest_instances(bench_dir, name):
    prob = load_problem(bench_dir / f"asplos-2025-iopddl-{name}.json.gz")
    ev = evaluate(prob, safe_plan(prob))
    assert ev.feasible and not ev.has_forbidden


def test_the_runner_reserve_avoids_forbidden_entries_without_any_backend_plan():
    """A run whose backends never report still answers forbidden-free: the runner refines its own
    reserve with the fallback (minusage is not needed for that)."""
    import faulty_backends as fb
    from portfolio.options import RunOptions
    from portfolio.runner import run_portfolio

    prob = _pair([F, 0, 0, 0])          # the least-memory pair is forbidden
    result = run_portfolio(prob, [fb.Hangs()], RunOptions(time_limit=2.0))
    assert result.winner == "fallback"
    ev = evaluate(prob, result.solution)
    assert ev.feasible and not ev.has_forbidden
