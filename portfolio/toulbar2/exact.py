"""Exact mode of the toulbar2 engine (issue 21): the true constrained problem, to a proof.

The penalty search (:mod:`.search`) prices memory and proves nothing. On small reduced
instances the contest winner gave toulbar2 the problem itself, memory as one linear constraint per
time point; this module builds that network and solves it in a forked child (:func:`solve_exact`).

**Exactness.** A proof must hold to the unit, so nothing is scaled: functions are shifted to a
least finite entry of 0 (shifts and ``cost_offset`` make one ``constant``), and instances whose
finite spans sum above ``COST_LIMIT`` (2**50) are refused: every assignment's cost is then exact in
a double and in toulbar2 (top ~5.1e17). Entries equal to ``FORBIDDEN`` are hard.

**Memory.** At a limited time point, node ``i`` loads ``w_i(s)`` (its live intervals' usages), and
``sum_i (w_i(s_i) - m_i) <= C - sum_i m_i`` with ``m_i = min_s w_i(s)``. Points whose all-max load
fits are left out, an all-min overload is infeasibility, one-node constraints become hard unary
costs; identical constraints keep the tightest capacity, and a point implied by its neighbour in
time (weights all at most, capacity no tighter) is dropped. toulbar2's knapsack reads ``sum >=
capacity`` over (value, weight) pairs, so both are negated (as ``AddGeneralizedLinearConstraint``
with ``'<='`` does, but that one is quadratic in the scope in Python).

**Proof.** toulbar2 sets ``Option.limited`` when a limit (its timer, our SIGVTALRM) stopped the
search: a plan is proven optimal only when the search ended unlimited. ``GetDDualBound`` is no
proof test: after a completed search it can lag below the optimum.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from portfolio.problem import FORBIDDEN, INT64_MAX, Problem, fold_repeated_nodes

from .cfn import open_network, post_functions, preload, search_and_read
from .child import KILL_GRACE, run_in_child

MAX_NODES, MAX_STRATEGIES, MAX_POINTS, MAX_SQUARES = 2000, 50_000, 1600, 6_000_000
"""Eligibility (the winner's exact-mode thresholds): fewer nodes, strategies, limited time points
and a smaller sum of squared domain sizes than these."""

COST_LIMIT = 2**50
"""The largest total finite cost span accepted: any assignment's cost stays an exact double."""

VAC = 0
"""toulbar2's ``vac`` option in exact mode (see docs/benchmarks/toulbar2.md, "Exact mode")."""

WEIGHT_LIMIT = 2**60
"""The largest total knapsack weight (toulbar2 reads weights and capacities as 64-bit integers)."""


@dataclass
class ExactNetwork:
    """The constrained network, unscaled: toulbar2's cost of a plan + ``constant`` = its cost."""

    counts: np.ndarray
    unary: dict = field(default_factory=dict)      # node -> int64 row (-1 = forbidden)
    functions: list = field(default_factory=list)  # (scope tuple, int64 flat table, -1 = forbidden)
    knapsacks: list = field(default_factory=list)  # (nodes, per-node int64 weights, capacity)
    constant: int = 0
    infeasible: str = ""                           # why no plan can be feasible ("" if unknown)


# -------------------------------------------------------------------------------------- eligibility
def _span(values: np.ndarray, offsets: np.ndarray) -> int:
    """The exact sum over the rows of a flat array of their finite span (max - min)."""
    starts = offsets[:-1][offsets[1:] > offsets[:-1]]
    if len(starts) == 0:
        return 0
    hard = values == FORBIDDEN
    low = np.minimum.reduceat(np.where(hard, INT64_MAX, values), starts).astype(object)
    high = np.maximum.reduceat(np.where(hard, -INT64_MAX, values), starts).astype(object)
    return int((high - low)[low != INT64_MAX].sum())


def exact_eligible(problem: Problem) -> tuple[bool, str]:
    """Whether the exact mode may run on ``problem`` (a reduced instance), and why not."""
    counts = np.asarray(problem.strategy_counts, dtype=np.int64)
    limited = int((problem.point_capacity < INT64_MAX).sum())
    squares = int((counts**2).sum())
    for value, limit, what in ((problem.num_nodes, MAX_NODES, "nodes"),
                               (int(counts.sum()), MAX_STRATEGIES, "strategies"),
                               (limited, MAX_POINTS, "limited time points"),
                               (squares, MAX_SQUARES, "sum of squared domain sizes")):
        if value >= limit:
            return False, f"{value} {what} (exact mode needs fewer than {limit})"
    span = (_span(problem.node_costs, problem.strategy_offsets)
            + _span(problem.edge_costs, problem.edge_cost_offsets))
    if span > COST_LIMIT:
        return False, (f"finite costs span {span:.3g} in total, above 2**50: toulbar2 could not "
                       f"hold them exactly, and the exact mode never scales")
    top = max(int(np.abs(c[c != FORBIDDEN]).max(initial=0))
              for c in (problem.node_costs, problem.edge_costs))
    if top >= 2**60 // (problem.num_edges + 1):   # a node row sums its cost and one-node edges
        return False, "finite costs too large for exact int64 sums"
    usages = np.abs(problem.interval_usages)
    if len(usages) and int(usages.max()) * problem.num_intervals > WEIGHT_LIMIT:
        return False, "interval usages too large for toulbar2's 64-bit knapsack weights"
    return True, "eligible"


# ------------------------------------------------------------------------------------------ network
def _shifted(values: np.ndarray, hard: np.ndarray) -> tuple[np.ndarray, int]:
    """(entries minus their least finite one, -1 where ``hard``; that least entry)."""
    if hard.all():
        return np.full(values.shape, -1, dtype=np.int64), 0
    low = int(values[~hard].min())
    return np.where(hard, -1, values - low), low


def _point_loads(problem: Problem):
    """Per limited time point, in time order: (point, the load of every strategy as one dense
    int64 array, capacity); the load is updated as intervals start and end."""
    lo, hi = problem.interval_point_range
    cap = problem.point_capacity
    rows = np.repeat(np.arange(problem.num_intervals), np.diff(problem.interval_usage_offsets))
    target = (problem.strategy_offsets[problem.interval_node[rows]]
              + np.arange(len(rows)) - problem.interval_usage_offsets[rows])
    usages = problem.interval_usages.astype(np.int64)
    by_start, by_end = np.argsort(lo[rows], kind="stable"), np.argsort(hi[rows], kind="stable")
    start_at = np.searchsorted(lo[rows][by_start], np.arange(len(cap) + 1))
    end_at = np.searchsorted(hi[rows][by_end], np.arange(len(cap) + 1))
    load = np.zeros(len(problem.node_costs), dtype=np.int64)
    for k in range(len(cap)):
        enter = by_start[start_at[k]:start_at[k + 1]]
        leave = by_end[end_at[k]:end_at[k + 1]]
        np.add.at(load, target[enter], usages[enter])
        np.subtract.at(load, target[leave], usages[leave])
        if cap[k] < INT64_MAX:
            yield k, load, int(cap[k])


def _add_knapsacks(problem: Problem, net: ExactNetwork, hard: list) -> None:
    """One knapsack per time point that some plan can overload (see the module docstring);
    one-node constraints mark ``hard`` (per node, per strategy) instead."""
    soff, counts = problem.strategy_offsets, net.counts
    last: Optional[tuple] = None   # (dense weights, capacity) of the last kept knapsack
    seen: dict = {}                # digest of dense weights -> index of its knapsack
    for k, load, cap in _point_loads(problem):
        mins = np.minimum.reduceat(load, soff[:-1])
        maxs = np.maximum.reduceat(load, soff[:-1])
        room = cap - int(mins.sum())
        if int(maxs.sum()) <= cap:
            continue
        if room < 0:
            net.infeasible = f"time point {k}: the least load exceeds the capacity {cap}"
            continue
        dense = load - np.repeat(mins, counts)
        nodes = np.flatnonzero(maxs > mins).tolist()
        weights = [dense[soff[v]:soff[v + 1]] for v in nodes]
        if len(nodes) == 1:
            hard[nodes[0]] = hard[nodes[0]] | (weights[0] > room)
            continue
        key = hashlib.blake2b(dense.tobytes(), digest_size=16).digest()
        j = seen.get(key)
        if j is not None and net.knapsacks[j][0] == nodes and all(
                np.array_equal(a, b) for a, b in zip(net.knapsacks[j][1], weights)):
            net.knapsacks[j] = (nodes, net.knapsacks[j][1], min(net.knapsacks[j][2], room))
            if j == len(net.knapsacks) - 1:
                last = (last[0], net.knapsacks[j][2])
            continue                                       # the same: the tightest capacity
        if last is not None and (dense <= last[0]).all() and last[1] <= room:
            continue                                       # implied by the previous point
        if last is not None and (last[0] <= dense).all() and room <= last[1]:
            net.knapsacks.pop()                            # implies the previous point
            seen = {b: i for b, i in seen.items() if i < len(net.knapsacks)}
        seen[key] = len(net.knapsacks)
        net.knapsacks.append((nodes, weights, room))
        last = (dense, room)


def build_exact_network(problem: Problem) -> ExactNetwork:
    """The constrained network of ``problem`` (check :func:`exact_eligible` first)."""
    counts = np.asarray(problem.strategy_counts, dtype=np.int64)
    net = ExactNetwork(counts, constant=int(problem.cost_offset))
    if len(counts) and counts.min() == 0:
        net.infeasible = "a node has no strategy"
        return net
    rows = [problem.costs_of(i).astype(np.int64) for i in range(problem.num_nodes)]
    hard = [row == FORBIDDEN for row in rows]
    for e in range(problem.num_edges):
        scope, table = fold_repeated_nodes(problem.nodes_of_edge(e), problem.edge_table(e),
                                           problem.strategy_counts)
        table = np.asarray(table.reshape(-1), dtype=np.int64)
        if len(scope) == 1:                                # one node: into its unary
            v = scope[0]
            hard[v] = hard[v] | (table == FORBIDDEN)
            rows[v] = rows[v] + np.where(table == FORBIDDEN, 0, table)
            continue
        rel, low = _shifted(table, table == FORBIDDEN)     # no node: a constant (size 1)
        if (rel < 0).all():
            net.infeasible = f"edge {e} forbids every combination"
        net.constant += low
        if len(scope) > 1 and rel.any():
            net.functions.append((scope, rel))
    if len(counts):
        _add_knapsacks(problem, net, hard)
    for i, (row, forbid) in enumerate(zip(rows, hard)):
        rel, low = _shifted(row, forbid)
        if forbid.all():
            net.infeasible = net.infeasible or f"node {i}: every strategy is forbidden"
        net.constant += low
        if rel.any():
            net.unary[i] = rel
    return net


# ------------------------------------------------------------------------------------------ solving
def _knapsack_arguments(weights: list, cap: int) -> str:
    """toulbar2's knapsack arguments for ``sum_i w_i(s_i) <= cap``: it reads ``sum >= capacity``
    over (value, weight) pairs, so weights and capacity are negated; zero weights are left out."""
    parts = [str(-cap)]
    for w in weights:
        values = np.flatnonzero(w)
        parts.append(str(len(values)))
        parts.extend(f"{s} {-int(w[s])}" for s in values.tolist())
    return " ".join(parts)


def tb2_exact_child(net: ExactNetwork, seconds: float, seed: int, vac: int,
                    ubinit: Optional[int], hint: Optional[list],
                    backtracks: Optional[int] = None) -> dict:
    """Post ``net`` and run toulbar2's complete search (in a forked child: global state) for
    ``seconds``, or ``backtracks`` in deterministic mode."""
    preload()
    t0 = time.monotonic()
    cfn = open_network(net.counts, seed, vac=vac, ubinit=ubinit)
    inf = float("inf")
    answer = {"plan": None, "cost": None, "dual": None, "limited": False, "nodes": 0,
              "backtracks": 0}
    try:   # posting propagates: a contradiction here is a proof that no plan exists
        post_functions(cfn, (([i], [inf if c < 0 else float(c) for c in row.tolist()])
                             for i, row in net.unary.items()))
        post_functions(cfn, ((scope, [inf if c < 0 else float(c) for c in table.tolist()])
                             for scope, table in net.functions))
        for nodes, weights, cap in net.knapsacks:
            cfn.CFN.wcsp.postKnapsackConstraint(list(nodes), _knapsack_arguments(weights, cap),
                                                kp=True)
    except cfn.Contradiction:
        return {**answer, "build_s": time.monotonic() - t0, "solve_s": 0.0}
    for i, s in enumerate(hint or []):   # toulbar2's value heuristic tries these first
        cfn.CFN.wcsp.setBestValue(i, int(s))
    return search_and_read(cfn, seconds, answer, t0, backtracks)


def network_entries(net: ExactNetwork) -> int:
    """Entries posted for ``net`` (function tables, knapsack weights, one per variable): what
    posting it costs, and the size deterministic mode's work units count (:mod:`.pace`)."""
    return sum(len(t) for _, t in net.functions) + sum(
        len(w) for _, ws, _ in net.knapsacks for w in ws) + len(net.counts)


def _answer(t0: float, note: str, plan: Optional[list] = None, cost: Optional[int] = None,
            proven: bool = False, infeasible: bool = False, dual: Optional[int] = None,
            work: Optional[dict] = None, **timings: float) -> dict:
    timings = {k: round(v, 3) for k, v in timings.items()}
    timings["total_s"] = round(time.monotonic() - t0, 3)
    return {"plan": plan, "cost": cost, "proven": proven, "infeasible": infeasible, "dual": dual,
            "note": note, "timings": timings, "work": work or {}}


def solve_exact(problem: Problem, seconds: float, seed: int = 0, ub: Optional[int] = None,
                start: Optional[Any] = None, vac: int = VAC, hint: bool = False,
                backtracks: Optional[int] = None) -> dict:
    """Solve ``problem`` (reduced) exactly with toulbar2 within about ``seconds`` of wall clock.

    Returns ``plan`` (list or None) and its exact ``cost``; ``proven`` (toulbar2 completed its
    search: the plan is optimal); ``infeasible`` (no plan free of forbidden choices fits memory);
    ``dual`` (a lower bound on the optimum in the problem's own units, or None); ``note`` and
    ``timings``. ``ub`` (a known plan's cost) and ``start`` (a plan: its cost bounds the search when
    it is feasible and free of forbidden choices) speed up the proof; the plan returned is then
    never worse than ``ub`` (the start itself when nothing better is found). With ``hint`` toulbar2
    also tries the start's values first (off by default: a poor start's hints slowed a proof 3x).
    The search gets what is left of ``seconds`` after building; posting and a grace come on top.

    With ``backtracks`` (deterministic mode) toulbar2's search stops after that many backtracks
    instead, and ``seconds`` is only the wall-clock safety net (the child is stopped at it, then
    killed); ``work`` holds the counts the caller turns into work units (``entries`` posted,
    search ``nodes`` and ``backtracks``), empty when toulbar2 did not run."""
    from portfolio.evaluate import evaluate

    t0 = time.monotonic()
    ok, why = exact_eligible(problem)
    if not ok:
        return _answer(t0, f"not eligible: {why}")
    net = build_exact_network(problem)
    build_s = time.monotonic() - t0
    if net.infeasible:
        return _answer(t0, f"infeasible: {net.infeasible}", infeasible=True, build_s=build_s)
    fallback = None   # the start, when it is a feasible plan within ``ub``
    if start is not None:
        start = [int(v) for v in np.asarray(start, dtype=np.int64)]
        ev = evaluate(problem, np.asarray(start, dtype=np.int64))
        if ev.feasible and not ev.has_forbidden and (ub is None or ev.cost <= ub):
            ub, fallback = ev.cost, (start, ev.cost)
    ubinit = None if ub is None else int(ub) - net.constant + 1
    if ubinit is not None and ubinit <= 0:   # every plan costs at least the constant
        return _answer(t0, f"no plan costs {ub} or less", dual=net.constant, build_s=build_s)
    if ubinit is not None and ubinit > COST_LIMIT + 1:
        ubinit = None                        # above every finite plan's cost: no information
    if problem.num_nodes == 0:
        return _answer(t0, "no nodes", plan=[], cost=net.constant, proven=True,
                       dual=net.constant, build_s=build_s)
    entries = network_entries(net)
    if backtracks is None:
        search = max(1.0, seconds - (time.monotonic() - t0) - 5e-6 * entries)
        grace = 2.0 + 1e-5 * entries + KILL_GRACE   # posting, then toulbar2's way out
        args = (net, search, seed, vac, ubinit, start if hint else None)
        outcome, value = run_in_child(tb2_exact_child, args, search + grace, search=search,
                                      cap=t0 + max(seconds, search) + grace)
    else:   # the backtracks decide; the clock only stops a run that outlives ``seconds``
        safety = max(0.0, seconds - (time.monotonic() - t0))
        args = (net, safety, seed, vac, ubinit, start if hint else None, backtracks)
        outcome, value = run_in_child(tb2_exact_child, args, safety, search=safety,
                                      cap=time.monotonic() + safety)
    work = {"entries": entries}
    if outcome != "ok":
        return _answer(t0, f"toulbar2 child {outcome}: {value}", build_s=build_s, work=work)
    work.update(nodes=value["nodes"], backtracks=value["backtracks"])
    times = {"build_s": build_s, "post_s": value["build_s"], "search_s": value["solve_s"],
             "work": work}
    complete, plan = not value["limited"], value["plan"]
    dual = None if value["dual"] is None else int(math.ceil(value["dual"])) + net.constant
    if plan is None and complete:
        if ubinit is None:
            return _answer(t0, "toulbar2 proved that no plan fits", infeasible=True, **times)
        return _answer(t0, f"toulbar2 proved that no plan costs {ub} or less", dual=int(ub) + 1,
                       **times)
    if plan is None:
        plan, cost = fallback or (None, None)
        note = "limit reached, nothing better than the start" if plan else "limit reached, no plan"
        return _answer(t0, note, plan=plan, cost=cost, dual=dual if dual is None or cost is None
                       else min(dual, cost), **times)
    ev = evaluate(problem, np.asarray(plan, dtype=np.int64))
    if not ev.feasible or ev.has_forbidden or ev.cost != round(value["cost"]) + net.constant:
        return _answer(t0, f"toulbar2's plan failed the exact check (cost {ev.cost}, feasible "
                       f"{ev.feasible}, forbidden {ev.has_forbidden})", **times)
    if complete:
        return _answer(t0, f"optimal ({value['nodes']} search nodes)", plan=plan, cost=ev.cost,
                       proven=True, dual=ev.cost, **times)
    return _answer(t0, "limit reached", plan=plan, cost=ev.cost,
                   dual=None if dual is None else min(dual, ev.cost), **times)
