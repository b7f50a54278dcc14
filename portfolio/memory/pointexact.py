"""The least usage at one time point, exactly or as CP-SAT's proven bound, for small points.

At time point k, a plan without forbidden choices uses at least the minimum of
``sum_v w_v(s_v)`` over the live nodes' remaining strategies, subject to the forbidden pairs of the
edges among them (the other nodes and edges are dropped: a relaxation, so still a lower bound).
CP-SAT solves that small model with a deterministic-time limit and one worker, so the bound is the
same on every machine; its objective bound is a proof (integer model), and with a cut-off search
we take the proven bound, not the solution.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..problem import FORBIDDEN, Problem

MAX_CLAUSES = 200_000
"""A point whose forbidden pairs exceed this is left to the cheaper bounds."""

EXACT_LIMIT = 2**52
"""CP-SAT reports its bound as a float: below this magnitude it is an exact integer."""


def point_bound(problem: Problem, alive: np.ndarray, k: int, binary: np.ndarray,
                seconds: float) -> Optional[int]:
    """A lower bound on the usage at ``time_points[k]`` of any plan whose strategies are in
    ``alive``; None when the point is too large or its numbers too big for an exact float."""
    from ortools.sat.python import cp_model

    so = problem.strategy_offsets
    weights: dict[int, dict[int, int]] = {}
    for j in problem.live_intervals_at(k).tolist():
        v = int(problem.interval_node[j])
        row = problem.usages_of_interval(j)
        node = weights.setdefault(v, {})
        for s in np.flatnonzero(alive[so[v]:so[v + 1]]).tolist():
            node[s] = node.get(s, 0) + int(row[s])
    if not weights:
        return 0
    if sum(max(abs(x) for x in w.values()) for w in weights.values()) >= EXACT_LIMIT:
        return None
    model = cp_model.CpModel()
    x = {(v, s): model.NewBoolVar("") for v, w in weights.items() for s in w}
    for v, w in weights.items():
        model.AddExactlyOne([x[v, s] for s in w])
    clauses = 0
    live = np.zeros(problem.num_nodes, dtype=bool)
    live[list(weights)] = True
    starts = problem.edge_node_offsets[:-1]
    for e in np.flatnonzero(binary).tolist():
        u, v = int(problem.edge_nodes[starts[e]]), int(problem.edge_nodes[starts[e] + 1])
        if not (live[u] and live[v]):
            continue
        table = problem.edge_table(e)
        for p in weights[u]:
            for q in np.flatnonzero(table[p] == FORBIDDEN).tolist():
                if q in weights[v]:
                    model.AddBoolOr([x[u, p].Not(), x[v, q].Not()])
                    clauses += 1
        if clauses > MAX_CLAUSES:
            return None
    model.Minimize(sum(w * x[v, s] for v, ws in weights.items() for s, w in ws.items()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = float(seconds)
    status = solver.Solve(model)
    if status == cp_model.OPTIMAL:
        return int(round(solver.ObjectiveValue()))
    if status == cp_model.INFEASIBLE:
        return None   # the relaxation has no plan: arc consistency missed it; say nothing here
    if status == cp_model.FEASIBLE or status == cp_model.UNKNOWN:
        bound = solver.BestObjectiveBound()
        return int(math.ceil(bound - 1e-9)) if math.isfinite(bound) else None
    return None
