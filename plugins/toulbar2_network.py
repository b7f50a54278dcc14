"""The penalised cost-function network of the ``toulbar2`` backend, its integer scaling, and the
per-node weight rule: plain numpy, no toulbar2 (so every piece is testable without the solver).

**Network.** One variable per node (its strategies), one unary function per node, one function per
edge. Node ``i`` with weight ``w_i`` gets the unary ``cost_i(s) + w_i * excess_i(s)`` where
``excess_i(s)`` is the sum, over the node's intervals that cover at least one time point of limited
capacity, of ``usage_j(s) - min_s usage_j(s)``. A merged node (presolve) may own several intervals:
the *sum* is used, not the max, because each interval loads memory at its own time points, so a
strategy heavy on two intervals is charged twice (what per-time-point prices would charge, with one
shared price for the node's span); the max would let such a strategy through at the price of one.
Edge tables are posted as they are; an edge that names a node twice is folded to its diagonal, one
that names a single node distinct goes into that node's unary. Entries ``>= FORBIDDEN`` (10**18)
become toulbar2's hard cost (``inf`` in pytoulbar2, its top). A function whose every entry is
forbidden is left out: every plan pays it, so it changes no choice.

**Scaling.** toulbar2's costs are integers below ``MAX_COST`` (about 5.1e17) and pytoulbar2 hands
them over as C doubles (exact below 2**53). Every function is shifted so that its least finite
entry is 0 (the shifts are constants), then divided by one ``scale`` (a power of 10, the smallest
with the sum of all functions' finite spans ``<= TOTAL_LIMIT = 2**50``) and rounded up. Any complete
assignment's finite penalised cost is then at most 2**50 + (number of functions), far below
toulbar2's top and exactly representable, so nothing can wrap. When the needed scale exceeds
``MAX_SCALE`` (costs around 1e27: no resolution left), or a span is not finite (an infinite
weight), :class:`ScalingError` is raised instead: the network is refused, never wrapped. At the
contest's magnitudes (costs of 1e13 and more, 1e5 edges) the scale is 10**3-10**6, so plans that
differ by one part in 10**9 of the total still differ in toulbar2's eyes. Plans are always
re-evaluated exactly (``portfolio.evaluate``): the scaling changes what toulbar2 prefers, never a
reported cost.

**Weights** (techniques.md 1.3(b), per-node bracketing): node ``i`` is *broken* by a plan when the
load at some time point inside one of its intervals exceeds the capacity. Over a round of ``K``
weight vectors, the least weight at which the node was not broken lowers its upper bound ``ub_i``,
the largest weight below it at which it was broken raises its lower bound ``lb_i``; the next ``K``
weights are spread evenly on ``(lb_i, ub_i]``. A node never unbroken looks ``EXPAND`` times higher; a
node broken every time in a round has its upper bound grown by ``GROW``, one never broken in a round
has its lower bound shrunk by ``SHRINK`` (the other nodes' weights moved, so old brackets age).
Nodes that no plan can break (the all-max-usage load stays within capacity over their intervals)
get weight 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from portfolio.evaluate import profile_of, usage_profile
from portfolio.problem import FORBIDDEN, Problem

TOTAL_LIMIT = 2**50
"""The largest sum of scaled finite spans: a complete assignment's penalised cost stays below it
(plus one per function for the rounding up), far below toulbar2's top (~5.1e17) and 2**53."""

MAX_SCALE = 10**15
"""Refuse a network that needs a larger divisor (finite costs around 1e30: nothing left to compare)."""

GROW, SHRINK, EXPAND = 1.35, 1.5, 10.0
"""Bracket adaptation: the upper bound of a node broken at every weight of a round grows by GROW;
the lower bound of a node never broken in a round shrinks by SHRINK; a node never seen unbroken
searches up to EXPAND times its lower bound."""

JITTER = 0.125
"""Relative random jitter of each weight (techniques.md: +-12.5 %), so K vectors differ everywhere."""


class ScalingError(ValueError):
    """The penalised network cannot be represented in toulbar2's integer costs."""


