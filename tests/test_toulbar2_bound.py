"""toulbar2's bound of the Lagrangian-priced problem (portfolio/toulbar2/bound.py) against brute force,
its scaling, and its phase in the ``bound`` backend."""

from __future__ import annotations

import dataclasses
import itertools
import signal
import time

import numpy as np
import pytoulbar2  # noqa: F401  -- a hard dependency: a broken install fails here, never skips
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portfolio.backend import NullReporter
from portfolio.kernels import bound as kb
from portfolio.kernels.engine import prepare
from portfolio.problem import Capacity
from tiny import F, make_problem, tiny

from portfolio.toulbar2 import bound as tb
from portfolio.toulbar2.scaling import ScalingError
from portfolio_plugins.bound import BoundBackend
from test_bounds import chain_problem, scaled, true_optimum

SECONDS = 4.0   # tiny networks finish at once; this only bounds a stuck child


def best_prices(problem, steps=8, reduce=True):
    """(prepared view, LagrangeBound after a few steps): the prices the backend would use."""
    prep = prepare(problem, reduce=reduce)
    lb = kb.LagrangeBound(problem, prep.rm, kb.BoundParams(trws_iters=1), 0, kb.kernel_offset(prep))
    lb.run(0.0, max_steps=steps)
    return prep, lb


# ------------------------------------------------------------------------------ validity
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from([(1, 1), (10**13 + 7, 1), (3, 2**40 + 1)]), st.integers(0, 2**31))
def test_priced_bound_never_exceeds_the_optimum(problem, scale, seed):
    """Best prices and random prices (often far too high: the bound is then very negative or
    very loose, still a bound), forbidden entries and tight memory from ``tiny``."""
    problem = scaled(problem, *scale)
    opt = true_optimum(problem)
    prep, lb = best_prices(problem)
    _, lam, msg = lb.settle(2)
    rng = np.random.default_rng(seed)
    random_lam = rng.exponential(3.0 * scale[0] / scale[1], len(lam))
    random_msg = rng.normal(0, 50.0 * scale[0], len(msg))
    for prices, messages in ((lam, None), (lam, msg), (random_lam, random_msg)):
        shifts = None if messages is None else lb.message_shifts(messages)
        out = tb.priced_solve(problem, prep.rm, prices, SECONDS, kb.kernel_offset(prep), seed,
                              shifts=shifts)
        assert out.bound is not None, out.note
        if opt is not None:
            assert out.bound <= opt, (out, opt)


def test_reparametrised_network_starts_at_the_star_bound():
    """With the settled messages the functions' minima (the network's constant) sum to the star
    bound less at most one unit of floor per function, and no plan's cost changes."""
    p = chain_problem(n=6, seed=5)
    prep, lb = best_prices(p, steps=20, reduce=False)
    star, lam, msg = lb.settle(5)
    shifts = lb.message_shifts(msg)
    plain, net = tb.build_priced(prep.rm, lam), tb.build_priced(prep.rm, lam, shifts=shifts)
    star_value = kb.star_bound(prep.rm, lam, msg, lb.pos, lb.rev, lb.moff)
    assert star_value - len(net.functions) - 1 <= net.constant <= star_value
    assert net.constant > plain.constant
    for plan in itertools.product(*(range(int(k)) for k in prep.rm.soff[1:] - prep.rm.soff[:-1])):
        cost = lambda n: sum(t[sum(plan[v] * int(np.prod([net.counts[w] for w in sc[j + 1:]]))
                                   for j, v in enumerate(sc))] for sc, t in n.functions)
        assert cost(net) + net.constant == cost(plain) + plain.constant


def test_forbidden_everywhere_gives_the_forbidden_floor():
    """Every plan of node 1 takes a forbidden edge entry: the bound is the forbidden floor."""
    p = make_problem([[1, 2], [3, 4]], [(0, 2), (1, 3)], [[5, 1], [2, 6]], [[0, 1]],
                     [[F, F, F, F]], Capacity.uniform(7))
    prep, lb = best_prices(p, reduce=False)
    out = tb.priced_solve(p, prep.rm, lb.settle()[1], SECONDS, kb.kernel_offset(prep))
    assert out.bound == kb.forbidden_floor(p) <= true_optimum(p)


def test_tight_memory_with_forbidden_entries_stays_below_the_optimum():
    """Memory forces node 0 off its cheap, heavy strategy; a forbidden pair blocks the obvious
    way out. High prices make toulbar2's plan break memory: the bound must still hold."""
    p = make_problem([[0, 9, 4], [0, 5], [2, 2, 0]], [(0, 3), (1, 4), (2, 5)],
                     [[10, 2, 6], [8, 1], [3, 7, 1]],
                     [[0, 1], [1, 2]], [[0, 1, F, 3, 0, 2], [0, 4, F, 1, 1, 0]],
                     Capacity.uniform(12))
    opt = true_optimum(p)
    prep, lb = best_prices(p, steps=30, reduce=False)
    for lam in (lb.settle()[1], np.full(len(prep.rm.base), 1e6)):
        out = tb.priced_solve(p, prep.rm, lam, SECONDS, kb.kernel_offset(prep))
        assert out.bound is not None and out.bound <= opt, (out, opt)


def test_bound_equals_the_optimum_without_binding_memory():
    """No memory limit: the priced problem is the problem; a finished search is the optimum."""
    p = chain_problem(n=7, seed=11)
    assert not np.any(p.point_capacity < np.iinfo(np.int64).max)
    prep, lb = best_prices(p, reduce=False)
    out = tb.priced_solve(p, prep.rm, lb.settle()[1], SECONDS, kb.kernel_offset(prep))
    assert out.complete, out.note
    assert out.bound == true_optimum(p)


