"""``portfolio tradeoff``: the cost of a plan at a range of memory budgets, under one time budget.

The default budgets run from the least peak found (the runner's least-memory plan made
forbidden-free; the certified bound says how far it can be from the least) to the peak of the
cheapest plan found with no limit (a first run, ``HIGH_SHARE`` of the time), ``POINTS`` of them,
plus the file's own limit when it lies between. Then one run per budget, in increasing order, each
warm-started from the best plan that fits so far (the neighbour below, or the unlimited run's plan
when it fits), the time left split over the points left. A budget below the certified least peak is
infeasible without a run.

Monotone by construction: every verified plan of every run is kept with its peak, and each point
takes the cheapest plan whose peak fits its budget, so no point is worse than a smaller budget's.
Lower bounds run the other way: a bound on the cost at a budget also bounds every smaller budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..adapters.naming import NodeNaming
from ..evaluate import evaluate
from ..options import RunOptions
from ..problem import Problem
from .bound import PeakBound, least_peak_bound
from .budgets import at_budget
from .explain import least_peak_plan
from .peak import peak_report

POINTS = 8
"""Budgets of a default tradeoff (the file's own limit is added when it lies between)."""

HIGH_SHARE = 0.15
"""Share of the time for the run with no limit that finds the high end of the default budgets."""


@dataclass
class TradeoffPoint:
    """One budget's answer: the cheapest verified plan that fits (``cost``, ``plan``; ``peak`` its
    peak, ``found_at`` the budget whose run found it), the best standing lower bound on the cost at
    this budget, and ``status``: ``optimal`` (cost meets bound), ``feasible``, ``infeasible``
    (``proof`` says why) or ``none`` (no plan found in time)."""

    budget: int
    cost: Optional[int] = None
    bound: Optional[int] = None
    status: str = "none"
    plan: Optional[list[int]] = None
    peak: Optional[int] = None
    found_at: Optional[int] = None
    proof: Optional[str] = None
    seconds: float = 0.0
    own: bool = False

    def to_dict(self) -> dict:
        return {"budget": self.budget, "cost": self.cost, "bound": self.bound,
                "status": self.status, "plan": self.plan, "peak": self.peak,
                "found_at": self.found_at, "proof": self.proof, "seconds": round(self.seconds, 3),
                "own_limit": self.own}


@dataclass
class Tradeoff:
    """The rows (increasing budgets), the certified least peak and the file's own limit."""

    problem: str
    points: list[TradeoffPoint]
    least_peak_bound: PeakBound
    limit: Optional[int]
    time_limit: float
    elapsed: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"problem": self.problem, "limit": self.limit, "time_limit": self.time_limit,
                "elapsed": round(self.elapsed, 3), "least_peak_bound": self.least_peak_bound.to_dict(),
                "rows": [p.to_dict() for p in self.points], "notes": list(self.notes)}


