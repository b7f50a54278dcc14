"""The peak report of one plan: how much memory it needs at its worst time, and who makes it.

A user who is told "over the limit" wants the time point and the tensors behind it; this is that
answer, computed with the evaluator's exact profile (int64 when no sum can wrap, Python ints
otherwise), so a report never wraps around.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..evaluate import as_solution, chosen_interval_usages, usage_profile
from ..problem import Problem

TOP = 5
"""Contributors named in a report (the largest first)."""


@dataclass(frozen=True)
class PeakReport:
    """The peak usage of a plan, the time where it occurs (the first such time) and the nodes live
    there that make it, largest first: ``contributors`` is a list of ``(node, strategy, usage)``."""

    peak: int
    time: Optional[int]
    time_index: Optional[int]
    contributors: list[tuple[int, int, int]] = field(default_factory=list)
    live_nodes: int = 0

    def to_dict(self) -> dict:
        return {"peak": self.peak, "time": self.time, "live_nodes": self.live_nodes,
                "top_nodes": [{"node": v, "strategy": s, "usage": u}
                              for v, s, u in self.contributors]}

    def text(self) -> str:
        """``12,345 at t=17 (nodes 4: 8,000, 9: 3,000, ...)``."""
        if self.time is None:
            return f"{self.peak:,} (nothing is live)"
        names = ", ".join(f"{v}: {u:,}" for v, _, u in self.contributors)
        return f"{self.peak:,} at t={self.time} (nodes {names})"


def live_usage_by_node(problem: Problem, usage: np.ndarray, k: int) -> dict[int, int]:
    """Per node live at ``time_points[k]``, the exact sum of ``usage[j]`` over its live intervals."""
    by_node: dict[int, int] = {}
    for j in problem.live_intervals_at(k).tolist():
        v = int(problem.interval_node[j])
        by_node[v] = by_node.get(v, 0) + int(usage[j])
    return by_node


def peak_report(problem: Problem, plan: object, top: int = TOP) -> PeakReport:
    """The peak of ``plan`` on ``problem`` with its time point and its ``top`` largest live nodes."""
    sol = as_solution(problem, plan)
    profile = usage_profile(problem, sol)
    if len(profile) == 0:
        return PeakReport(0, None, None)
    k = int(np.argmax(profile))
    by_node = live_usage_by_node(problem, chosen_interval_usages(problem, sol), k)
    ranked = sorted(by_node.items(), key=lambda item: (-item[1], item[0]))
    return PeakReport(int(profile[k]), int(problem.time_points[k]), k,
                      [(v, int(sol[v]), u) for v, u in ranked[:top]], len(by_node))
