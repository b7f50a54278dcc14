"""Anytime views of result rows, from the incumbent traces they store.

A row keeps every improving verified plan as ``incumbents`` (``[{time, cost, backend}]``, seconds
since the task started, loading included) and the certified gap over time as ``gap_trace``. From
them one long run answers shorter questions without running again:

* :func:`rescore_row`: the row as it would have been with a time limit of ``at`` seconds (the plan
  held then, the bound known then, optimal only if proven by then);
* :func:`time_to_target`: when the run first held a plan of cost at most a target;
* :func:`primal_integral`: the primal integral of Berthold (2013), the area under the primal gap
  ``|c(t) - best| / max(|c(t)|, |best|)`` (1 while no plan is held) over ``[0, horizon]``, in
  seconds: small when a run is good early.
"""

from __future__ import annotations

import math
from typing import Optional

FAILED_TASK = ("error", "crashed", "timeout")


def time_to_proof(row: dict) -> Optional[float]:
    """Seconds until the row's answer was proven optimal (the bound met the cost), or None."""
    if row.get("status") != "optimal":
        return None
    for point in row.get("gap_trace") or []:
        cost, bound = point.get("cost"), point.get("bound")
        if cost is not None and bound is not None and bound >= cost:
            return float(point["time"])
    return None if row.get("elapsed") is None else float(row["elapsed"])


def rescore_row(row: dict, at: float) -> dict:
    """A copy of ``row`` as if its time limit had been ``at`` seconds (unchanged when ``at`` is at
    or past its own limit: a trace says nothing about time the run did not have)."""
    limit = row.get("time_limit")
    if limit is not None and at >= float(limit):
        return dict(row)
    out = dict(row, time_limit=at, rescored_at=at)
    if row.get("elapsed") is not None:
        out["elapsed"] = min(float(row["elapsed"]), at)
    if row.get("status") in FAILED_TASK:   # no trace: the task failed as a whole
        return out
    held = [i for i in row.get("incumbents") or [] if i["time"] <= at]
    gaps = [g for g in row.get("gap_trace") or [] if g["time"] <= at]
    bounds = [g["bound"] for g in gaps if g.get("bound") is not None]
    proof = time_to_proof(row)
    out.update(incumbents=held, gap_trace=gaps, lower_bound=max(bounds) if bounds else None)
    if held:
        last = held[-1]
        out.update(cost=last["cost"], feasible=True, time_to_best=last["time"],
                   winner=last["backend"],
                   status="optimal" if proof is not None and proof <= at else "feasible")
        if out["status"] != "optimal":
            out["proof"] = None
    else:
        out.update(cost=None, feasible=False, time_to_best=None, winner=None, proof=None,
                   status="no-solution")
    return out


def cost_at(row: dict, at: float) -> Optional[int]:
    """The cost of the plan the row held at ``at`` seconds, or None."""
    held = [i["cost"] for i in row.get("incumbents") or [] if i["time"] <= at]
    return held[-1] if held else None


def time_to_target(row: dict, target: float) -> Optional[float]:
    """Seconds until the row first held a plan of cost at most ``target`` (None: never)."""
    if row.get("status") in FAILED_TASK:
        return None
    for inc in row.get("incumbents") or []:
        if inc["cost"] <= target:
            return float(inc["time"])
    return None


def primal_gap(cost: Optional[int], best: int) -> float:
    """Berthold's primal gap of one cost against the best known: in [0, 1], 1 without a plan."""
    if cost is None:
        return 1.0
    if cost == best:
        return 0.0
    if cost * best < 0:
        return 1.0
    return abs(cost - best) / max(abs(cost), abs(best))


def primal_integral(row: dict, best: Optional[int], horizon: Optional[float] = None) -> Optional[float]:
    """The primal integral of a row over ``[0, horizon]`` (default: its time limit), in seconds."""
    if best is None:
        return None
    horizon = float(horizon if horizon is not None else row.get("time_limit") or math.nan)
    if not math.isfinite(horizon) or horizon <= 0:
        return None
    if row.get("status") in FAILED_TASK:
        return horizon
    area, t, gap = 0.0, 0.0, 1.0
    for inc in row.get("incumbents") or []:
        at = min(float(inc["time"]), horizon)
        area += gap * (at - t)
        t, gap = at, primal_gap(int(inc["cost"]), best)
        if t >= horizon:
            break
    return area + gap * (horizon - t)
