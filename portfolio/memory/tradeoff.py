"""``portfolio tradeoff``: the cost of a plan at a range of memory budgets, under one time budget.

The default budgets (:func:`.budgets.default_budgets`) gather around the file's limit, where a user
decides, with the least peak found (the runner's least-memory plan made forbidden-free; the
certified bound says how far it can be from the least) and the peak of the cheapest plan found with
no limit (a first run, ``HIGH_SHARE`` of the time) as the ends. Then one run per budget, in
increasing order, each warm-started from the best plan that fits so far (the neighbour below, or
the unlimited run's plan when it fits), the time left split over the points left. A budget below the
certified least peak is infeasible without a run.

Monotone by construction: every verified plan of every run is kept with its peak, and each point
takes the cheapest plan whose peak fits its budget, so no point is worse than a smaller budget's.
Such a plan may come from a larger budget's run (its peak happened to fit): ``source`` says where
each point's plan comes from, ``run_cost`` what the point's own run found, and ``on_point`` is told
again whenever a later run makes an earlier point cheaper, so that no cost changes silently.
Lower bounds run the other way: a bound on the cost at a budget also bounds every smaller budget.

Proof words follow the runner's rule (:meth:`portfolio.runner.claims.ClaimBook.verdict`), per
point: a point is ``optimal`` only when the runner's own proof or an ``exact`` backend's bound meets
its cost; another bound that meets it is named as that backend's ``claim``. A run's bounds were
checked against that run's plans only, so each is checked again against every plan that fits its
budget: one a cheaper verified plan contradicts is listed in ``false_bounds`` and left out (never
carried down). A budget claimed infeasible is checked against every plan too: one that fits
``refuted`` it.
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
from ..runner.claims import Claim, ClaimBook, PROVEN
from .bound import PeakBound, least_peak_bound
from .budgets import POINTS, at_budget, default_budgets
from .explain import least_peak_plan
from .peak import peak_report

__all__ = ["HIGH_SHARE", "POINTS", "SOURCES", "Tradeoff", "TradeoffPoint", "run_tradeoff"]

HIGH_SHARE = 0.15
"""Share of the time for the run with no limit that finds the high end of the default budgets."""


SOURCES = ("own", "smaller", "larger", "unconstrained", "least-peak")
"""Where a point's plan comes from: its own run, the run of a smaller or a larger budget (a plan
whose peak fits), the first run with no limit, or the least-memory plan."""


@dataclass
class TradeoffPoint:
    """One budget's answer: the cheapest verified plan that fits (``cost``, ``plan``; ``peak`` its
    peak, ``found_at`` the budget whose run found it, ``source`` one of ``SOURCES``), the best
    standing lower bound on the cost at this budget (``bound_by`` its source, ``bound_exact``
    whether that source can prove), and ``status``: ``optimal`` (a bound that proves meets the
    cost: ``proof`` says whose), ``feasible`` (``claim`` names a bound that meets the cost without
    proving it), ``infeasible`` (``proof`` says why) or ``none`` (no plan found in time).
    ``false_bounds`` are the bounds of this budget's run that a cheaper verified plan
    contradicts (left out); ``refuted`` says which plan refuted an ``infeasible``.
    ``run_cost`` is the cost of the plan this budget's own run answered (None: no run, or none
    found); ``revised`` is True only while ``on_point`` is told of a later, cheaper plan;
    ``multiple`` is the budget over the file's limit (None without one)."""

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
    run_cost: Optional[int] = None
    source: Optional[str] = None
    revised: bool = False
    multiple: Optional[float] = None
    bound_by: Optional[str] = None
    bound_exact: Optional[bool] = None
    claim: Optional[str] = None
    false_bounds: list[str] = field(default_factory=list)
    refuted: Optional[str] = None
    claims: list[Claim] = field(default_factory=list, repr=False)
    """The standing bound claims of this budget's own run (checked again here: ``false_bounds``)."""

    @property
    def taken_over_run(self) -> bool:
        """The monotone rule gave this point a plan cheaper than its own run's, from a run at a
        larger budget (the unconstrained run included)."""
        return (self.cost is not None and self.source in ("larger", "unconstrained")
                and (self.run_cost is None or self.cost < self.run_cost))

    def to_dict(self) -> dict:
        return {"budget": self.budget, "cost": self.cost, "bound": self.bound,
                "status": self.status, "plan": self.plan, "peak": self.peak,
                "found_at": self.found_at, "source": self.source, "run_cost": self.run_cost,
                "proof": self.proof, "seconds": round(self.seconds, 3), "own_limit": self.own,
                "bound_by": self.bound_by, "bound_exact": self.bound_exact, "claim": self.claim,
                "false_bounds": list(self.false_bounds), "refuted": self.refuted}


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
        """The ``--json`` document: the rows with the curve's fields (``multiple``,
        ``cost_vs_limit_percent``, ``saved``, ``saved_per_gib``, ``saved_per_limit_percent``:
        :func:`portfolio.report.tradeoff.curve_fields`), shared with ``portfolio report``."""
        from ..report.tradeoff import curve_fields

        rows = curve_fields([p.to_dict() for p in self.points], self.limit)
        return {"problem": self.problem, "limit": self.limit, "time_limit": self.time_limit,
                "elapsed": round(self.elapsed, 3), "least_peak_bound": self.least_peak_bound.to_dict(),
                "rows": rows, "notes": list(self.notes)}


