"""The first stage of the certified least peak, kept light (numpy only, no compiled kernels) and
low in the floors so that ``portfolio info``, the instance features (:mod:`portfolio.features`) and
the memory bound (:mod:`portfolio.memory.bound`) share it: at each time point, every live interval
at its least usage among the strategies whose node cost is not forbidden; the maximum over time
points.

This is the one definition of the least peak's floor: ``info``'s figure, the bound's ``trivial``
stage and the explanation's ``stages.trivial`` are this function. The runner's memory check is a
different figure, named apart in docs/budgets.md: it counts every strategy, forbidden ones
included, so it may lie below this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .evaluate import range_sum
from .problem import FORBIDDEN, INT64_MAX, Problem


@dataclass(frozen=True)
class Domains:
    """``alive[s]`` per strategy (``Problem.node_costs`` layout); ``why`` says why no plan without
    forbidden choices exists (then ``alive`` is what was left when a domain emptied)."""

    alive: np.ndarray
    why: Optional[str]
    removed: int

    @property
    def empty(self) -> bool:
        return self.why is not None


def plain_domains(problem: Problem) -> Domains:
    """The strategies whose node cost is not 10**18 (no arc consistency: that is
    :func:`portfolio.memory.domains.allowed_strategies`), or why some node has none."""
    alive = np.asarray(problem.node_costs != FORBIDDEN).copy()
    removed = int(np.count_nonzero(~alive))
    counts = problem.strategy_counts.astype(np.int64)
    so = problem.strategy_offsets.astype(np.int64)
    empty = np.flatnonzero(np.add.reduceat(alive.astype(np.int64), so[:-1]) == 0) \
        if problem.num_nodes and len(alive) else np.zeros(0, dtype=np.int64)
    empty = empty[counts[empty] > 0] if len(empty) else empty
    if problem.num_nodes and (len(empty) or bool((counts == 0).any())):
        node = int(empty[0]) if len(empty) else int(np.flatnonzero(counts == 0)[0])
        return Domains(alive, f"node {node}: every strategy has node cost 10**18", removed)
    return Domains(alive, None, removed)


@dataclass(frozen=True)
class Floor:
    """``value``: no plan without forbidden choices peaks below it, reached at
    ``problem.time_points[index]`` (None when there is no time point); ``value`` is None when some
    node has only forbidden strategies (``why``, in the problem's numbering)."""

    value: Optional[int]
    index: Optional[int]
    time: Optional[int]
    why: Optional[str] = None


def interval_minima(problem: Problem, alive: np.ndarray) -> np.ndarray:
    """Per interval, its least usage over its node's strategies in ``alive`` (0 for an interval
    whose node has none: only reached when the domains are empty, which the caller reports)."""
    iuo = problem.interval_usage_offsets
    counts = np.diff(iuo)
    rows = np.repeat(np.arange(problem.num_intervals), counts)
    within = np.arange(len(problem.interval_usages)) - iuo[:-1][rows]
    ok = alive[problem.strategy_offsets[problem.interval_node[rows]] + within]
    masked = np.where(ok, problem.interval_usages, INT64_MAX)
    mins = np.zeros(problem.num_intervals, dtype=np.int64)
    nonempty = counts > 0
    if nonempty.any():
        mins[nonempty] = np.minimum.reduceat(masked, iuo[:-1][nonempty])
    return np.where(mins == INT64_MAX, 0, mins)


def least_usage_profile(problem: Problem, alive: np.ndarray) -> np.ndarray:
    """Per time point, the summed least usage of the live intervals over the strategies in
    ``alive`` (exact: int64, or Python ints where int64 could overflow)."""
    lo, hi = problem.interval_point_range
    return range_sum(lo, hi, interval_minima(problem, alive), len(problem.time_points))


def least_usage_floor(problem: Problem) -> Floor:
    """The trivial stage of the certified least peak (see the module)."""
    plain = plain_domains(problem)
    if plain.empty:
        return Floor(None, None, None, plain.why)
    if len(problem.time_points) == 0:
        return Floor(0, None, None)
    profile = least_usage_profile(problem, plain.alive)
    k = int(np.argmax(profile))
    return Floor(int(profile[k]), k, int(problem.time_points[k]))
