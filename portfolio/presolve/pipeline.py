"""The presolve's round loop: which reduction runs when, the switches, the counters and the report.

Why a loop of families rather than one pass each: every family can open work for another (a merge
changes domains, folding makes strategies forbidden, fewer strategies make time segments
irrelevant), so the loop runs them in a fixed order until a round changes nothing.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..evaluate import exact_sum
from ..problem import FORBIDDEN, INT64_MAX, Capacity, Problem, offsets_from_counts
from .consistency import arc, remove_forbidden
from .dominance import dominance
from .elimination import eliminate, single
from .folding import edge_tables
from .jitlock import compile_lock, mark_compiled, trace
from .mapping import Presolved, build
from .memory import intervals, memory_bounds
from .merge import merge
from .state import Infeasible, State

SWITCHES = ("forbidden", "arc_consistency", "functional", "edge_tables", "single", "dominance",
            "memory_free", "time_points", "memory_bounds")
"""The reduction switches, in the order they run; each is a keyword argument of :func:`presolve`."""

COUNTERS = (
    "forbidden_strategies",            # forbidden: node cost 10**18 in the input
    "forbidden_after_folding",         # forbidden: node cost became 10**18 by folding an edge into it
    "arc_consistency_strategies",      # arc_consistency
    "functional_merged_nodes",         # functional: nodes folded into a root
    "functional_internal_edges",       # functional: edges inside a merged group, folded into the root
    "functional_conflict_strategies",  # functional: root strategies contradicting a cycle of maps
    "functional_passes",
    "parallel_edges_summed",           # edge_tables
    "edges_folded",                    # edge_tables: edges that moved a row or column minimum
    "zero_edges_deleted",              # edge_tables
    "single_strategy_nodes",           # single
    "dominated_strategies",            # dominance
    "duplicate_strategies",            # dominance: exact duplicates of a lower-numbered strategy
    "constant_intervals",              # memory_free: usage moved into the capacity profile
    "memory_free_degree0",             # memory_free
    "memory_free_degree1",             # memory_free
    "memory_free_degree2",             # memory_free
    "irrelevant_intervals",            # time_points: intervals touching no kept time segment
    "memory_bound_strategies",         # memory_bounds: strategies that overflow memory in any plan
    "empty_intervals",                 # always: zero-length intervals are never live
    "unary_edges",                     # always: one-node edges (after diagonals) into node costs
    "diagonal_edges",                  # always: edges naming a node twice, folded onto the diagonal
)
"""The keys of ``report["reductions"]`` (always all present)."""

_F = FORBIDDEN
_GUARD = 10**18 // 4
"""Cost-combining reductions run only when the sum of all finite cost magnitudes is below this."""


def _magnitude(problem: Problem) -> int:
    """Sum over nodes and edges of the largest finite cost magnitude: exact, or an upper bound
    when that bound is already below the guard (the usual case; three passes over the costs
    instead of six, which on S's 10^8 edge entries was a fifth of the search's whole presolve)."""
    bound = 0
    for vals, offs in ((problem.node_costs, problem.strategy_offsets),
                       (problem.edge_costs, problem.edge_cost_offsets)):
        if len(vals):
            lo, hi = int(vals.min()), int(vals.max())
            if hi == _F:
                hi = int(np.max(vals, where=vals != _F, initial=lo))
            bound += max(abs(lo), abs(hi)) * (len(offs) - 1)
    if bound < _GUARD:
        return bound
    total = 0
    for vals, offs in ((problem.node_costs, problem.strategy_offsets),
                       (problem.edge_costs, problem.edge_cost_offsets)):
        if len(vals) == 0:
            continue
        mag = np.where(vals == _F, 0, np.abs(vals))
        mag = np.where(vals == np.iinfo(np.int64).min, INT64_MAX, mag)  # |int64 min| does not fit
        counts = np.diff(offs)
        nz = counts > 0
        total += exact_sum(np.maximum.reduceat(mag, offs[:-1][nz]) if nz.any() else mag[:0])
    return total


def _sizes(problem: Problem) -> dict:
    counts = problem.strategy_counts
    return {
        "nodes": problem.num_nodes,
        "strategies": int(counts.sum()),
        "edges": problem.num_edges,
        "time_points": int(len(problem.time_points)),
        "free_nodes": int(np.count_nonzero(counts > 1)),
        "intervals": problem.num_intervals,
        "edge_entries": int(len(problem.edge_costs)),
    }


def presolve(problem: Problem, *, forbidden: bool = True, arc_consistency: bool = True,
             functional: bool = True, edge_tables: bool = True, single: bool = True,
             dominance: bool = True, memory_free: bool = True, time_points: bool = True,
             memory_bounds: bool = True, max_rounds: int = 100) -> Presolved:
    """Reduce ``problem`` exactly; see the module docstring for the reductions and the guarantees."""
    t0 = time.perf_counter()
    sw = {"forbidden": forbidden, "arc_consistency": arc_consistency, "functional": functional,
          "edge_tables": edge_tables, "single": single, "dominance": dominance,
          "memory_free": memory_free, "time_points": time_points, "memory_bounds": memory_bounds}
    counts: dict[str, int] = dict.fromkeys(COUNTERS, 0)
    report: dict[str, Any] = {"switches": dict(sw), "before": _sizes(problem), "reductions": counts}
    magnitude = _magnitude(problem)
    combine = magnitude < _GUARD
    report["magnitude_guard"] = not combine
    if not combine:  # folded sums could reach 10**18: keep only reductions that never add costs
        for key in ("functional", "edge_tables", "single", "memory_free"):
            sw[key] = False
    st = State(problem, sw, counts)
    reduced, infeasible, rounds, (nid, dom_off, dom_flat, time_of) = _run(st, combine, max_rounds)
    report["rounds"] = rounds
    report["infeasible"] = infeasible
    report["after"] = _sizes(reduced) if reduced is not None else None
    report["offset"] = None if reduced is None else reduced.cost_offset
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return Presolved(problem, reduced, infeasible, report, nid, dom_off, dom_flat, st.chunks, time_of)



def _run(st: State, combine: bool, max_rounds: int) -> tuple[Problem | None, str | None, int, tuple]:
    """The round loop on ``st``: (reduced problem or None, infeasibility proof or None, rounds, map)."""
    sw = st.sw
    rounds = 0
    try:
        st.normalise(combine)
        if sw["forbidden"]:
            remove_forbidden(st)
        while rounds < max_rounds:
            rounds += 1
            changed = False
            if sw["arc_consistency"]:
                changed |= arc(st)
            if sw["edge_tables"]:
                changed |= edge_tables(st)
            if sw["single"]:
                changed |= single(st)
            if sw["functional"] and merge(st):
                continue  # domains changed shape: consistency and tables first
            changed |= intervals(st)
            if sw["memory_bounds"] and memory_bounds(st):
                changed = True
                continue  # fewer strategies: consistency, tables and the time analysis first
            if sw["dominance"]:
                changed |= dominance(st)
            if sw["memory_free"]:
                changed |= eliminate(st)
            if not changed:
                break
        intervals(st)
        reduced, nid, dom_off, dom_flat, time_of = build(st)
        return reduced, None, rounds, (nid, dom_off, dom_flat, time_of)
    except Infeasible as exc:
        empty = (np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                 np.zeros(0, dtype=np.int64))
        return None, str(exc), rounds, empty


def warm_up() -> float:
    """Compile (or load from numba's cache) every presolve kernel on a tiny built-in instance, so the
    first real presolve in a process does not pay for it; returns the seconds spent."""
    t0 = time.perf_counter()
    with compile_lock("presolve"):   # the runner's presolve child and the kernel workers at once
        trace("presolve stage")
        _warm_up()
    mark_compiled("presolve")
    return time.perf_counter() - t0


def _warm_up() -> None:
    k = 3
    # a bijective chain 0-1-2-3 (functional merges), a parallel edge, a single-strategy node 4, a
    # memory-free node 5 with two neighbours, dominated strategies and a tight capacity
    costs = [[1, 2, 3], [2, 1, 0], [0, 0, 5], [4, 1, 1], [2], [1, 5, 3]]
    bij = [_F] * 9
    for p in range(k):
        bij[p * k + (p + 1) % k] = p
    edges = [[0, 1], [1, 2], [2, 3], [1, 0], [3, 4], [5, 0], [5, 3]]
    tables = [bij, bij, bij, [1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3], [3, 1, 2, 0, 5, 1, 2, 2, 2],
              [0, 1, 2, 1, 0, 1, 2, 1, 0]]
    counts = np.array([len(c) for c in costs])
    problem = Problem(
        name="warm-up",
        strategy_offsets=offsets_from_counts(counts),
        node_costs=np.array([c for row in costs for c in row]),
        interval_node=np.arange(6),
        interval_start=np.array([0, 1, 2, 3, 0, 0]),
        interval_end=np.array([2, 3, 4, 5, 5, 0]),
        interval_usage_offsets=offsets_from_counts(counts),
        interval_usages=np.array([1, 2, 3, 3, 2, 1, 1, 1, 1, 2, 2, 1, 4, 0, 0, 0]),
        edge_node_offsets=offsets_from_counts(np.full(len(edges), 2)),
        edge_nodes=np.array([v for e in edges for v in e]),
        edge_cost_offsets=offsets_from_counts(np.array([len(t) for t in tables])),
        edge_costs=np.array([x for t in tables for x in t]),
        capacity=Capacity.uniform(9),
    )
    presolve(problem)