@dataclass(frozen=True)
class _Found:
    """A verified plan without forbidden choices: its peak and cost, and which run found it
    (``origin``: ``run`` at budget ``at``, ``unconstrained`` or ``least-peak``), with the run's
    winner (``by``) and its registered backend (``by_backend``; ``runner`` for the runner's own
    plans): the finder, whose own bound proves nothing about its plan."""

    peak: int
    cost: int
    plan: np.ndarray
    origin: str
    at: Optional[int] = None
    by: str = "runner"
    by_backend: str = "runner"


class _Plans:
    """Every verified plan without forbidden choices seen, with its peak and cost."""

    def __init__(self, problem: Problem) -> None:
        self.free = at_budget(problem, None)
        self.problem = problem
        self.items: list[_Found] = []

    def add(self, plan: Any, origin: str, at: Optional[int] = None,
            result: Any = None) -> Optional[int]:
        """Keep ``plan`` (``result``: the run that answered it, for its finder); its cost (None
        when it has a forbidden choice, and is not kept)."""
        plan = np.asarray(plan, dtype=np.int64)
        ev = evaluate(self.free, plan)
        if ev.has_forbidden:
            return None
        by = by_backend = "runner"
        if result is not None and result.winner:
            by = result.winner
            by_backend = result.runs[by].backend if by in result.runs else "runner"
        self.items.append(_Found(int(ev.peak_usage), int(ev.cost), plan, origin, at, by,
                                 by_backend))
        return int(ev.cost)

    def best_within(self, budget: int) -> Optional[_Found]:
        """The cheapest plan that fits ``budget``; of equal costs, the budget's own run's first,
        then the least peak (so a tie never reads as a plan taken from elsewhere)."""
        fits = [item for item in self.items if item.peak <= budget]
        return min(fits, key=lambda f: (f.cost, f.at != budget, f.peak)) if fits else None


def _one_run(problem: Problem, budget: Optional[int], backends: Sequence[Any], options: RunOptions,
             seconds: float, warm: Optional[np.ndarray]) -> Any:
    from ..runner import run_portfolio

    opts = replace(options, objective="cost", time_limit=max(0.5, seconds),
                   start=time.monotonic(), warm_start=warm)
    return run_portfolio(at_budget(problem, budget), backends, opts)


def run_tradeoff(problem: Problem, backends: Sequence[Any], options: RunOptions,
                 budgets: Optional[Sequence[int]] = None, points: int = POINTS,
                 on_point: Optional[Callable[[TradeoffPoint], None]] = None,
                 naming: Optional[NodeNaming] = None) -> Tradeoff:
    """Solve ``problem`` at each of ``budgets`` (None: the default ones, see the module) within
    ``options.time_limit`` in all, counted from ``options.start``; ``on_point`` is told each point
    as its run ends, and again (``point.revised``) when a later run finds a cheaper plan that fits
    it. The certified bound names its nodes (and its reason, when no plan exists) in ``naming``'s
    file numbering (the problem's own when None)."""
    begin = time.monotonic() if options.start is None else options.start
    deadline = begin + options.time_limit
    bound = least_peak_bound(problem, naming=naming)
    limit = problem.usage_limit
    plans = _Plans(problem)
    out = Tradeoff(problem.name, [], bound, limit, options.time_limit)
    low_plan = None if bound.value is None else least_peak_plan(problem)
    if low_plan is not None:
        plans.add(low_plan, "least-peak")
    if budgets is None:
        if low_plan is None:
            out.notes.append("no plan without forbidden choices was found: no default budgets")
            out.elapsed = time.monotonic() - begin
            return out
        low = peak_report(problem, low_plan).peak
        free = _one_run(problem, None, backends, options, HIGH_SHARE * options.time_limit,
                        low_plan)
        if free.solution is not None:
            plans.add(free.solution, "unconstrained", result=free)
        cheapest = min(plans.items, key=lambda f: (f.cost, f.peak))
        budgets, why = default_budgets(low, max(low, cheapest.peak), limit, points)
        out.notes.append(why)
    todo = sorted(set(int(b) for b in budgets))
    for i, budget in enumerate(todo):
        point = TradeoffPoint(budget, own=budget == limit,
                              multiple=budget / limit if limit else None)
        out.points.append(point)
        if bound.value is None or budget < bound.value:
            point.status = "infeasible"
            point.proof = (f"below the certified least peak {bound.value:,}" if bound.value
                           is not None else f"no plan without forbidden choices ({bound.why})")
            _tell(on_point, point)
            continue
        fits = plans.best_within(budget)
        below = [p.plan for p in out.points[:-1] if p.plan is not None]
        warm = fits.plan if fits is not None else (np.asarray(below[-1]) if below else low_plan)
        seconds = (deadline - time.monotonic()) / (len(todo) - i)
        t0 = time.monotonic()
        result = _one_run(problem, budget, backends, options, seconds, warm)
        point.seconds = time.monotonic() - t0
        if result.solution is not None:
            point.run_cost = plans.add(result.solution, "run", budget, result)
        point.claims = [c for c in result.claims if not c.false and c.value is not None]
        if result.solution is None and result.infeasible_proven_by:
            point.status, point.proof = "infeasible", f"claimed by {result.infeasible_proven_by}"
        _settle(point, plans)
        _tell(on_point, point)
        _revise(out.points[:-1], plans, on_point)
    _monotone(out.points, plans)
    out.elapsed = time.monotonic() - begin
    return out


