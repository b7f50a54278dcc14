"""The first stage of the certified least peak, kept light (numpy only) so that ``portfolio info``
can show it without the bound's compiled kernels: at each time point, every live interval at its
least usage among the strategies whose node cost is not forbidden; the maximum over time points.

This is the one definition of the least peak's floor: ``info``'s figure, the bound's ``trivial``
stage (:mod:`.bound`) and the explanation's ``stages.trivial`` are this function. The runner's
memory check is a different figure, named apart in docs/budgets.md: it counts every strategy,
forbidden ones included, so it may lie below this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..evaluate import range_sum
from ..problem import INT64_MAX, Problem
from .domains import allowed_strategies


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


def least_usage_floor(problem: Problem) -> Floor:
    """The trivial stage of the certified least peak (see the module)."""
    plain = allowed_strategies(problem, consistency=False)
    if plain.empty:
        return Floor(None, None, None, plain.why)
    points = len(problem.time_points)
    if points == 0:
        return Floor(0, None, None)
    lo, hi = problem.interval_point_range
    profile = range_sum(lo, hi, interval_minima(problem, plain.alive), points)
    k = int(np.argmax(profile))
    return Floor(int(profile[k]), k, int(problem.time_points[k]))
