"""The strategies a plan without forbidden choices can use: node costs of 10**18 removed, then arc
consistency over the edges' forbidden entries to a fixpoint (the presolve's routine,
:func:`portfolio.presolve.consistency.arc_fixpoint`, the project's one arc-consistency kernel).

Why here: the least peak of any plan is a minimum over plans with finite cost, and a strategy that
no such plan can use must not lower it. Removing it is sound: arc consistency only removes a
strategy when every entry it could meet on some edge is forbidden given the partner's remaining
strategies.
"""

from __future__ import annotations

import numpy as np

from ..leastpeak import Domains, plain_domains
from ..problem import FORBIDDEN, Problem, fold_repeated_nodes


def binary_edges(problem: Problem) -> np.ndarray:
    """Mask of the edges on two distinct nodes (the kernel's fast path); the rest are folded."""
    two = problem.edge_arity == 2
    starts = problem.edge_node_offsets[:-1][two]
    out = np.zeros(problem.num_edges, dtype=bool)
    out[two] = problem.edge_nodes[starts] != problem.edge_nodes[starts + 1]
    return out


def allowed_strategies(problem: Problem, consistency: bool = True) -> Domains:
    """The domains of plans without forbidden choices: node costs of 10**18 out, then (with
    ``consistency``) arc consistency over binary edges and the other edges (folded onto their
    distinct nodes) to their common fixpoint."""
    plain = plain_domains(problem)
    if plain.empty:
        return plain
    alive, removed = plain.alive, plain.removed
    counts = problem.strategy_counts.astype(np.int64)
    so = problem.strategy_offsets.astype(np.int64)
    if not consistency or problem.num_edges == 0:
        return Domains(alive, None, removed)
    from ..presolve.consistency import arc_fixpoint

    binary = binary_edges(problem)
    starts = problem.edge_node_offsets[:-1]
    eu = problem.edge_nodes[starts[binary]].astype(np.int64)
    ev = problem.edge_nodes[starts[binary] + 1].astype(np.int64)
    toff = problem.edge_cost_offsets[:-1][binary].astype(np.int64)
    hyper = []
    for e in np.flatnonzero(~binary).tolist():
        flat = problem.edge_costs[problem.edge_cost_offsets[e]:problem.edge_cost_offsets[e + 1]]
        nodes, table = fold_repeated_nodes(problem.nodes_of_edge(e), flat, counts)
        if not nodes:
            if int(flat[0]) == FORBIDDEN:
                return Domains(alive, f"edge {e} names no node and its only entry is forbidden",
                               removed)
            continue
        hyper.append((np.array(nodes, dtype=np.int64), np.asarray(table)))
    tab = np.ascontiguousarray(problem.edge_costs, dtype=np.int64)
    more, why = arc_fixpoint(counts, so, alive, eu, ev, toff, tab, hyper, FORBIDDEN)
    return Domains(alive, why, removed + int(more))
