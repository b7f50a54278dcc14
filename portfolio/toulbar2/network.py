"""The penalised cost-function network of the toulbar2 penalty search: plain numpy, no toulbar2
(so every piece is testable without the solver).

One variable per node (its strategies), one unary function per node, one function per edge. Node
``i`` with weight ``w_i`` gets the unary ``cost_i(s) + w_i * excess_i(s)`` where ``excess_i(s)`` is
the sum, over the node's intervals that cover at least one time point of limited capacity, of
``usage_j(s) - min_s usage_j(s)`` (or the Lagrangian-priced usage of :mod:`.prices`, which replaces
``excess``). A merged node (presolve) may own several intervals: the *sum* is used, not the max,
because each interval loads memory at its own time points, so a strategy heavy on two intervals is
charged twice (what per-time-point prices would charge, with one shared price for the node's span);
the max would let such a strategy through at the price of one. Edge tables are posted as they are;
an edge that names a node twice is folded to its diagonal
(:func:`portfolio.problem.fold_repeated_nodes`), one that names a single node distinct goes into
that node's unary. Entries ``>= FORBIDDEN`` (10**18) become toulbar2's hard cost (``inf`` in
pytoulbar2, its top). A function whose every entry is forbidden is left out: every plan pays it, so
it changes no choice. The network at given weights is scaled as :mod:`.scaling` says (rounded up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from portfolio.evaluate import profile_of
from portfolio.problem import FORBIDDEN, Problem, fold_repeated_nodes

from .scaling import MAX_SCALE, ScalingError, choose_scale, scale_table


def _shift(values: np.ndarray) -> tuple[np.ndarray, float]:
    """(entries minus their least finite entry, inf where forbidden; the finite span)."""
    finite = np.isfinite(values)
    if not finite.any():
        return values, 0.0
    low = values[finite].min()
    rel = values - low
    return rel, float(rel[finite].max())


@dataclass
class Tables:
    """The weight-independent part of the network (built once per problem)."""

    counts: np.ndarray          # strategies per node
    node: np.ndarray            # per strategy: node cost (+ folded one-node edges), inf = forbidden
    excess: np.ndarray          # per strategy: summed usage above each interval's least usage
    breakable: np.ndarray       # per node: some plan can overload a point inside its intervals
    scopes: list                # per posted edge function: tuple of distinct nodes
    edge_rel: list              # per posted edge function: shifted float table (inf = forbidden)
    edge_span: float            # sum of the edge functions' finite spans

    @property
    def num_nodes(self) -> int:
        return len(self.counts)


def _as_float(costs: np.ndarray) -> np.ndarray:
    out = costs.astype(np.float64)
    out[costs >= FORBIDDEN] = np.inf
    return out


def build_tables(problem: Problem) -> Tables:
    """The network's fixed part: node rows, excess usage per strategy, edge functions."""
    soff = problem.strategy_offsets
    counts = np.asarray(problem.strategy_counts, dtype=np.int64)
    n = problem.num_nodes
    node = _as_float(problem.node_costs)
    # --- usage above each interval's least usage, summed per strategy, over intervals that matter
    lo, hi = problem.interval_point_range
    cap = problem.point_capacity
    limited = np.concatenate([[0], np.cumsum(cap < np.iinfo(np.int64).max)])
    matters = (limited[hi] - limited[lo]) > 0
    icounts = np.diff(problem.interval_usage_offsets)
    excess = np.zeros(len(node), dtype=np.float64)
    breakable = np.zeros(n, dtype=bool)
    if problem.num_intervals and len(problem.interval_usages):
        usages = problem.interval_usages.astype(np.float64)
        starts = problem.interval_usage_offsets[:-1]
        mins = np.minimum.reduceat(usages, starts) if len(usages) else usages
        maxs = np.maximum.reduceat(usages, starts) if len(usages) else usages
        rows = np.repeat(np.arange(problem.num_intervals), icounts)
        within = np.arange(len(usages)) - starts[rows]
        target = soff[problem.interval_node[rows]] + within
        np.add.at(excess, target, np.where(matters[rows], usages - mins[rows], 0.0))
        # breakable: the all-max-usage load exceeds capacity at a point inside the interval
        top = profile_of(problem, maxs.astype(np.int64))
        over = np.concatenate([[0], np.cumsum(np.asarray(top > cap, dtype=np.int64))])
        hit = (over[hi] - over[lo]) > 0
        breakable[np.unique(problem.interval_node[hit])] = True
    # --- edges: plain pairs directly, the rest folded; one distinct node goes to its unary
    scopes, rels, span = [], [], 0.0
    for e in range(problem.num_edges):
        scope, table = fold_repeated_nodes(problem.nodes_of_edge(e), problem.edge_table(e),
                                           problem.strategy_counts)
        values = _as_float(table.reshape(-1))
        if not np.isfinite(values).any():
            continue   # forbidden whatever the plan: a constant
        if len(scope) == 0:
            continue   # no node: a constant
        if len(scope) == 1:
            v = scope[0]
            node[soff[v]:soff[v + 1]] += values
            continue
        rel, s = _shift(values)
        if s == 0.0 and np.isfinite(rel).all():
            continue   # a constant table
        scopes.append(scope)
        rels.append(rel)
        span += s
    return Tables(counts, node, excess, breakable, scopes, rels, span)


@dataclass
class Network:
    """One penalised network, scaled: what the child posts to toulbar2."""

    counts: np.ndarray
    unary: list                 # per node: scaled float row (inf = forbidden), or None when all 0
    scopes: list
    tables: list                # per edge function: scaled float table
    scale: int

    def cost_of(self, plan: np.ndarray) -> Optional[int]:
        """The plan's scaled penalised cost as toulbar2 counts it (None if it has a hard entry)."""
        total = 0.0
        for i, row in enumerate(self.unary):
            if row is not None:
                total += row[int(plan[i])]
        for scope, table in zip(self.scopes, self.tables):
            index = 0
            for v in scope:
                index = index * int(self.counts[v]) + int(plan[v])
            total += table[index]
        return int(total) if math.isfinite(total) else None


def build_network(tables: Tables, weights: np.ndarray, max_scale: int = MAX_SCALE) -> Network:
    """The network at ``weights`` (one per node), scaled as :mod:`.scaling` says (or
    :class:`ScalingError`)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (tables.num_nodes,) or not np.all(np.isfinite(weights)) or (weights < 0).any():
        raise ScalingError("weights must be finite, non-negative, one per node")
    per_strategy = np.repeat(weights, tables.counts)
    with np.errstate(invalid="ignore"):
        values = tables.node + per_strategy * tables.excess
    starts = np.concatenate([[0], np.cumsum(tables.counts)])[:-1]
    finite = np.isfinite(values)
    low = np.minimum.reduceat(np.where(finite, values, np.inf), starts)
    high = np.maximum.reduceat(np.where(finite, values, -np.inf), starts)
    has_finite = np.isfinite(low)
    all_finite = np.logical_and.reduceat(finite, starts)
    posted = has_finite & ~((high == low) & all_finite)
    spans = np.where(posted, high - low, 0.0)
    span = tables.edge_span + float(spans.sum())
    rel = values - np.repeat(np.where(has_finite, low, 0.0), tables.counts)
    scale = choose_scale(span, max_scale=max_scale)
    flat = scale_table(rel, scale)
    ends = starts + tables.counts
    unary = [flat[a:b] if keep else None
             for a, b, keep in zip(starts.tolist(), ends.tolist(), posted.tolist())]
    edge = [scale_table(r, scale) for r in tables.edge_rel]
    return Network(tables.counts, unary, tables.scopes, edge, scale)