def spread(low: int, high: int, points: int = POINTS) -> list[int]:
    """``points`` budgets from ``low`` to ``high`` included, evenly spaced, as distinct integers."""
    if high <= low:
        return [low]
    return sorted({low + (high - low) * i // (points - 1) for i in range(points)})


class _Plans:
    """Every verified plan without forbidden choices seen, with its peak and cost."""

    def __init__(self, problem: Problem) -> None:
        self.free = at_budget(problem, None)
        self.problem = problem
        self.items: list[tuple[int, int, np.ndarray, Optional[int]]] = []   # peak, cost, plan, at

    def add(self, plan: Any, found_at: Optional[int]) -> None:
        plan = np.asarray(plan, dtype=np.int64)
        ev = evaluate(self.free, plan)
        if not ev.has_forbidden:
            self.items.append((ev.peak_usage, ev.cost, plan, found_at))

    def best_within(self, budget: int) -> Optional[tuple[int, int, np.ndarray, Optional[int]]]:
        fits = [item for item in self.items if item[0] <= budget]
        return min(fits, key=lambda item: (item[1], item[0])) if fits else None


def _one_run(problem: Problem, budget: Optional[int], backends: Sequence[Any], options: RunOptions,
             seconds: float, warm: Optional[np.ndarray]) -> Any:
    from ..runner import run_portfolio

    opts = replace(options, objective="cost", time_limit=max(0.5, seconds),
                   start=time.monotonic(), warm_start=warm)
    return run_portfolio(at_budget(problem, budget), backends, opts)


def _plans_of(result: Any) -> list[np.ndarray]:
    return [] if result.solution is None else [result.solution]


def run_tradeoff(problem: Problem, backends: Sequence[Any], options: RunOptions,
                 budgets: Optional[Sequence[int]] = None, points: int = POINTS,
                 on_point: Optional[Callable[[TradeoffPoint], None]] = None,
                 naming: Optional[NodeNaming] = None) -> Tradeoff:
    """Solve ``problem`` at each of ``budgets`` (None: the default range, see the module) within
    ``options.time_limit`` in all, counted from ``options.start``; ``on_point`` is told each point
    as its run ends (before the monotone pass). The certified bound names its nodes (and its
    reason, when no plan exists) in ``naming``'s file numbering (the problem's own when None)."""
    begin = time.monotonic() if options.start is None else options.start
    deadline = begin + options.time_limit
    bound = least_peak_bound(problem, naming=naming)
    limit = problem.usage_limit
    plans = _Plans(problem)
    out = Tradeoff(problem.name, [], bound, limit, options.time_limit)
    low_plan = None if bound.value is None else least_peak_plan(problem)
    if low_plan is not None:
        plans.add(low_plan, None)
    if budgets is None:
        if low_plan is None:
            out.notes.append("no plan without forbidden choices was found: no default budgets")
            out.elapsed = time.monotonic() - begin
            return out
        low = peak_report(problem, low_plan).peak
        free = _one_run(problem, None, backends, options, HIGH_SHARE * options.time_limit,
                        low_plan)
        for plan in _plans_of(free):
            plans.add(plan, None)
        cheapest = min(plans.items, key=lambda item: (item[1], item[0]))
        budgets = spread(low, max(low, cheapest[0]), points)
        if limit is not None and budgets[0] < limit < budgets[-1] and limit not in budgets:
            budgets = sorted(budgets + [limit])
    todo = sorted(set(int(b) for b in budgets))
    for i, budget in enumerate(todo):
        point = TradeoffPoint(budget, own=budget == limit)
        out.points.append(point)
        if bound.value is None or budget < bound.value:
            point.status = "infeasible"
            point.proof = (f"below the certified least peak {bound.value:,}" if bound.value
                           is not None else f"no plan without forbidden choices ({bound.why})")
            continue
        fits = plans.best_within(budget)
        below = [p.plan for p in out.points[:-1] if p.plan is not None]
        warm = fits[2] if fits is not None else (np.asarray(below[-1]) if below else low_plan)
        seconds = (deadline - time.monotonic()) / (len(todo) - i)
        t0 = time.monotonic()
        result = _one_run(problem, budget, backends, options, seconds, warm)
        point.seconds = time.monotonic() - t0
        for plan in _plans_of(result):
            plans.add(plan, budget)
        best_bound = result.best_bound
        point.bound = None if best_bound is None else int(best_bound.value)
        if result.solution is None and result.infeasible_proven_by:
            point.status, point.proof = "infeasible", f"claimed by {result.infeasible_proven_by}"
        _settle(point, plans)
        if on_point is not None:
            on_point(point)
    _monotone(out.points, plans)
    out.elapsed = time.monotonic() - begin
    return out


def _settle(point: TradeoffPoint, plans: _Plans) -> None:
    """The point's cheapest fitting plan among all seen, and its status."""
    fits = plans.best_within(point.budget)
    if fits is not None:
        point.peak, point.cost, point.found_at = fits[0], fits[1], fits[3]
        point.plan = [int(s) for s in fits[2]]
        point.status = "optimal" if point.bound is not None and point.cost <= point.bound \
            else "feasible"
        point.proof = None
    elif point.status != "infeasible":
        point.status = "none"


def _monotone(points: list[TradeoffPoint], plans: _Plans) -> None:
    """Each point takes the cheapest verified plan that fits it (its own or any other run's), and
    each bound holds for every smaller budget; statuses follow."""
    carried: Optional[int] = None
    for point in reversed(points):
        if point.bound is not None:
            carried = point.bound if carried is None else max(carried, point.bound)
        if point.status != "infeasible":
            point.bound = carried
    for point in points:
        if point.status != "infeasible":
            _settle(point, plans)
