"""The penalty search's weights: which nodes a plan broke, and the brackets that move each node's
weight (techniques.md 1.3(b), per-node bracketing).

Node ``i`` is *broken* by a plan when the load at some time point inside one of its intervals
exceeds the capacity. Over a round of ``K`` weight vectors, the least weight at which the node was
not broken lowers its upper bound ``ub_i``, the largest weight below it at which it was broken
raises its lower bound ``lb_i``; the next ``K`` weights are spread evenly on ``(lb_i, ub_i]``. A
node never unbroken looks ``EXPAND`` times higher; a node broken every time in a round has its upper
bound grown by ``GROW``, one never broken in a round has its lower bound shrunk by ``SHRINK`` (the
other nodes' weights moved, so old brackets age). Nodes that no plan can break (the all-max-usage
load stays within capacity over their intervals) get weight 0.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from portfolio.evaluate import usage_profile
from portfolio.problem import Problem

from .network import Tables

GROW, SHRINK, EXPAND = 1.35, 1.5, 10.0
"""Bracket adaptation: the upper bound of a node broken at every weight of a round grows by GROW;
the lower bound of a node never broken in a round shrinks by SHRINK; a node never seen unbroken
searches up to EXPAND times its lower bound."""

JITTER = 0.125
"""Relative random jitter of each weight (techniques.md: +-12.5 %), so K vectors differ everywhere."""


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


def first_weights(scale: float, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` vectors around ``scale``, a factor 100 apart (``scale * 10**(2j - (k-1))``), jittered
    (:class:`Bracketing` zeroes the nodes no plan can break)."""
    powers = 2.0 * np.arange(k) - (k - 1)
    return scale * (10.0 ** powers)[:, None] * (1 + JITTER * rng.uniform(-1, 1, (k, n)))


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
    """The weight rule's state: a bracket ``(lb, ub]`` per node. ``vectors()`` gives the next
    ``k`` weight vectors, ``update`` reads a round. (One bracket for all nodes, the original's
    global rule, measured worse than the priced rule on N and S and was removed in issue 41.)"""

    def __init__(self, first: np.ndarray, rng: np.random.Generator,
                 breakable: np.ndarray) -> None:
        self.k, self.n = first.shape
        self.rng, self.breakable = rng, np.asarray(breakable, dtype=bool)
        self.lb, self.ub = np.zeros(self.n), np.full(self.n, np.inf)
        self._next = np.where(self.breakable[None, :], first, 0.0)

    def vectors(self) -> np.ndarray:
        return self._next

    def update(self, weights: np.ndarray, broken: np.ndarray) -> None:
        """One round's solved vectors (rows) and, per row, which nodes the plan broke."""
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        broken = np.atleast_2d(np.asarray(broken, dtype=bool))
        if weights.shape[0]:
            self.lb, self.ub = update_bracket(self.lb, self.ub, weights, broken)
        w = next_weights(self.lb, self.ub, self.k, self.rng)
        self._next = np.where(self.breakable[None, :], w, 0.0)


def spread(center: float, n: int, k: int, rng: np.random.Generator, factor: float) -> np.ndarray:
    """``k`` jittered vectors around ``center``, ``factor`` apart (``center * factor**(j - (k-1)/2)``)."""
    powers = np.arange(k) - (k - 1) / 2.0
    return center * (factor ** powers)[:, None] * (1 + JITTER * rng.uniform(-1, 1, (k, n)))
