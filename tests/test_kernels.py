"""The numba kernels agree with the exact evaluator on random small instances.

Instances are built with the Problem constructor and cover what contest files do not: self-loops,
hyperedges, unary edges, repeated edges, several (overlapping) intervals per node, time-varying
capacity and forbidden entries.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from portfolio.evaluate import evaluate, usage_profile
from portfolio.kernels import incremental as inc
from portfolio.kernels import moves as mv
from portfolio.kernels import search as se
from portfolio.kernels import segtree
from portfolio.kernels import trws as tw
from portfolio.kernels.model import build_model
from portfolio.kernels.reduce import KERNEL_SWITCHES, contract, expand, reduce_problem
from portfolio.kernels.jit import from_python
from portfolio.kernels.segtree import seg_build, seg_leaves
from portfolio.presolve import SWITCHES, presolve
from portfolio.problem import FORBIDDEN, Capacity, Problem, offsets_from_counts

# kernels called only from other kernels have no CPython wrapper; tests call them through one
seg_add, seg_query = from_python(segtree.seg_add), from_python(segtree.seg_query)
node_delta_one, node_costs_all = from_python(inc.node_delta_one), from_python(inc.node_costs_all)
apply_move, block_move = from_python(inc.apply_move), from_python(mv.block_move)
cascade_node = from_python(mv.cascade_node)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def problems(draw, forbidden: bool = True, general: bool = True) -> Problem:
    """A random instance; every table entry is forbidden with probability ~1/8 when allowed."""
    n = draw(st.integers(1, 6))
    k = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), np.int64)
    cost = st.integers(0, 50)
    if forbidden:
        cost = st.one_of(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50),
                         st.integers(0, 50), st.integers(0, 50), st.integers(0, 50),
                         st.integers(0, 50), st.just(FORBIDDEN))
    node_costs = np.array(draw(st.lists(cost, min_size=int(k.sum()), max_size=int(k.sum()))),
                          np.int64)
    iv_node, iv_start, iv_end, iv_use = [], [], [], []
    for i in range(n):
        for _ in range(draw(st.integers(0 if general else 1, 3 if general else 1))):
            a = draw(st.integers(0, 12))
            b = draw(st.integers(a, 14))
            iv_node.append(i)
            iv_start.append(a)
            iv_end.append(b)
            iv_use.extend(draw(st.lists(st.integers(0, 20), min_size=int(k[i]),
                                        max_size=int(k[i]))))
    iv_counts = k[np.array(iv_node, np.int64)] if iv_node else np.zeros(0, np.int64)
    edges = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=1 if general else 2,
                                   max_size=3 if general else 2), max_size=8))
    if not general:
        edges = [e for e in edges if e[0] != e[1]]
    sizes = [int(np.prod(k[e])) for e in edges]
    ecosts = np.array(draw(st.lists(cost, min_size=sum(sizes), max_size=sum(sizes))), np.int64)
    if general and draw(st.booleans()):
        times = sorted(set(draw(st.lists(st.integers(0, 14), min_size=1, max_size=4))))
        vals = draw(st.lists(st.integers(0, 60), min_size=len(times), max_size=len(times)))
        capacity = Capacity(np.array(times, np.int64), np.array(vals, np.int64))
    else:
        capacity = Capacity.uniform(draw(st.integers(0, 80)))
    return Problem(
        name="random", strategy_offsets=offsets_from_counts(k), node_costs=node_costs,
        interval_node=np.array(iv_node, np.int64), interval_start=np.array(iv_start, np.int64),
        interval_end=np.array(iv_end, np.int64),
        interval_usage_offsets=offsets_from_counts(iv_counts),
        interval_usages=np.array(iv_use, np.int64),
        edge_node_offsets=offsets_from_counts(np.array([len(e) for e in edges], np.int64)),
        edge_nodes=np.array([x for e in edges for x in e], np.int64),
        edge_cost_offsets=offsets_from_counts(np.array(sizes, np.int64)), edge_costs=ecosts,
        capacity=capacity,
    )


def seeded_model(problem: Problem, seed: int):
    """What a property test over (problem, seed) starts from: the seed's generator, the kernel model."""
    return np.random.default_rng(seed), build_model(problem)


def random_plan(problem: Problem, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(problem.num_nodes) * problem.strategy_counts).astype(np.int64)


def check_state(problem, m, sol, t, d) -> None:
    """Tree and penalised cost agree with the exact evaluator."""
    ev = evaluate(problem, sol)
    slack = usage_profile(problem, sol) - np.minimum(problem.point_capacity, 1 << 61)
    assert np.array_equal(seg_leaves(t, d, len(slack)), slack)
    assert (t[1] <= 0) == ev.feasible
    cost, forb = inc.plan_cost(m, sol)
    assert forb == ev.forbidden_node_choices + ev.forbidden_edge_entries
    if forb == 0:
        assert cost == ev.cost


