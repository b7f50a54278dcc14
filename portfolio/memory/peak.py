"""The peak report of one plan: how much memory it needs at its worst time, and who makes it.

A user who is told "over the limit" wants the time point and the tensors behind it; this is that
answer, computed with the evaluator's exact profile (int64 when no sum can wrap, Python ints
otherwise), so a report never wraps around. Nodes are named in the input file's own numbering
(:class:`~portfolio.adapters.naming.NodeNaming`): a request's follower with its own usage, never
summed into its leader's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..adapters.naming import NodeNaming, ranked, usage_text
from ..evaluate import as_solution, chosen_interval_usages, usage_profile
from ..problem import Problem

TOP = 5
"""Contributors named in a report (the largest first)."""


@dataclass(frozen=True)
class PeakReport:
    """The peak usage of a plan and, at one time point, who makes the memory: ``time`` is where the
    plan peaks (the first such time, or the preferred one when the plan peaks there too), or the
    point the caller asked about (then ``usage``, the plan's memory there, may be below ``peak``,
    whose own time is ``peak_time``). ``contributors``: ``(file node, strategy, usage)`` of the
    nodes live at ``time``, largest first."""

    peak: int
    time: Optional[int]
    time_index: Optional[int]
    contributors: list[tuple[int, int, int]] = field(default_factory=list)
    live_nodes: int = 0
    usage: Optional[int] = None
    peak_time: Optional[int] = None
    naming: Optional[NodeNaming] = field(default=None, compare=False, repr=False)

    @property
    def at_peak(self) -> bool:
        """The report's time point is a peak of the plan."""
        return self.usage is None or self.usage == self.peak

    def _naming(self) -> NodeNaming:
        if self.naming is not None:
            return self.naming
        n = 1 + max((v for v, _, _ in self.contributors), default=-1)
        return NodeNaming.identity(n)

    def to_dict(self) -> dict:
        naming = self._naming()
        return {"peak": self.peak, "peak_time": self.peak_time, "time": self.time,
                "usage": self.peak if self.usage is None else self.usage,
                "live_nodes": self.live_nodes,
                "top_nodes": [{**naming.node(v), "strategy": s, "usage": u}
                              for v, s, u in self.contributors]}

    def nodes_text(self) -> str:
        """``nodes 4: 8,000, 9 (big): 3,000, ...``."""
        return usage_text(self._naming(), [(v, u) for v, _, u in self.contributors])

    def text(self) -> str:
        """``12,345 at t=17 (nodes 4: 8,000, 9: 3,000, ...)``."""
        if self.time is None:
            return f"{self.peak:,} (nothing is live)"
        return f"{self.peak:,} at t={self.time} ({self.nodes_text()})"


def peak_report(problem: Problem, plan: object, top: int = TOP,
                naming: Optional[NodeNaming] = None, prefer: Optional[int] = None,
                at: Optional[int] = None) -> PeakReport:
    """The peak of ``plan`` on ``problem`` with the ``top`` largest live nodes at one time point
    (indices into ``problem.time_points``): ``at`` when given; else the plan's peak, at ``prefer``
    when the plan peaks there too (so that a document about one time point keeps to it). Nodes in
    ``naming``'s file numbering (the problem's own when None)."""
    sol = as_solution(problem, plan)
    profile = usage_profile(problem, sol)
    if len(profile) == 0:
        return PeakReport(0, None, None)
    k_peak = int(np.argmax(profile))
    peak = int(profile[k_peak])
    if prefer is not None and 0 <= prefer < len(profile) and int(profile[prefer]) == peak:
        k_peak = prefer
    k = k_peak if at is None else at
    naming = naming if naming is not None else NodeNaming.identity(problem.num_nodes)
    usage = chosen_interval_usages(problem, sol)
    by_node = naming.usage_by_node(problem, usage, k)
    owners = {f: int(sol[naming.node_of[f]]) for f, _ in ranked(by_node, top)}
    return PeakReport(peak, int(problem.time_points[k]), k,
                      [(f, owners[f], u) for f, u in ranked(by_node, top)], len(by_node),
                      int(profile[k]), int(problem.time_points[k_peak]), naming)


def point_index(problem: Problem, time: Optional[int]) -> Optional[int]:
    """The index in ``problem.time_points`` of time ``time`` (None when it is not one)."""
    if time is None:
        return None
    points = problem.time_points
    k = int(np.searchsorted(points, time))
    return k if k < len(points) and int(points[k]) == time else None