def test_a_backtrack_limited_priced_solve_is_repeatable_and_still_a_bound():
    """Deterministic mode's variant: a backtrack limit instead of seconds, the same bound and
    counts every time, and work units the caller can spend; unlimited enough, it finishes."""
    p = chain_problem(n=7, seed=11)
    prep, lb = best_prices(p, reduce=False)
    lam, opt = lb.settle()[1], true_optimum(p)
    cut, again, full = (tb.priced_solve(p, prep.rm, lam, SECONDS, kb.kernel_offset(prep),
                                        backtracks=b) for b in (1, 1, 10**6))
    assert cut.bound == again.bound and cut.work == again.work and cut.bound <= opt
    assert cut.work["backtracks"] <= 1 < cut.work["units"]
    assert full.complete and full.bound == opt and full.work["nodes"] >= cut.work["nodes"]


def test_floor_div_is_exact_and_never_above():
    """The floored quotient is exactly floor((theta - shift) / scale) near float resolution."""
    rng = np.random.default_rng(3)
    theta = np.concatenate([rng.uniform(0, 2.0**52, 500), [2.0**53 - 1, 10.0**13 + 0.5, 7.0]])
    theta = np.floor(theta) + rng.choice([0.0, 0.25, 0.5, 0.999], len(theta))
    theta[-1] = 7.0
    shift = np.zeros(len(theta), np.int64) + 3
    for scale in (1, 10, 1000, 10**7):
        got = tb._floor_div(theta, shift, scale)
        want = [(int(np.floor(t)) - 3) // scale for t in theta.tolist()]   # exact: t >= 3
        assert got.tolist() == want


# ------------------------------------------------------------------------------ refusals
def test_scaling_overflow_is_refused_not_wrapped():
    """Spans of 1e16 need a divisor of 10 to fit 2**50: with at most 1 allowed, refused."""
    big = make_problem([[0, 10**15], [0, 3 * 10**15]], [(0, 1), (0, 1)], [[1, 1], [1, 1]],
                       [[0, 1]], [[0, 10**15, 2 * 10**15, 0]])
    prep = prepare(big, reduce=False)
    lam = np.zeros(len(prep.rm.base))
    with pytest.raises(ScalingError):
        tb.build_priced(prep.rm, lam, max_scale=1)
    out = tb.priced_solve(big, prep.rm, lam, SECONDS, max_scale=1)
    assert out.bound is None and out.note.startswith("refused")
    # a priced unary beyond 2**61 (prices far beyond any cost) is refused too
    tight = dataclasses.replace(big, capacity=Capacity.uniform(3),
                                interval_usages=np.array([1, 5, 2, 6], np.int64))
    prep = prepare(tight, reduce=False)
    with pytest.raises(ScalingError):
        tb.build_priced(prep.rm, np.full(len(prep.rm.base), 1e300))
    # the scale used keeps every entry within 2**50
    net = tb.build_priced(prepare(big, reduce=False).rm, lam)
    assert net.scale > 1
    assert max(float(t[np.isfinite(t)].max()) for _, t in net.functions) <= 2.0**50


# ------------------------------------------------------------------------------ backend phase
def test_backend_without_toulbar2_skips_the_phase(monkeypatch):
    calls = []
    monkeypatch.setattr(tb, "priced_solve", lambda *a, **k: calls.append(a) or tb.PricedOutcome(
        None, "spy"))
    p = chain_problem()
    for flag in (False, True):
        res = BoundBackend().solve(p, time.time() + 2.5, 0, None, NullReporter(
            {"toulbar2": flag, "tb2_share": 0.0, "tb2_min_s": 0.5}))
        assert res.lower_bound is not None
        assert len(calls) == int(flag), res.note
    assert "toulbar2: spy" in res.note


def frustrated_clique(n=5):
    """Memory-free K_n on two strategies, each edge charging 10 when its ends agree: the local
    polytope (half on every strategy) costs 0, every plan at least 10 * (same-side pairs)."""
    edges = [[u, v] for u in range(n) for v in range(u + 1, n)]
    return make_problem([[u % 2, 1] for u in range(n)], [(0, 1)] * n, [[1, 1]] * n, edges,
                        [[10, 0, 0, 10]] * len(edges))


def test_backend_reports_a_higher_toulbar2_bound():
    """Where the star bound stops at the local polytope, the finished search reaches the
    optimum; it is reported through ``report.bound`` and returned."""
    p = frustrated_clique()
    opt = true_optimum(p)
    star = BoundBackend().solve(p, time.time() + 60, 0, None,
                                NullReporter({"max_steps": 30, "toulbar2": False}))
    assert star.lower_bound < opt
    reporter = NullReporter({"toulbar2": True, "tb2_share": 0.0, "tb2_min_s": 0.5})
    res = BoundBackend().solve(p, time.time() + 5.0, 0, None, reporter)
    assert res.lower_bound == opt, res.note
    assert "toulbar2 raised" in res.note
    assert any(value == opt and "toulbar2" in note for _, value, note in reporter.bounds)


def _stuck_child(*args) -> dict:
    signal.signal(signal.SIGVTALRM, signal.SIG_IGN)   # deaf to the stop signal too
    time.sleep(600)
    return {}


def test_stuck_child_is_killed_and_the_backend_answers(monkeypatch):
    monkeypatch.setattr(tb, "priced_child", _stuck_child)
    p = chain_problem()
    t = time.time()
    res = BoundBackend().solve(p, t + 5.0, 0, None, NullReporter(
        {"toulbar2": True, "tb2_share": 0.0, "tb2_min_s": 0.5}))
    assert time.time() < t + 5.5
    assert res.lower_bound is not None and res.lower_bound <= true_optimum(p)
    assert "toulbar2 child killed: no answer before its limit" in res.note
