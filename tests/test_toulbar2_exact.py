"""The exact mode of the toulbar2 engine (:mod:`portfolio.toulbar2.exact`, issue 21): the
constrained network (knapsacks per time point), eligibility, and toulbar2's proofs against the
brute force of tests/tiny.py."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import bench_path
from portfolio.evaluate import evaluate
from portfolio.problem import Capacity
from portfolio.toulbar2.exact import (COST_LIMIT, build_exact_network, exact_eligible,
                                      solve_exact)
from tiny import F, brute, make_problem, optimum, scaled_costs, tiny

PROPERTY = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_against_brute(problem, answer) -> None:
    """A proven answer is the brute-force optimum; any plan is feasible and free of forbidden
    choices at its stated cost; the dual never exceeds the optimum; no plan means infeasible."""
    best = optimum(problem)
    if best is None:
        assert answer["plan"] is None and answer["infeasible"], answer
        return
    assert not answer["infeasible"], answer
    assert answer["dual"] is None or answer["dual"] <= best
    if answer["plan"] is not None:
        ev = evaluate(problem, np.asarray(answer["plan"], dtype=np.int64))
        assert ev.feasible and not ev.has_forbidden
        assert ev.cost == answer["cost"] >= best
    if answer["proven"]:
        assert answer["cost"] == answer["dual"] == best


# ------------------------------------------------------------------------------------------ tiny
@PROPERTY
@given(problem=tiny())
def test_a_proven_plan_is_the_brute_force_optimum(problem):
    """Self-loops, hyperedges, one-node and parallel edges, forbidden entries, several intervals
    per node, capacity over time, an offset: toulbar2 proves the optimum (or infeasibility)."""
    answer = solve_exact(problem, 5.0)
    check_against_brute(problem, answer)
    assert answer["proven"] or answer["infeasible"], answer["note"]


@PROPERTY
@given(problem=tiny(), scale=st.sampled_from([10**9, 10**12, 3 * 10**13]))
def test_contest_magnitudes_stay_exact_or_are_refused(problem, scale):
    """Costs near 1e9-3e13 with distinct low digits: exact to the unit, never scaled; refused with a
    reason when the total span leaves 2**50."""
    big = scaled_costs(problem, scale)
    ok, why = exact_eligible(big)
    answer = solve_exact(big, 5.0)
    if not ok:
        assert "2**50" in why and answer["plan"] is None and not answer["proven"]
        return
    check_against_brute(big, answer)
    assert answer["proven"] or answer["infeasible"], answer["note"]


def binding(seed: int):
    """A random small instance where memory binds: 3-6 nodes of 2-3 strategies, overlapping
    intervals (some nodes own two), binary edges, a few forbidden entries, and a capacity drawn
    between the largest all-least load and the largest all-most load."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    counts = rng.integers(2, 4, n).tolist()
    cost = lambda: F if rng.random() < 0.08 else int(rng.integers(0, 30))  # noqa: E731
    owners = list(range(n)) + [int(v) for v in rng.choice(n, int(rng.integers(0, 3)))]
    intervals, usages = [], []
    for v in owners:
        start = int(rng.integers(0, 5))
        intervals.append((start, start + int(rng.integers(1, 5))))
        usages.append([int(u) for u in rng.integers(0, 10, counts[v])])
    edges = [[int(a), int(b)] for a, b in (rng.choice(n, 2, replace=False) for _ in range(n))]
    tables = [[cost() for _ in range(counts[a] * counts[b])] for a, b in edges]
    low, high = np.zeros(10, dtype=int), np.zeros(10, dtype=int)
    for (a, b), u in zip(intervals, usages):
        low[a:b] += min(u)
        high[a:b] += max(u)
    capacity = Capacity.uniform(int(rng.integers(low.max(), high.max() + 1)))
    return make_problem([[cost() for _ in range(k)] for k in counts], intervals, usages, edges,
                        tables, capacity, int(rng.integers(0, 9)), owners)