def _tell(on_point: Optional[Callable[[TradeoffPoint], None]], point: TradeoffPoint,
          revised: bool = False) -> None:
    if on_point is not None:
        point.revised = revised
        try:
            on_point(point)
        finally:
            point.revised = False


def _revise(earlier: list[TradeoffPoint], plans: _Plans,
            on_point: Optional[Callable[[TradeoffPoint], None]]) -> None:
    """The points already told whose cost a later run's plan lowers (its peak fits them; a point
    told infeasible included: the plan refutes it): settled again, and told again, so a progress
    line never disagrees silently with the table."""
    for point in earlier:
        before = point.cost
        _settle(point, plans)
        if point.cost is not None and (before is None or point.cost < before):
            _tell(on_point, point, revised=True)


def _source(point: TradeoffPoint, found: _Found) -> str:
    if found.origin != "run" or found.at is None:
        return found.origin
    return "own" if found.at == point.budget else "larger" if found.at > point.budget else "smaller"


def _where(found: _Found) -> str:
    """The run a plan came from, in words."""
    return (f"the run at budget {found.at:,}" if found.origin == "run" and found.at is not None
            else {"unconstrained": "the run with no limit"}.get(found.origin, "the least-peak plan"))


def _settle(point: TradeoffPoint, plans: _Plans, carried: Sequence[Claim] = ()) -> None:
    """The point's cheapest fitting plan among all seen, where it comes from, and its status: an
    ``infeasible`` that a plan fits is refuted; the bounds (its run's, and ``carried`` from larger
    budgets) are judged by the runner's rule against that plan, a contradicted one left out."""
    fits = plans.best_within(point.budget)
    if fits is None:
        if point.status != "infeasible":
            point.status = "none"
        return
    if point.status == "infeasible":
        point.refuted = (f"infeasible ({point.proof}) refuted: the plan of {_where(fits)} (peak "
                         f"{fits.peak:,}) fits")
    point.peak, point.cost, point.found_at = fits.peak, fits.cost, fits.at
    point.source = _source(point, fits)
    point.plan = [int(s) for s in fits.plan]
    point.false_bounds = [
        f"{c.what()} by {c.source} (run at budget {point.budget:,}) is false: a plan of cost "
        f"{fits.cost:,} (peak {fits.peak:,}) fits budget {point.budget:,}"
        for c in point.claims if c.value > fits.cost]
    book = ClaimBook()
    for claim in [*point.claims, *carried]:
        if claim.value <= fits.cost:
            book.add(claim)
    best = book.best_bound()
    point.bound = None if best is None else int(best.value)
    point.bound_by = None if best is None else best.source
    point.bound_exact = None if best is None else best.exact
    verdict = book.verdict(fits.cost, fits.by, fits.by_backend)
    proven = verdict is not None and verdict.startswith(PROVEN)
    point.status = "optimal" if proven else "feasible"
    point.proof = verdict if proven else None
    point.claim = None if proven else verdict


def standing(point: TradeoffPoint) -> list[Claim]:
    """The bounds of ``point``'s run that no verified plan contradicts (what holds for every
    smaller budget)."""
    return [c for c in point.claims if point.cost is None or c.value <= point.cost]


def _monotone(points: list[TradeoffPoint], plans: _Plans) -> None:
    """Each point takes the cheapest verified plan that fits it (its own or any other run's), and
    each standing bound holds for every smaller budget; statuses follow."""
    carried: list[Claim] = []
    for point in reversed(points):
        _settle(point, plans, carried)
        carried += standing(point)