# ------------------------------------------------------------------------------------------ scaling
def choose_scale(total_span: float, limit: int = TOTAL_LIMIT, max_scale: int = MAX_SCALE) -> int:
    """The smallest power of 10 that brings ``total_span`` to at most ``limit``; raises
    :class:`ScalingError` when that power exceeds ``max_scale`` or the span is not finite."""
    if not math.isfinite(total_span) or total_span < 0:
        raise ScalingError(f"penalised network has a non-finite cost span ({total_span})")
    scale = 1
    while total_span / scale > limit:
        scale *= 10
        if scale > max_scale:
            raise ScalingError(f"penalised network's costs span {total_span:.3g}: dividing by "
                               f"{max_scale:.0e} still leaves more than {limit:.3g}; refused")
    return scale


def scale_table(rel: np.ndarray, scale: int) -> np.ndarray:
    """Shifted entries (least finite entry 0, ``inf`` for forbidden) divided by ``scale``, rounded
    up; ``inf`` stays ``inf``. Raises :class:`ScalingError` if a finite entry would leave 2**53."""
    out = np.ceil(rel / scale)
    finite = np.isfinite(out)
    if finite.any() and out[finite].max() > 2.0**53:
        raise ScalingError(f"a scaled cost {out[finite].max():.3g} is not exact in a double")
    return out


def _shift(values: np.ndarray) -> tuple[np.ndarray, float]:
    """(entries minus their least finite entry, inf where forbidden; the finite span)."""
    finite = np.isfinite(values)
    if not finite.any():
        return values, 0.0
    low = values[finite].min()
    rel = values - low
    return rel, float(rel[finite].max())


# ------------------------------------------------------------------------------------------ network
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


def fold_edge(problem: Problem, e: int) -> tuple[tuple[int, ...], np.ndarray]:
    """Edge ``e`` on its distinct nodes (a node named twice takes one value in both places)."""
    nodes = [int(v) for v in problem.nodes_of_edge(e)]
    table = np.asarray(problem.edge_table(e))
    scope = tuple(dict.fromkeys(nodes))
    if len(scope) == len(nodes):
        return scope, table.reshape(-1)
    counts = [int(problem.strategy_counts[v]) for v in scope]
    grids = np.indices(counts).reshape(len(scope), -1)
    index = tuple(grids[scope.index(v)] for v in nodes)
    return scope, table[index]


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
        scope, table = fold_edge(problem, e)
        values = _as_float(np.asarray(table))
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
    """The network at ``weights`` (one per node), scaled as the module says (or ScalingError)."""
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


# ------------------------------------------------------------------------------------------ weights
def broken_nodes(problem: Problem, plan: np.ndarray) -> np.ndarray:
    """Per node: the load at some time point inside one of its intervals exceeds the capacity."""
    load = usage_profile(problem, np.asarray(plan, dtype=np.int64))
    over = np.asarray(load > problem.point_capacity, dtype=np.int64)
    prefix = np.concatenate([[0], np.cumsum(over)])
    lo, hi = problem.interval_point_range
    hit = (prefix[hi] - prefix[lo]) > 0
    out = np.zeros(problem.num_nodes, dtype=bool)
    out[problem.interval_node[hit]] = True
    return out


def global_scale(tables: Tables) -> float:
    """A first weight for every node: the mean finite cost span per node over the mean excess
    span per breakable node (cost units per unit of memory)."""
    starts = np.concatenate([[0], np.cumsum(tables.counts)])[:-1]
    finite = np.isfinite(tables.node)
    low = np.minimum.reduceat(np.where(finite, tables.node, np.inf), starts)
    high = np.maximum.reduceat(np.where(finite, tables.node, -np.inf), starts)
    cost_span = tables.edge_span + float(np.where(np.isfinite(low), high - low, 0.0).sum())
    top = np.maximum.reduceat(tables.excess, starts)
    excess_span = float(top[tables.breakable].sum())
    n, b = max(tables.num_nodes, 1), int(tables.breakable.sum())
    if b == 0 or excess_span == 0.0:
        return 0.0
    return max(cost_span / n, 1.0) / (excess_span / b)


def first_weights(scale: float, n: int, k: int, rng: np.random.Generator,
                  breakable: Optional[np.ndarray] = None) -> np.ndarray:
    """``k`` vectors around ``scale``, a factor 100 apart (``scale * 10**(2j - (k-1))``), jittered."""
    powers = 2.0 * np.arange(k) - (k - 1)
    w = scale * (10.0 ** powers)[:, None] * (1 + JITTER * rng.uniform(-1, 1, (k, n)))
    if breakable is not None:
        w[:, ~breakable] = 0.0
    return w


