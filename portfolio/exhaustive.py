"""The exact optimum of a tiny instance by scoring every plan at once (plain numpy, no JIT).

Why: on an instance of a few thousand plans, enumerating them all is a complete proof that costs
milliseconds, while any solver costs a process, an import and a model (the bundled 8-node example:
2,187 plans, about 5 ms here against about 0.7 s for the fastest exact backend). The runner uses it
as one of its own proofs (:mod:`portfolio.runner.answers`), before any backend starts.

It follows the evaluator's semantics (:mod:`portfolio.evaluate`) and refuses, returning None,
whatever it cannot decide exactly in int64: too many plans, or magnitudes whose sums could wrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .evaluate import exact_sum
from .problem import FORBIDDEN, Problem

MAX_PLANS = 1 << 15
"""Largest plan space enumerated: about 20 ms on the example's shape; beyond, backends are cheaper."""

MAX_CELLS = 1 << 23
"""Largest plans x (nodes + edges + intervals + time points) array built (64 MiB of int64)."""

MAX_PRODUCTS = 1 << 27
"""Largest plans x intervals x time points product in the memory check (about 0.1 s here)."""

_SAFE = 10**18
"""Totals stay below FORBIDDEN: a forbidden-free plan then always costs less than any other."""


@dataclass(frozen=True)
class Enumeration:
    """What scoring every plan proved: the cheapest feasible forbidden-free plan, or that none exists."""

    plans: int                    # how many plans were scored
    plan: Optional[np.ndarray]    # the optimum; None: no feasible plan avoids every forbidden choice
    feasible_plans: int           # feasible plans (forbidden choices allowed)


def plan_count(problem: Problem) -> int:
    """The number of plans (product of the strategy counts), as an exact Python int."""
    total = 1
    for k in problem.strategy_counts.tolist():
        total *= int(k)
    return total


def _largest(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per group of ``values`` delimited by ``offsets``, the largest entry (0 for an empty group)."""
    out = np.zeros(len(offsets) - 1, dtype=np.int64)
    nonempty = np.diff(offsets) > 0
    if nonempty.any():
        out[nonempty] = np.maximum.reduceat(values, offsets[:-1][nonempty])
    return out


def _fits_int64(problem: Problem) -> bool:
    """Whether every plan's finite cost and every time point's usage sum stay below 10**18."""
    finite_nodes = np.where(problem.node_costs == FORBIDDEN, 0, np.abs(problem.node_costs))
    finite_edges = np.where(problem.edge_costs == FORBIDDEN, 0, np.abs(problem.edge_costs))
    cost = (abs(int(problem.cost_offset))
            + exact_sum(_largest(finite_nodes, problem.strategy_offsets))
            + exact_sum(_largest(finite_edges, problem.edge_cost_offsets)))
    usage = exact_sum(_largest(np.abs(problem.interval_usages), problem.interval_usage_offsets))
    return cost < _SAFE and usage < _SAFE


def enumerate_optimum(problem: Problem, max_plans: int = MAX_PLANS) -> Optional[Enumeration]:
    """Score every plan of ``problem``; None when the instance is too large or its sums could wrap.

    The optimum is the cheapest feasible plan without a forbidden choice (each such plan costs less
    than 10**18, any other at least that). ``plan is None`` with ``feasible_plans == 0`` proves the
    instance infeasible; with feasible plans left, only plans with forbidden choices fit.
    """
    plans = plan_count(problem)
    n, e = problem.num_nodes, problem.num_edges
    points = len(problem.time_points)
    if (plans > max_plans or plans * (n + e + problem.num_intervals + points + 1) > MAX_CELLS
            or plans * problem.num_intervals * points > MAX_PRODUCTS):
        return None
    if not _fits_int64(problem):
        return None
    counts = problem.strategy_counts.astype(np.int64)
    index = np.arange(plans, dtype=np.int64)
    strides = np.ones(n, dtype=np.int64)
    if n:
        strides[:-1] = np.cumprod(counts[::-1])[::-1][1:]
    sol = (index[:, None] // strides[None, :]) % counts[None, :]          # (plans, nodes)

    chosen = problem.node_costs[problem.strategy_offsets[:-1][None, :] + sol]
    forbidden = (chosen == FORBIDDEN).any(axis=1)
    cost = np.where(chosen == FORBIDDEN, 0, chosen).sum(axis=1) + int(problem.cost_offset)
    starts, arity = problem.edge_node_offsets[:-1], problem.edge_arity
    position = np.zeros((plans, e), dtype=np.int64)
    for p in range(int(arity.max(initial=0))):
        has = arity > p
        nodes = problem.edge_nodes[starts[has] + p]
        position[:, has] = position[:, has] * counts[nodes][None, :] + sol[:, nodes]
    entry = problem.edge_costs[problem.edge_cost_offsets[:-1][None, :] + position]
    forbidden |= (entry == FORBIDDEN).any(axis=1)
    cost += np.where(entry == FORBIDDEN, 0, entry).sum(axis=1)

    usage = problem.interval_usages[problem.interval_usage_offsets[:-1][None, :]
                                    + sol[:, problem.interval_node]]      # (plans, intervals)
    lo, hi = problem.interval_point_range
    live = np.zeros((problem.num_intervals, points), dtype=np.int64)       # interval j live at point k
    for j in np.flatnonzero(hi > lo).tolist():
        live[j, lo[j]:hi[j]] = 1
    profile = usage @ live if points else np.zeros((plans, 0), dtype=np.int64)
    feasible = (profile <= problem.point_capacity[None, :]).all(axis=1)

    good = np.flatnonzero(feasible & ~forbidden)
    best = None if len(good) == 0 else sol[good[np.argmin(cost[good])]].copy()
    return Enumeration(plans=plans, plan=best, feasible_plans=int(np.count_nonzero(feasible)))
