"""``objective="peak"``: the plan with the least peak memory, ties broken by cost, verified, with
the certified bound beside it.

The method (docs/budgets.md, "The least peak"): the certified bound (:mod:`.bound`) is the floor;
the runner's least-memory plan made forbidden-free is the first plan and its peak the first
ceiling. Then a bisection between floor and ceiling: each probe is a short run of the portfolio on
the problem with the probe's budget as its limit, warm-started from the best plan so far (the
runner repairs it toward the budget), and ended at its first verified plan without forbidden
choices that fits. A plan found lowers the ceiling to its peak; none found raises the search's
floor (not the certified bound: not finding is no proof; an exact backend's standing claim that the
budget is infeasible is recorded as ``claimed_bound``). When the two meet (within ``STOP_GAP``) or
the probes' share of the time is spent, one cost run at the ceiling, warm-started from its plan,
takes the rest of the time: the cheapest plan at the least budget found.

Limits: the answer's peak is the least *found*; it is proven least when it meets the certified
bound (``proven``), as on most contest instances, where the least-memory plan reaches it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..adapters.naming import NodeNaming
from ..evaluate import evaluate
from ..options import RunOptions
from ..problem import Problem
from .bound import least_peak_bound
from .budgets import at_budget
from .explain import least_peak_plan
from .peak import peak_report, point_index

FINAL_SHARE = 0.35
"""Share of the time kept for the cost run at the least budget found."""

PROBE_MIN = 1.5
"""Seconds a probe needs at least (forks, presolve, a first plan); fewer left ends the search."""

STOP_GAP = 0.0005
"""The search ends when ceiling and floor are within this fraction of the ceiling."""


class _Fits(Exception):
    """Raised from a probe's ``on_update`` at its first plan that fits: ends the run (the runner
    answers with ``callback_error`` set; the plan is kept by the hook)."""


def _probe(problem: Problem, budget: Optional[int], backends: Sequence[Any], options: RunOptions,
           seconds: float, warm: Optional[np.ndarray]) -> tuple[Optional[np.ndarray], Optional[str]]:
    """A short run at ``budget``: (a verified plan without forbidden choices that fits, or None;
    the exact backend's standing infeasibility claim, if any)."""
    from ..runner import run_portfolio

    sub = at_budget(problem, budget)
    seen: list[Optional[int]] = [None]
    fit: list[Optional[np.ndarray]] = [None]

    def first_fit(runner: Any) -> None:
        found = runner.incumbent()
        if found is None or found[0] == seen[0]:
            return
        seen[0] = found[0]
        ev = evaluate(sub, found[1])
        if ev.feasible and not ev.has_forbidden:
            fit[0] = np.asarray(found[1], dtype=np.int64)
            raise _Fits("a plan fits")

    opts = replace(options, objective="cost", time_limit=seconds, start=time.monotonic(),
                   warm_start=warm)
    result = run_portfolio(sub, backends, opts, on_update=first_fit)
    if fit[0] is not None:
        return fit[0], None
    if result.solution is not None:
        ev = evaluate(sub, result.solution)
        if ev.feasible and not ev.has_forbidden:
            return np.asarray(result.solution, dtype=np.int64), None
    return None, result.infeasible_proven_by


def _given_plan(problem: Problem, plan: Any) -> Optional[tuple[np.ndarray, int]]:
    """The caller's warm start as a first plan, with its peak, when it has no forbidden choice."""
    if plan is None:
        return None
    plan = np.asarray(plan, dtype=np.int64)
    if evaluate(at_budget(problem, None), plan).has_forbidden:
        return None
    return plan, peak_report(problem, plan).peak


def solve_least_peak(problem: Problem, backends: Sequence[Any], options: RunOptions,
                     on_update: Optional[Callable[[Any], None]] = None,
                     naming: Optional[NodeNaming] = None) -> Any:
    """The portfolio result of the cost run at the least budget found, its ``evaluation`` on
    ``problem`` itself and its ``memory`` document (see the module and docs/budgets.md), whose
    nodes are in ``naming``'s file numbering (the problem's own when None)."""
    from ..runner import run_portfolio

    begin = time.monotonic() if options.start is None else options.start
    deadline = begin + options.time_limit
    bound = least_peak_bound(problem, naming=naming)
    probes: list[dict] = []
    best = None if bound.value is None else least_peak_plan(problem)
    ceiling = None if best is None else peak_report(problem, best).peak
    given = _given_plan(problem, options.warm_start)
    if given is not None and (ceiling is None or given[1] < ceiling):
        best, ceiling = given
    floor = bound.value if bound.value is not None else 0
    claimed = None
    while bound.value is not None and (ceiling is None or ceiling - floor > STOP_GAP * ceiling):
        left = deadline - time.monotonic()
        spare = left - max(1.0, FINAL_SHARE * options.time_limit)
        if spare < PROBE_MIN:
            break
        budget = None if ceiling is None else (floor + ceiling) // 2
        seconds = max(PROBE_MIN, spare / 3)
        t0 = time.monotonic()
        plan, claim = _probe(problem, budget, backends, options, seconds, best)
        row = {"budget": budget, "seconds": round(time.monotonic() - t0, 3)}
        if plan is not None:
            best, ceiling = plan, peak_report(problem, plan).peak
            row.update(outcome="fits", peak=ceiling)
        elif budget is None:
            row["outcome"] = "no plan found"
            probes.append(row)
            break
        else:
            floor = budget + 1
            row["outcome"] = "none found"
            if claim:
                row["outcome"] = f"infeasible (claimed by {claim})"
                claimed = max(claimed or 0, budget + 1)
        probes.append(row)
    final = replace(options, objective="cost", start=time.monotonic(),
                    time_limit=max(0.5, deadline - time.monotonic()), warm_start=best)
    result = run_portfolio(at_budget(problem, ceiling), backends, final, on_update=on_update)
    if result.solution is not None:
        result.evaluation = evaluate(problem, result.solution)
    result.warm_start = None   # the search's own hand-over, not the caller's: probes say it
    result.memory = _document(problem, result, bound, ceiling, claimed, probes, naming)
    return result


def _document(problem: Problem, result: Any, bound: Any, budget: Optional[int],
              claimed: Optional[int], probes: list[dict], naming: Optional[NodeNaming]) -> dict:
    """The ``memory`` document of a least-peak search, about one time point: where the plan
    peaks, preferring the bound's point when the plan peaks there too (always when proven)."""
    k = point_index(problem, bound.time)
    # a plan with a forbidden choice (the answer when no other exists) has no least peak to show
    clean = result.solution is not None and not result.evaluation.has_forbidden
    report = peak_report(problem, result.solution, naming=naming, prefer=k) if clean else None
    peak = None if report is None else report.peak
    gap = None
    if peak is not None and bound.value is not None:
        gap = 0.0 if peak == bound.value else (peak - bound.value) / peak if peak > 0 else None
    doc = {"objective": "peak", "least_peak": peak, "budget": budget,
           "limit": problem.usage_limit, "time": None if report is None else report.time,
           "bound": bound.to_dict(), "claimed_bound": claimed,
           "gap": gap, "proven": peak is not None and peak == bound.value,
           "best": None if report is None else report.to_dict(), "probes": probes}
    if peak is None:
        doc["text"] = ("No plan without forbidden choices was found"
                       + (f" ({bound.why})." if bound.why else "."))
    else:
        word = "proven least" if doc["proven"] else f"certified bound {bound.value:,}, gap " \
                                                    f"{100 * gap:.3f} %"
        doc["text"] = f"least peak {report.text()}; {word}; cost {result.cost:,} at that budget."
    return doc