def update_bracket(lb: np.ndarray, ub: np.ndarray, weights: np.ndarray,
                   broken: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New per-node brackets ``(lb, ub)`` after a round: ``weights`` and ``broken`` are (K, n), one
    row per solved vector (rows without a plan left out by the caller)."""
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    broken = np.atleast_2d(np.asarray(broken, dtype=bool))
    if weights.shape[0] == 0:
        return lb.copy(), ub.copy()
    new_ub = np.minimum(ub, np.where(broken, np.inf, weights).min(axis=0))
    seen = np.where(broken & (weights < new_ub), weights, -np.inf).max(axis=0)
    new_lb = np.maximum(lb, seen)
    all_broken = broken.all(axis=0)
    none_broken = ~broken.any(axis=0)
    new_lb = np.where(none_broken, new_lb / SHRINK, new_lb)
    new_ub = np.where(all_broken & np.isfinite(new_ub), new_ub * GROW, new_ub)
    return new_lb, new_ub


def next_weights(lb: np.ndarray, ub: np.ndarray, k: int, rng: np.random.Generator,
                 breakable: Optional[np.ndarray] = None) -> np.ndarray:
    """``k`` vectors spread evenly on ``(lb, ub]`` per node (``(lb, EXPAND * lb]`` while no
    unbroken weight is known), jittered except the top row (the best known unbroken weight)."""
    top = np.where(np.isfinite(ub), ub, np.maximum(lb, 1e-12) * EXPAND)
    steps = np.repeat((np.arange(1, k + 1, dtype=np.float64) / k)[:, None], len(lb), axis=1)
    if k > 1:   # within +-JITTER of a step: every row stays inside (lb, top]
        steps[:-1] += JITTER * rng.uniform(-1, 1, (k - 1, len(lb))) / k
    w = np.maximum(lb + (top - lb) * steps, 0.0)
    if breakable is not None:
        w[:, ~breakable] = 0.0
    return w


class Bracketing:
    """The weight rule's state: a bracket ``(lb, ub]`` per node (``per_node``) or one for all
    nodes (the global rule: a node counts as broken when any node is, every node gets the same
    weight). ``vectors()`` gives the next ``k`` weight vectors, ``update`` reads a round."""

    def __init__(self, first: np.ndarray, rng: np.random.Generator,
                 breakable: np.ndarray, per_node: bool = True) -> None:
        self.k, self.n = first.shape
        self.rng, self.breakable, self.per_node = rng, np.asarray(breakable, dtype=bool), per_node
        size = self.n if per_node else 1
        self.lb, self.ub = np.zeros(size), np.full(size, np.inf)
        self._next = first if per_node else np.repeat(first[:, :1], self.n, axis=1)
        self._next = np.where(self.breakable[None, :], self._next, 0.0)

    def vectors(self) -> np.ndarray:
        return self._next

    def update(self, weights: np.ndarray, broken: np.ndarray) -> None:
        """One round's solved vectors (rows) and, per row, which nodes the plan broke."""
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        broken = np.atleast_2d(np.asarray(broken, dtype=bool))
        if weights.shape[0]:
            if not self.per_node:
                idx = int(np.argmax(self.breakable)) if self.breakable.any() else 0
                weights, broken = weights[:, idx:idx + 1], broken.any(axis=1, keepdims=True)
            self.lb, self.ub = update_bracket(self.lb, self.ub, weights, broken)
        w = next_weights(self.lb, self.ub, self.k, self.rng)
        if not self.per_node:
            w = np.repeat(w, self.n, axis=1)
        self._next = np.where(self.breakable[None, :], w, 0.0)


def spread(center: float, n: int, k: int, rng: np.random.Generator, factor: float) -> np.ndarray:
    """``k`` jittered vectors around ``center``, ``factor`` apart (``center * factor**(j - (k-1)/2)``)."""
    powers = np.arange(k) - (k - 1) / 2.0
    return center * (factor ** powers)[:, None] * (1 + JITTER * rng.uniform(-1, 1, (k, n)))
