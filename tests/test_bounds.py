"""Certified Lagrangian lower bounds: never above the optimum, tight where they must be."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import extra
from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio.kernels import bound as kb
from portfolio.kernels.bound import BoundParams, LagrangeBound, certify, forbidden_floor, star_bound
from portfolio.kernels.engine import prepare
from portfolio.presolve import presolve
from portfolio.problem import FORBIDDEN, Capacity
from portfolio_plugins.bound import BoundBackend
from reporters import Sharing
from tiny import F, make_problem, tiny

EXAMPLE = load_problem(str(__import__("portfolio.cli", fromlist=["x"]).bundled_example()))


def true_optimum(problem):
    """Least exact cost over all feasible plans (forbidden choices cost what they cost), or None."""
    best = None
    for plan in itertools.product(*(range(int(k)) for k in problem.strategy_counts)):
        ev = evaluate(problem, np.array(plan, np.int64))
        if ev.feasible and (best is None or ev.cost < best):
            best = ev.cost
    return best


def bound_of(problem, steps=12, reduce=True, seed=0):
    """Best bound of a short subgradient run plus every intermediate certified value."""
    prep = prepare(problem, reduce=reduce)
    lb = LagrangeBound(problem, prep.rm, BoundParams(trws_iters=1), seed, kb.kernel_offset(prep))
    seen = []
    for _ in range(steps):
        seen.append(lb.step(None))
    return lb.best, seen, lb


def scaled(problem, cost_scale, use_scale):
    """The same instance with finite costs and usages multiplied (forbidden stays forbidden)."""
    nc = problem.node_costs.copy()
    ec = problem.edge_costs.copy()
    nc[nc != F] *= cost_scale
    ec[ec != F] *= cost_scale
    cap = problem.capacity
    if len(cap.values):
        cap = Capacity(cap.times, cap.values * use_scale)
    import dataclasses
    return dataclasses.replace(problem, node_costs=nc, edge_costs=ec,
                               interval_usages=problem.interval_usages * use_scale,
                               capacity=cap, cost_offset=problem.cost_offset * cost_scale)


# ------------------------------------------------------------------------------ validity
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from([(1, 1), (10**12 + 7, 1), (3, 2**40 + 1), (10**13, 2**45)]))
def test_bound_never_exceeds_the_optimum(problem, scale):
    problem = scaled(problem, *scale)
    opt = true_optimum(problem)
    best, seen, _ = bound_of(problem)
    if opt is None:   # no feasible plan: any number is a bound
        return
    assert all(b <= opt for b in seen), (seen, opt)
    assert best <= opt


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True), st.integers(0, 2**31))
def test_any_prices_and_messages_give_a_bound(problem, seed):
    """Validity does not rest on TRW-S: random prices and random messages are still a bound."""
    opt = true_optimum(problem)
    prep = prepare(problem, reduce=False)
    lb = LagrangeBound(problem, prep.model)
    rng = np.random.default_rng(seed)
    lb.lam[:] = rng.exponential(3.0, len(lb.lam)) * (rng.random(len(lb.lam)) < 0.7)
    lb.lam[~lb.limited] = 0.0
    lb.msg[:] = rng.normal(0, 50, len(lb.msg))
    value = certify(problem, lb.evaluate())
    if opt is not None:
        assert value <= opt


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True))
def test_presolved_bound_plus_offset_bounds_the_original(problem):
    opt = true_optimum(problem)
    pre = presolve(problem)
    if pre.reduced is None:
        return
    best, seen, _ = bound_of(pre.reduced)
    if opt is not None:
        assert max(seen) <= opt


def live_pieces(m, t):
    return {p for p in range(len(m.pc_lo)) if m.pc_lo[p] <= t < m.pc_hi[p]}


def dominator(m, t, keep):
    """A kept limited point whose live pieces include t's and whose slack is at least t's."""
    slack = m.base - m.cap
    for u in np.nonzero(keep)[0]:
        if live_pieces(m, t) <= live_pieces(m, u) and slack[t] <= slack[u]:
            return int(u)
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True), st.integers(0, 2**31))
def test_undominated_points_lose_no_price(problem, seed):
    """Every dropped point has a kept dominator (brute force over the pieces), no kept point is
    dominated by another kept one, and moving random prices from dropped points onto their
    dominators never lowers the certified bound (same messages)."""
    m = prepare(problem, reduce=False).model
    keep = kb.undominated_points(m)
    limited = m.cap < kb.CAP_UNLIMITED
    assert not (keep & ~limited).any()
    slack = m.base - m.cap
    for t in np.nonzero(limited & ~keep)[0]:
        assert dominator(m, t, keep) is not None, t
    kept = np.nonzero(keep)[0]
    for t in kept:
        for u in kept:
            if u != t and live_pieces(m, t) <= live_pieces(m, u):
                assert (slack[t], t) > (slack[u], u), (t, u)   # t is not dominated by u
    rng = np.random.default_rng(seed)
    lb = LagrangeBound(problem, m)
    lam = rng.exponential(3.0, len(lb.lam)) * limited
    msg = rng.normal(0, 20, len(lb.msg))
    moved = lam * keep
    for t in np.nonzero(limited & ~keep)[0]:
        moved[dominator(m, t, keep)] += lam[t]
    before = star_bound(m, lam, msg, lb.pos, lb.rev, lb.moff)
    after = star_bound(m, moved, msg, lb.pos, lb.rev, lb.moff)
    if before == np.inf:     # no forbidden-free plan: stays so
        assert after == np.inf
    else:
        assert after >= before - 1e-6 * (1 + abs(before)), (before, after)


def test_undominated_points_on_a_staircase():
    """Three nodes live on [0,4), [1,3), [2,3): points 0, 1 and 3 see subsets of point 2's
    pieces, so only point 2 keeps a price (equal capacities everywhere)."""
    p = make_problem([[0, 1], [0, 1], [0, 1]], [(0, 4), (1, 3), (2, 3)],
                     [[1, 2], [1, 2], [1, 2]], [], [], capacity=Capacity(
                         np.array([0], np.int64), np.array([5], np.int64)))
    m = prepare(p, reduce=False).model
    keep = kb.undominated_points(m)
    assert keep.sum() == 1
    assert live_pieces(m, int(np.nonzero(keep)[0][0])) == set(range(len(m.pc_lo)))


def test_unconstrained_tree_bound_is_exact():
    """Without memory and on a chain, TRW-S reaches the optimum and the bound is exact (integer
    data, zero prices: the directed rounding must not lose a unit)."""
    rng = np.random.default_rng(3)
    counts = [3, 2, 3, 2, 3]
    costs = [[int(x) for x in rng.integers(0, 40, k)] for k in counts]
    edges = [[i, i + 1] for i in range(4)]
    tables = [[int(x) for x in rng.integers(0, 30, counts[i] * counts[i + 1])] for i in range(4)]
    p = make_problem(costs, [(0, 1)] * 5, [[1] * k for k in counts], edges, tables)
    best, _, _ = bound_of(p, steps=5, reduce=False)
    assert best == true_optimum(p)


def test_forbidden_only_instance_uses_the_forbidden_floor():
    """Node 0's only allowed strategy clashes with every strategy of node 1: no forbidden-free
    plan exists, the star bound is +inf and the floor (10**18 here) must take over."""
    p = make_problem([[0], [5, 6]], [(0, 1), (0, 1)], [[1], [1, 1]], [[0, 1]], [[F, F]])
    assert forbidden_floor(p) == FORBIDDEN
    best, _, _ = bound_of(p, steps=3, reduce=False)
    assert best == FORBIDDEN
    assert best <= true_optimum(p)


def test_negative_costs_lower_the_forbidden_floor():
    p = make_problem([[-7, F], [3]], [(0, 1), (0, 1)], [[1, 1], [1]], [[0, 1]], [[-2, F]],
                     offset=4)
    assert forbidden_floor(p) == FORBIDDEN - 7 - 2 + 4


def test_directed_rounding_helpers():
    a, b = 0.1, 0.2
    assert kb.add_dn(a, b) < 0.30000000000000004 and kb.add_up(a, b) >= 0.30000000000000004
    assert kb.add_dn(2.0, 3.0) == 5.0 and kb.mul_dn(3.0, 7.0) == 21.0
    assert kb.mul_dn(0.1, 3.0) < 0.1 * 3.0 or 0.1 * 3.0 <= 0.3
    assert kb.int_dn(2**60 + 1) <= 2**60 + 1 and kb.int_dn(2**53 + 1) == float(2**53)
    assert kb.add_dn(np.inf, -5.0) == np.inf


# ------------------------------------------------------------------------------ example, backend
def test_bundled_example_bound_at_most_its_optimum():
    opt = true_optimum(EXAMPLE)
    assert opt <= 445
    res = BoundBackend().solve(EXAMPLE, time.time() + 60, 0, None, NullReporter({"max_steps": 200}))
    assert res.status is Status.NO_SOLUTION and res.lower_bound is not None
    assert 0 < res.lower_bound <= opt


def test_backend_stops_when_the_gap_closes():
    """A memory-free instance whose optimum the bound reaches: with the optimal plan known the
    backend returns long before its step budget."""
    counts = [2, 3, 2]
    p = make_problem([[4, 1], [0, 2, 5], [3, 3]], [(0, 1)] * 3, [[1] * k for k in counts],
                     [[0, 1], [1, 2]], [[0, 9, 1, 2, 7, 0], [1, 0, 4, 4, 0, 6]])
    opt = true_optimum(p)
    plan = min((np.array(x) for x in itertools.product(*(range(k) for k in counts))),
               key=lambda x: evaluate(p, x).cost)
    sharing = Sharing(plan)
    sharing.options = {"max_steps": 10_000}
    res = BoundBackend().solve(p, time.time() + 60, 0, None, sharing)
    assert res.lower_bound == opt
    assert "gap closed" in res.note and int(res.note.split()[0]) < 10_000


def test_backend_returns_before_the_deadline():
    from portfolio.generate import generate_problem
    p = generate_problem(nodes=300, seed=5)
    t = time.time()
    res = BoundBackend().solve(p, t + 1.5, 0, None, NullReporter())
    assert time.time() < t + 1.6
    assert res.lower_bound is not None and res.lower_bound > 0


# ------------------------------------------------------------------------------ report
def test_report_shows_the_certified_gap_and_plots_it(tmp_path):
    from test_report import invoke, result_row, write_run

    from portfolio.report import build

    run = write_run(tmp_path / "r", [
        result_row("tiny-x", "with", 1000, lower_bound=950,
                   gap_trace=[{"time": 1.0, "cost": 1000, "bound": 900},
                              {"time": 2.0, "cost": 1000, "bound": 950}]),
        result_row("tiny-x", "with", 1000, seed=1, lower_bound=990),
        result_row("tiny-x", "without", 1200)])
    board = build([run])
    cells = {r.label: r.cells["tiny-x"] for r in board.rows}
    assert cells["with"].gap_own == pytest.approx((0.05 + 0.01) / 2)
    assert cells["without"].gap_own is None
    res = invoke("report", run)
    assert res.exit_code == 0, res.output
    assert "certified gap" in res.output and "+3.00%" in res.output
    extra("matplotlib")
    res = invoke("report", run, "--plot")
    assert res.exit_code == 0, res.output
    # plots are named by run ("r"); the gap panel is drawn from the rows' gap traces
    assert "certified gap of the plan held" in (run / "plots" / "r-convergence-tiny-x.svg").read_text()


# ------------------------------------------------------------------------------ runner
def chain_problem(n=8, seed=3):
    """A memory-free chain: TRW-S is exact on it, so the bound reaches the optimum."""
    rng = np.random.default_rng(seed)
    counts = [int(k) for k in rng.integers(2, 4, n)]
    costs = [[int(x) for x in rng.integers(0, 40, k)] for k in counts]
    edges = [[i, i + 1] for i in range(n - 1)]
    tables = [[int(x) for x in rng.integers(0, 30, counts[i] * counts[i + 1])] for i in range(n - 1)]
    return make_problem(costs, [(0, 1)] * n, [[1] * k for k in counts], edges, tables)


@pytest.mark.slow
def test_zero_gap_ends_the_run_early():
    from portfolio.options import RunOptions
    from portfolio.runner import run_portfolio
    from portfolio_plugins.greedy import GreedyBackend
    from portfolio_plugins.localsearch import LocalSearchBackend

    p = chain_problem()
    limit = 60.0
    result = run_portfolio(p, [GreedyBackend(), LocalSearchBackend(), BoundBackend()],
                           RunOptions(limit, workers=2))
    assert result.cost == true_optimum(p)
    assert result.best_bound is not None and result.best_bound.value == result.cost
    assert result.gap == 0.0
    assert result.stopped_early and "bound" in result.stopped_early
    assert result.elapsed < limit / 2
    doc = result.to_dict()
    assert doc["lower_bound"] == result.cost and doc["gap"] == 0.0
    assert doc["lower_bound_source"] == "bound"
