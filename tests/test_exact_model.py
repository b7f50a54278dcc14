"""The exact engines' shared model (portfolio/exact/model.py) against the brute force of tests/tiny.py.

Both exact backends build from it, so its promises are checked here once, on every plan of tiny
instances with forbidden entries, self-loops, duplicate edges and hyperedges: the domains keep every
forbidden-free plan (arc consistency is sound), the objective formula equals the exact cost, the
factors exclude exactly the forbidden choices, and huge costs never wrap.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from portfolio.evaluate import evaluate
from portfolio.exact import build_exact_model
from portfolio.problem import FORBIDDEN
from tiny import brute, make_problem, optimum, scaled_costs, tiny

CHECK = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def model_cost(md, plan: list[int]) -> int | None:
    """offset + unary + factor residuals of ``plan``, or None when a factor excludes it."""
    so = md.problem.strategy_offsets
    total = md.offset + sum(int(md.unary[so[i] + s]) for i, s in enumerate(plan))
    for f in md.factors:
        hit = np.flatnonzero((f.choices == np.array([plan[v] for v in f.nodes])).all(axis=1))
        if len(hit) == 0:
            return None
        total += int(f.cost[hit[0]])
    return total


def check_model(problem) -> None:
    md = build_exact_model(problem)
    so = problem.strategy_offsets
    scored = brute(problem)
    if md.infeasible is not None:
        assert optimum(problem) is None, md.infeasible
    for plan, _, forbidden, _ in scored:
        usable = all(md.usable[so[i] + s] for i, s in enumerate(plan))
        if not forbidden:
            assert usable, plan   # arc consistency never removes a forbidden-free plan
        if md.infeasible is not None or not usable:
            continue
        cost = model_cost(md, plan)
        assert (cost is None) == forbidden, plan
        if cost is not None:
            assert cost == evaluate(problem, np.array(plan)).cost
    for f in md.factors:   # each node set once (parallel edges summed), nodes in increasing order
        assert list(f.nodes) == sorted(set(f.nodes))
    assert len({f.nodes for f in md.factors}) == len(md.factors)


@CHECK
@given(tiny(general=True))
def test_model_matches_the_brute_force(problem):
    check_model(problem)


@CHECK
@given(tiny(general=True))
def test_domains_are_arc_consistent(problem):
    """Every usable strategy keeps an allowed partner on every two-node factor (the fixpoint, not
    one pass), and two-node residuals are folded to non-negative values."""
    md = build_exact_model(problem)
    if md.infeasible is not None:
        return
    so = problem.strategy_offsets
    for f in md.factors:
        for pos, v in enumerate(f.nodes):
            supported = set(f.choices[:, pos].tolist())
            assert set(md.strategies(v).tolist()) <= supported
        if len(f.nodes) == 2:
            assert (f.cost >= 0).all()
            assert all(md.usable[so[v] + f.choices[t, p]] for t in range(len(f.cost))
                       for p, v in enumerate(f.nodes))


def test_a_chain_of_forbidden_entries_needs_the_fixpoint():
    """0-1-2 path: node 2's strategy 1 is forbidden, which leaves node 1's strategy 1 without a
    partner, which in turn leaves node 0's strategy 1 without one: one pass would keep it."""
    F = FORBIDDEN
    problem = make_problem([[0, 0], [0, 0], [0, F]], [(0, 1)] * 3, [[1, 1]] * 3,
                           [[0, 1], [1, 2]], [[0, F, F, 0], [0, F, F, 0]])
    md = build_exact_model(problem)
    assert md.usable.tolist() == [True, False, True, False, True, False]
    assert md.infeasible is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True))
def test_costs_past_int64_are_python_ints(problem):
    """Costs near 2**61 (sums past 2**63): the model holds Python ints and stays exact."""
    costs = np.concatenate([problem.node_costs, problem.edge_costs])
    assume(costs[costs != FORBIDDEN].max(initial=0) >= 4)   # then the magnitudes pass 2**60
    big = scaled_costs(problem, 2**58)
    assert build_exact_model(big).unary.dtype == object
    check_model(big)