def test_random_binding_instances_are_solved_exactly():
    """60 seeded instances where memory binds: every answer is the brute force's; the knapsacks
    were exercised (most networks have one, and on many the memory-free optimum does not fit)."""
    with_knapsack = binding_optimum = 0
    for seed in range(60):
        problem = binding(seed)
        net = build_exact_network(problem)
        answer = solve_exact(problem, 5.0)
        check_against_brute(problem, answer)
        assert answer["proven"] or answer["infeasible"], answer["note"]
        with_knapsack += bool(net.knapsacks)
        free = min((c for _, c, forbidden, _ in brute(problem) if not forbidden), default=None)
        binding_optimum += free is not None and free != optimum(problem)
    assert with_knapsack >= 30 and binding_optimum >= 15, (with_knapsack, binding_optimum)


@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny(), data=st.data())
def test_an_upper_bound_or_start_keeps_the_optimum(problem, data):
    """With the optimum as ``ub`` or an optimal plan as ``start`` toulbar2 still finds and proves
    it; with ``ub`` one below, nothing is found and the dual is exactly the optimum."""
    scored = brute(problem)
    best = optimum(problem)
    if best is None:
        return
    plan = next(p for p, c, bad, fits in scored if fits and not bad and c == best)
    for kwargs in ({"ub": best}, {"start": plan}, {"ub": best + 7, "start": plan, "hint": True}):
        answer = solve_exact(problem, 5.0, seed=data.draw(st.integers(0, 9)), **kwargs)
        check_against_brute(problem, answer)
        assert answer["proven"] and answer["cost"] == best, (kwargs, answer["note"])
    below = solve_exact(problem, 5.0, ub=best - 1)
    assert below["plan"] is None and not below["proven"] and not below["infeasible"]
    assert below["dual"] == best


def test_an_infeasible_instance_gives_no_plan():
    """Each point alone fits the capacity at the least usages, but the edge forbids the only
    combination that does: toulbar2's search proves that no plan fits."""
    problem = make_problem(costs=[[0, 1], [0, 1]], intervals=[(0, 2), (0, 2)],
                           usages=[[6, 0], [6, 0]], edges=[[0, 1]], tables=[[0, 0, 0, F]],
                           capacity=Capacity.uniform(5))
    assert build_exact_network(problem).infeasible == ""
    answer = solve_exact(problem, 5.0)
    assert answer["plan"] is None and answer["infeasible"] and not answer["proven"]
    crowded = make_problem(costs=[[0], [0]], intervals=[(0, 2), (1, 3)], usages=[[3], [3]],
                           edges=[], tables=[], capacity=Capacity.uniform(5))
    answer = solve_exact(crowded, 5.0)
    assert answer["plan"] is None and answer["infeasible"] and "time point" in answer["note"]


# ------------------------------------------------------------------------------------------ network
def test_only_points_that_can_overload_become_knapsacks():
    """Nodes 0-2: the point where 0 and 1 are live is implied by the next one (2 joins: same
    weights for 0 and 1, a smaller room) and dropped; node 3 alone overloads its point only with
    strategy 1, which becomes forbidden; node 4 can never overload its point: no constraint."""
    problem = make_problem(costs=[[0, 5], [0, 5], [0, 5], [0, 9], [0, 1]],
                           intervals=[(0, 3), (0, 3), (1, 3), (5, 6), (7, 8)],
                           usages=[[4, 1], [4, 1], [4, 2], [1, 20], [1, 2]],
                           edges=[], tables=[], capacity=Capacity.uniform(7))
    net = build_exact_network(problem)
    assert len(net.knapsacks) == 1
    nodes, weights, cap = net.knapsacks[0]
    assert nodes == [0, 1, 2] and cap == 7 - 4
    assert [w.tolist() for w in weights] == [[3, 0], [3, 0], [2, 0]]
    assert net.unary[3].tolist() == [0, -1]
    answer = solve_exact(problem, 5.0)
    check_against_brute(problem, answer)
    assert answer["proven"]
    # the other way round: node 2 leaves, the later point (node 3 uses nothing) is implied
    shrinking = make_problem(costs=[[0, 5], [0, 5], [0, 5], [0]],
                             intervals=[(0, 3), (0, 3), (0, 1), (2, 3)],
                             usages=[[4, 1], [4, 1], [4, 2], [0]],
                             edges=[], tables=[], capacity=Capacity.uniform(7))
    assert [(nodes, cap) for nodes, _, cap in build_exact_network(shrinking).knapsacks] == [
        ([0, 1, 2], 7 - 4)]