# ------------------------------------------------------------------------------------------ tree
@SETTINGS
@given(st.lists(st.integers(-100, 100), min_size=1, max_size=40), st.data())
def test_segment_tree_matches_naive_profile(values, data):
    t, d = seg_build(np.array(values, np.int64))
    ref = np.array(values, np.int64)
    n = len(values)
    for _ in range(30):
        lo = data.draw(st.integers(0, n))
        hi = data.draw(st.integers(lo, n))
        if data.draw(st.booleans()):
            v = data.draw(st.integers(-50, 50))
            seg_add(t, d, lo, hi, v)
            ref[lo:hi] += v
        elif lo < hi:
            assert seg_query(t, d, lo, hi) == ref[lo:hi].max()
        assert t[1] == ref.max()
    assert np.array_equal(seg_leaves(t, d, n), ref)


# ------------------------------------------------------------------------------------------ deltas
@SETTINGS
@given(problems(), st.integers(0, 2**32 - 1))
def test_incremental_deltas_match_full_evaluation(problem, seed):
    rng, m = seeded_model(problem, seed)
    sol = random_plan(problem, rng)
    t, d = inc.build_tree(m, sol)
    check_state(problem, m, sol, t, d)
    cost = inc.plan_cost(m, sol)[0]
    buf = np.zeros(int(problem.strategy_counts.max()), np.int64)
    for _ in range(25):
        i = int(rng.integers(problem.num_nodes))
        s = int(rng.integers(problem.strategy_counts[i]))
        dc = node_delta_one(m, sol, i, s)
        node_costs_all(m, sol, i, buf)
        assert dc == buf[s] - buf[sol[i]]
        apply_move(m, sol, t, d, i, s)
        new = inc.plan_cost(m, sol)[0]
        assert new - cost == dc
        cost = new
        check_state(problem, m, sol, t, d)


@SETTINGS
@given(problems(), st.integers(0, 2**32 - 1), st.booleans())
def test_compound_moves_keep_state_exact(problem, seed, hard):
    """Block, cascade, descent, kicks and repair report exact deltas and keep the tree in step;
    with ``hard`` a feasible state stays feasible."""
    rng, m = seeded_model(problem, seed)
    sol = random_plan(problem, rng)
    t, d = inc.build_tree(m, sol)
    if hard and t[1] > 0:
        hard = False
    sc = inc.make_scratch(m, seed)
    wp = rng.random(max(len(m.pc_lo), 1)) * (0 if hard else 3)
    n = problem.num_nodes
    cost = inc.plan_cost(m, sol)[0]
    for _ in range(6):
        x = int(rng.integers(n))
        ok, dc = block_move(m, sol, t, d, wp, hard, x, 4, 1000, sc)
        ok2, dc2 = cascade_node(m, sol, t, d, wp, hard, x, 10, sc, False, True)
        new = inc.plan_cost(m, sol)[0]
        assert new - cost == dc + dc2
        cost = new
        check_state(problem, m, sol, t, d)
        if hard:
            assert t[1] <= 0
    dc = se.descend_all(m, sol, t, d, wp, hard, sc, np.arange(n), 4, 1000, 10)
    assert inc.plan_cost(m, sol)[0] - cost == dc
    cost += dc
    best = sol.copy()
    cur, best_c, _, _ = se.ils(m, sol, t, d, wp, hard, sc, 20, 1, 3, 3, 1000, 5, 0.0, best)
    assert inc.plan_cost(m, sol)[0] - cost == cur
    check_state(problem, m, sol, t, d)
    if not hard:
        boff, items, owner = se.stab_index(m, len(m.base))
        dc, ok = se.repair(m, sol, t, d, sc, boff, items, owner, 1000)
        assert inc.plan_cost(m, sol)[0] - (cost + cur) == dc
        assert ok == (t[1] <= 0)
        check_state(problem, m, sol, t, d)


def _has_valid_plan(problem) -> bool:
    """Whether some plan avoids every forbidden choice and fits in memory (by enumeration)."""
    import itertools

    if float(np.prod(problem.strategy_counts.astype(float))) > 20000:
        reject()   # too many plans to enumerate: another example, not a skipped test
    for plan in itertools.product(*[range(int(k)) for k in problem.strategy_counts]):
        ev = evaluate(problem, list(plan))
        if ev.forbidden_node_choices + ev.forbidden_edge_entries == 0 and ev.feasible:
            return True
    return False


