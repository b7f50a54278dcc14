"""A certified lower bound on the least peak memory of any plan without forbidden choices.

Stages, each at least the one before (all are kept in ``PeakBound.stages``):

1. ``trivial``: per time point, the sum over live intervals of their least usage among the
   strategies whose node cost is not 10**18; the maximum over time points.
2. ``arc consistency``: the same over the strategies left by arc consistency on the forbidden
   entries (:mod:`.domains`): a strategy that can appear in no plan of finite cost is not counted.
3. ``edge pairs``: a matching of edges whose two nodes cannot take their least usages together
   adds each pair's gain where both are live (:mod:`.pairs`).
4. ``exact point``: at the highest points, a matching chosen for that point alone, and for a point
   with few live nodes the least usage solved by CP-SAT (:mod:`.pointexact`, its proven bound).

Every stage is a lower bound on ``max_t usage_t(plan)`` for every plan without forbidden choices,
so the maximum over time points is one too. No clock decides anything: CP-SAT runs on a
deterministic-time limit with one worker, so the bound is the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..adapters.naming import NodeNaming, ranked
from ..evaluate import range_sum
from ..problem import Problem
from ..leastpeak import interval_minima, least_usage_floor
from .domains import allowed_strategies, binary_edges
from .pairs import SAFE_USAGE, edge_gains, greedy_matching

REFINE_POINTS = 12
"""Time points (the highest after the pair stage) given a matching of their own and CP-SAT."""

EXACT_NODES = 80
"""A point with at most this many live nodes gets the CP-SAT stage."""

EXACT_SECONDS = 0.4
"""CP-SAT's deterministic-time limit per point (about seconds of one core)."""

TOP = 5
"""Live nodes named at the bound's time point (the largest least usages first)."""


@dataclass(frozen=True)
class PeakBound:
    """No plan without forbidden choices peaks below ``value``; ``time`` is a time point where the
    bound is reached (``contributors``: its live nodes, in the file's numbering, with their least
    usage, largest first); ``method`` names the stage that gave it. ``value`` is None when no plan
    without forbidden choices exists at all (``why``, in the file's terms)."""

    value: Optional[int]
    time: Optional[int]
    method: str
    stages: dict[str, int] = field(default_factory=dict)
    contributors: list[tuple[int, int]] = field(default_factory=list)
    why: Optional[str] = None
    naming: Optional[NodeNaming] = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        naming = self.naming or NodeNaming.identity(1 + max((v for v, _ in self.contributors),
                                                            default=-1))
        return {"value": self.value, "time": self.time, "method": self.method,
                "stages": dict(self.stages), "why": self.why,
                "top_nodes": [{**naming.node(v), "least_usage": u} for v, u in self.contributors]}


def _argmax(profile: np.ndarray) -> tuple[int, int]:
    k = int(np.argmax(profile))
    return int(profile[k]), k


def _contributors(problem: Problem, mins: np.ndarray, k: int, naming: NodeNaming,
                  top: int = TOP) -> list[tuple[int, int]]:
    """The ``top`` file nodes live at point ``k`` with the most least usage (each interval at its
    least usage: a follower's own, not its leader's)."""
    return ranked(naming.usage_by_node(problem, mins, k), top)