def test_identical_points_keep_the_tightest_capacity():
    """Nodes 0 and 1 are live at times 0 and 4, nodes 2 and 3 at time 2 in between: two
    knapsacks, the first with the smaller of its two capacities."""
    problem = make_problem(costs=[[0, 3], [0, 3], [0, 1], [0, 1]],
                           intervals=[(0, 1), (0, 1), (4, 5), (4, 5), (2, 3), (2, 3)],
                           usages=[[5, 1], [5, 1], [5, 1], [5, 1], [1, 9], [1, 9]],
                           edges=[], tables=[], owners=[0, 1, 0, 1, 2, 3],
                           capacity=Capacity(np.array([0, 2, 4]), np.array([8, 10, 7])))
    net = build_exact_network(problem)
    assert [(nodes, cap) for nodes, _, cap in net.knapsacks] == [([0, 1], 7 - 2), ([2, 3], 10 - 2)]
    check_against_brute(problem, solve_exact(problem, 5.0))


# ----------------------------------------------------------------------------------------- refusals
def test_big_or_unscalable_instances_are_refused_with_a_reason():
    many = make_problem(costs=[[0, 1]] * 2000, intervals=[(0, 1)] * 2000, usages=[[1, 1]] * 2000,
                        edges=[], tables=[], capacity=Capacity.uniform(10**6))
    ok, why = exact_eligible(many)
    assert not ok and "2000 nodes" in why
    wide = make_problem(costs=[[0, COST_LIMIT + 1], [0, 1]], intervals=[(0, 1), (0, 1)],
                        usages=[[1, 1], [1, 1]], edges=[], tables=[])
    ok, why = exact_eligible(wide)
    assert not ok and "2**50" in why
    answer = solve_exact(wide, 5.0)
    assert answer["plan"] is None and not answer["proven"] and "not eligible" in answer["note"]
    # a span of exactly 2**50 is held to the unit: memory forces the dear strategy
    fits = make_problem(costs=[[0, COST_LIMIT - 1], [0, 1]], intervals=[(0, 1), (0, 1)],
                        usages=[[5, 1], [1, 1]], edges=[], tables=[], capacity=Capacity.uniform(3))
    assert exact_eligible(fits)[0]
    answer = solve_exact(fits, 5.0)
    assert answer["proven"] and answer["cost"] == COST_LIMIT - 1 == optimum(fits)


@pytest.mark.slow
def test_a_stopped_search_claims_nothing():
    """A synthetic instance whose proof takes toulbar2 several seconds, stopped after one: not
    proven, and any plan or dual it returns is consistent; given a start, at worst the start."""
    from portfolio.generate import generate_problem
    from portfolio.presolve import presolve

    original = generate_problem(1000, 8, 0)
    presolved = presolve(original)
    problem = presolved.reduced
    assert exact_eligible(problem)[0]
    start = presolved.project(original.min_usage_strategies)   # feasible by construction
    first = evaluate(problem, start)
    assert first.feasible and not first.has_forbidden
    for kwargs in ({}, {"start": start}):
        t0 = time.monotonic()
        answer = solve_exact(problem, 1.0, **kwargs)
        assert time.monotonic() - t0 < 15.0
        assert not answer["proven"] and not answer["infeasible"]
        assert "limit" in answer["note"], answer["note"]
        if kwargs:   # a stopped search returns at worst the start
            assert answer["plan"] is not None and answer["cost"] <= first.cost
        if answer["plan"] is not None:
            ev = evaluate(problem, np.asarray(answer["plan"], dtype=np.int64))
            assert ev.feasible and ev.cost == answer["cost"]
            assert answer["dual"] is None or answer["dual"] <= answer["cost"]


# ------------------------------------------------------------------------------------------ contest
@pytest.mark.slow
@pytest.mark.parametrize("name, best", [("B", 532_843), ("G", 217_039)])
def test_contest_instances_are_proven_optimal(name, best):
    from portfolio.io.read import load_problem
    from portfolio.presolve import presolve

    problem = presolve(load_problem(bench_path(name))).reduced
    assert exact_eligible(problem)[0]
    answer = solve_exact(problem, 15.0)
    assert answer["proven"], answer["note"]
    assert answer["cost"] == answer["dual"] == best
    ev = evaluate(problem, np.asarray(answer["plan"], dtype=np.int64))
    assert ev.feasible and not ev.has_forbidden and ev.cost == best