@SETTINGS
@given(problems(), st.integers(0, 2**32 - 1))
def test_reduction_is_exact_for_forbidden_free_plans(problem, seed):
    rng, m = seeded_model(problem, seed)
    red = reduce_problem(problem, m)
    rm = red.model
    if red.presolved is None and presolve(problem, **KERNEL_SWITCHES).reduced is None:
        # the presolve proved that no plan is both forbidden-free and within memory
        assert not _has_valid_plan(problem)
    # (else an identity reduction: the presolve kept every node and strategy)
    offset = 0 if red.presolved is None else red.presolved.reduced.cost_offset
    for _ in range(5):
        r = np.array([rng.choice(np.flatnonzero(rm.alive[rm.soff[i]:rm.soff[i + 1]]))
                      for i in range(len(rm.soff) - 1)], np.int64)
        plan = expand(red, r)
        assert (plan >= 0).all() and (plan < problem.strategy_counts).all()
        rc, rf = inc.plan_cost(rm, r)
        ev = evaluate(problem, plan)
        if ev.forbidden_node_choices + ev.forbidden_edge_entries == 0:
            assert rc + offset == ev.cost and rf == 0
            assert np.array_equal(contract(red, plan), r)
        t, d = inc.build_tree(rm, r)
        assert (t[1] <= 0) == ev.feasible


@SETTINGS
@given(problems(general=False), st.integers(0, 2**32 - 1))
def test_reduction_keeps_every_forbidden_free_plan(problem, seed):
    """Exhaustive on tiny instances: the forbidden-free plans are exactly the expansions."""
    if int(np.prod(problem.strategy_counts.astype(float))) > 2000:
        return
    m = build_model(problem)
    red = reduce_problem(problem, m)
    offset = 0 if red.presolved is None else red.presolved.reduced.cost_offset
    grids = np.meshgrid(*[np.arange(k) for k in problem.strategy_counts], indexing="ij")
    plans = np.stack([g.ravel() for g in grids], axis=1)
    for plan in plans:
        ev = evaluate(problem, plan)
        if ev.forbidden_node_choices + ev.forbidden_edge_entries == 0:
            r = contract(red, plan)
            assert r is not None
            assert inc.plan_cost(red.model, r)[0] + offset == ev.cost


@SETTINGS
@given(problems(general=False))
def test_kernel_domains_are_the_presolve_consistency_domains(problem):
    """The kernel view prunes with the presolve's arc-consistency routine: same domains.

    Node costs finite and memory unlimited, so that edge tables alone decide what goes.
    """
    problem = dataclasses.replace(problem, capacity=Capacity.unlimited(),
                                  node_costs=np.where(problem.node_costs == FORBIDDEN, 7,
                                                      problem.node_costs))
    pre = presolve(problem, **{s: s in ("forbidden", "arc_consistency") for s in SWITCHES})
    m = build_model(problem)
    if pre.reduced is None:  # a domain emptied: the kernels then keep every strategy
        assert m.alive.all()
        return
    seg = np.repeat(np.arange(problem.num_nodes), problem.strategy_counts)
    assert np.array_equal(pre.reduced.strategy_counts,
                          np.bincount(seg[m.alive], minlength=problem.num_nodes))
    assert np.array_equal(pre.reduced.node_costs, problem.node_costs[m.alive])


@SETTINGS
@given(problems(forbidden=False, general=False), st.integers(0, 2**32 - 1))
def test_trws_labelling_energy_is_the_plan_cost(problem, seed):
    m = build_model(problem)
    n = problem.num_nodes
    order = np.arange(n, dtype=np.int64)
    pos, rev, moff, gamma = tw.trws_setup(m, order)
    theta = np.zeros(len(m.ncost))
    tw.unaries(m, np.zeros(max(len(m.pc_lo), 1)), theta)
    msg = np.zeros(int(moff[-1]))
    lab = np.zeros(n, np.int64)
    tw.trws_iterate(m, theta, order, pos, rev, moff, gamma, msg, lab, 3,
                    np.zeros(int(problem.strategy_counts.max())))
    assert tw.labelling_energy(m, theta, lab) == pytest.approx(evaluate(problem, lab).cost)


def test_tree_pieces_merge_overlapping_intervals():
    """Two overlapping intervals of one node are summed where they overlap."""
    problem = Problem(
        name="overlap", strategy_offsets=np.array([0, 2]), node_costs=np.array([0, 0]),
        interval_node=np.array([0, 0]), interval_start=np.array([0, 2]),
        interval_end=np.array([4, 6]), interval_usage_offsets=np.array([0, 2, 4]),
        interval_usages=np.array([1, 5, 2, 7]), edge_node_offsets=np.array([0]),
        edge_nodes=np.zeros(0, np.int64), edge_cost_offsets=np.array([0]),
        edge_costs=np.zeros(0, np.int64), capacity=Capacity.uniform(11))
    m = build_model(problem)
    for s, feasible in ((0, True), (1, False)):
        sol = np.array([s])
        t, d = inc.build_tree(m, sol)
        assert (t[1] <= 0) == feasible == evaluate(problem, sol).feasible