class _Pairs:
    """The pair stage's data: binary edges between nodes owning one interval each, their gains."""

    def __init__(self, problem: Problem, alive: np.ndarray, mins: np.ndarray) -> None:
        counts = np.diff(problem.node_interval_offsets)
        single = counts == 1
        interval_of = np.full(problem.num_nodes, -1, dtype=np.int64)
        interval_of[problem.interval_node[single[problem.interval_node]]] = \
            np.flatnonzero(single[problem.interval_node])
        binary = binary_edges(problem)
        starts = problem.edge_node_offsets[:-1]
        edges = np.flatnonzero(binary)
        eu, ev = problem.edge_nodes[starts[edges]], problem.edge_nodes[starts[edges] + 1]
        keep = single[eu] & single[ev]
        self.edges, self.eu, self.ev = edges[keep], eu[keep], ev[keep]
        self.iu, self.iv = interval_of[self.eu], interval_of[self.ev]
        # per strategy, the usage of its node's one interval (0 elsewhere: never read)
        w = np.zeros(len(problem.node_costs), dtype=np.int64)
        nodes = np.flatnonzero(single)
        for v, j in zip(nodes.tolist(), interval_of[nodes].tolist()):
            so = int(problem.strategy_offsets[v])
            w[so:so + int(problem.strategy_counts[v])] = problem.usages_of_interval(j)
        wmin = np.zeros(problem.num_nodes, dtype=np.int64)
        wmin[nodes] = mins[interval_of[nodes]]
        self.gain = edge_gains(problem.strategy_counts, problem.strategy_offsets, alive, self.eu,
                               self.ev, problem.edge_cost_offsets[:-1][self.edges],
                               problem.edge_costs, w, wmin)
        lo, hi = problem.interval_point_range
        self.lo = np.maximum(lo[self.iu], lo[self.iv])
        self.hi = np.minimum(hi[self.iu], hi[self.iv])
        self.positive = np.flatnonzero((self.gain > 0) & (self.hi > self.lo))

    def static_profile(self, points: int) -> np.ndarray:
        """The gains of one matching for all points, summed where both ends are live."""
        chosen = greedy_matching(self.eu, self.ev, self.gain, self.positive)
        if len(chosen) == 0:
            return np.zeros(points, dtype=np.int64)
        return range_sum(self.lo[chosen], self.hi[chosen], self.gain[chosen], points)

    def at_point(self, k: int) -> int:
        """The gains of a matching chosen for point ``k`` alone."""
        here = self.positive[(self.lo[self.positive] <= k) & (k < self.hi[self.positive])]
        chosen = greedy_matching(self.eu, self.ev, self.gain, here)
        return int(self.gain[chosen].sum()) if len(chosen) else 0


def least_peak_bound(problem: Problem, refine_points: int = REFINE_POINTS,
                     exact_nodes: int = EXACT_NODES, exact_seconds: float = EXACT_SECONDS,
                     naming: Optional[NodeNaming] = None) -> PeakBound:
    """The certified lower bound on the least peak of any plan without forbidden choices (see the
    module); ``refine_points=0`` stops after the pair stage, ``exact_nodes=0`` skips CP-SAT.
    ``naming``: the file the problem was read from, whose numbering the bound's nodes and reason
    use (the problem's own when None)."""
    naming = naming if naming is not None else NodeNaming.identity(problem.num_nodes)
    points = len(problem.time_points)
    floor = least_usage_floor(problem)
    if floor.value is None:
        return PeakBound(None, None, "trivial", why=naming.rewrite(floor.why), naming=naming)
    if floor.index is None:   # nothing ever live: 0, once arc consistency finds a plan to take it
        dom = allowed_strategies(problem)
        if dom.empty:
            return PeakBound(None, None, "arc consistency", {"trivial": 0},
                             why=naming.rewrite(dom.why), naming=naming)
        return PeakBound(0, None, "trivial", {"trivial": 0}, naming=naming)
    lo, hi = problem.interval_point_range
    stages: dict[str, int] = {}
    best, k_best = floor.value, floor.index
    stages["trivial"] = best
    method = "trivial"
    dom = allowed_strategies(problem)
    if dom.empty:
        return PeakBound(None, None, "arc consistency", stages, why=naming.rewrite(dom.why),
                         naming=naming)
    mins = interval_minima(problem, dom.alive)
    base = range_sum(lo, hi, mins, points)
    value, k = _argmax(base)
    stages["arc consistency"] = value
    if value > best:
        best, k_best, method = value, k, "arc consistency"
    usage_ok = base.dtype == np.int64 and len(problem.interval_usages) and \
        int(np.abs(problem.interval_usages).max()) < SAFE_USAGE and \
        int(np.abs(base).max()) < SAFE_USAGE
    if usage_ok:
        pairs = _Pairs(problem, dom.alive, mins)
        profile = base + pairs.static_profile(points)
        value, k = _argmax(profile)
        stages["edge pairs"] = max(value, best)
        if value > best:
            best, k_best, method = value, k, "edge pairs"
        binary = binary_edges(problem)
        refined = best
        for k in np.argsort(-profile, kind="stable")[:refine_points].tolist():
            here = int(base[k]) + pairs.at_point(k)
            if exact_nodes and len(problem.live_nodes_at(k)) <= exact_nodes:
                from .pointexact import point_bound

                exact = point_bound(problem, dom.alive, k, binary, exact_seconds)
                if exact is not None:
                    here = max(here, exact)
            if here > refined:
                refined, k_best, method = here, k, "exact point"
        if refine_points:
            stages["exact point"] = refined
        best = refined
    return PeakBound(best, int(problem.time_points[k_best]), method, stages,
                     _contributors(problem, mins, k_best, naming), naming=naming)
