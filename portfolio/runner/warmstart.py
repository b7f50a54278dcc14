"""A run's warm start: the given plan verified, repaired when it breaks something, held as an
incumbent before any backend starts, and what the run made of it.

Why the runner does this and not each backend: the guarantee "a warm-started run never returns a
worse plan than the one given" must hold whatever the backends do, so the given plan (verified by
the evaluator like any other) is a plan of the run from its first moment, ahead of the fallback
plan. A plan that is forbidden somewhere or over the memory capacity (a hint from another tool, a
previous plan on a changed problem) is repaired here first, in plain numpy (:mod:`.repair`: no
compilation in the parent); when memory cannot be made to fit, the given plan is kept only as the
backends' starting point. The result reports all of it (:meth:`WarmStart.report`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..evaluate import Evaluation, evaluate
from ..problem import Problem
from .repair import Repair, repair_plan

WARM_START = "(warm start)"
"""The winner's name when the answer is the warm start (as given or repaired)."""

REPAIR_SECONDS = 3.0
REPAIR_SHARE = 0.1
"""The repair takes at most this share of the time limit, and never more than REPAIR_SECONDS."""

AS_GIVEN, REPAIRED, HINT = "as given", "repaired", "hint only"

COLD: tuple[str, ...] = ("toulbar2",)
"""The backends that start cold in a run with a warm start (a re-solve): they start as in a run
without one and read only their own part's plans (the runner's ``shared_cold`` board), while the
warm plan stays an incumbent of the run and the other backends follow it. ``toulbar2`` alone: on
K, N and S after the three changes a compiler makes, three seeds alternated, at 10 s it was the
only split whose mean beat the cold solve on every (instance, change) (every backend following
lost on K's tighter limit, where the repair makes the plan 36 % dearer; every backend cold lost on
S's); docs/benchmarks/resolve.md."""


FAR_REPAIR = 0.25
"""When no one decides a re-solve's cold part (``RunOptions.cold`` None: no selector, no
``cold=``), the runner does, from how far the warm start was from fitting: when the repair made
the plan more than this much dearer than it was given (over memory, its cost as given against
the repaired plan's), every backend starts cold (the warm plan stays an incumbent); otherwise
:data:`COLD`. Two measured points (docs/benchmarks/resolve.md, 10 s, three seeds): K's limit
3 % tighter, the repair 36 % dearer, where every backend cold was the best split (-3.44 % against
a cold solve, :data:`COLD` -0.21 %); S's, the repair 17 % dearer, where following the repaired
plan won (:data:`COLD` -6.85 %, every backend cold +0.69 %). The threshold lies between them."""


def repair_rise(warm: "WarmStart") -> Optional[float]:
    """How much dearer the repair made the plan than it was given (a share: 0.36 for 36 %), or
    None when that means nothing: not repaired, or the given plan has forbidden choices (its cost
    counts them at ``10**18``)."""
    given = warm.given_eval
    if warm.status != REPAIRED or given.has_forbidden or given.cost <= 0:
        return None
    return warm.start_eval.cost / given.cost - 1.0


def cold_part(warm: "WarmStart", names: Sequence[str],
              given: Optional[tuple[str, ...]]) -> tuple[tuple[str, ...], str]:
    """The run's cold part and why: ``given`` (a selector's or the caller's) when there is one,
    else the rule of :data:`FAR_REPAIR` over the run's backends ``names``."""
    if given is not None:
        return tuple(given), "given"
    rise = repair_rise(warm)
    if rise is not None and rise > FAR_REPAIR:
        return tuple(names), (f"the repair made the plan {100 * rise:.1f} % dearer (more than "
                              f"{100 * FAR_REPAIR:.0f} %): every backend starts cold")
    return COLD, "the default" + ("" if rise is None else
                                  f" (the repair made the plan {100 * rise:.1f} % dearer)")


def starts_cold(name: str, cold: Optional[tuple[str, ...]]) -> bool:
    """Whether the backend ``name`` starts cold in a warm-started run (``cold``: the run's
    ``RunOptions.cold``; None: :data:`COLD`)."""
    return name in (COLD if cold is None else cold)


def repair_seconds(time_limit: float) -> float:
    return max(0.05, min(REPAIR_SECONDS, REPAIR_SHARE * time_limit))


@dataclass
class WarmStart:
    """The given plan, what it was worth, and the plan the run starts from."""

    given: np.ndarray
    given_eval: Evaluation
    status: str
    """``as given`` (feasible, nothing forbidden), ``repaired`` (the repair made it feasible and
    cheaper) or ``hint only`` (not feasible even repaired: the backends start from it, nothing
    more)."""
    start: np.ndarray
    """What backends start from: the repaired plan when there is one, else the given one."""
    start_eval: Evaluation
    repair: Optional[Repair] = None
    cut: Optional[float] = None
    """Deterministic mode: the seconds the repair had when the run's deadline ended it unfinished
    (None: it finished, or was not needed); the run then goes on from the plan as given."""
    cold: tuple[str, ...] = COLD
    """The backends that start cold (:meth:`decide_cold`)."""
    cold_why: str = "the default"

    def decide_cold(self, names: Sequence[str], given: Optional[tuple[str, ...]]) -> None:
        """The run's cold part, given or by the rule (:func:`cold_part`), over backends ``names``."""
        self.cold, self.cold_why = cold_part(self, names, given)

    @property
    def start_cost(self) -> Optional[int]:
        """The cost the run starts from (None: no feasible plan came from the warm start)."""
        return self.start_eval.cost if self.status != HINT else None

    def incumbents(self) -> list[np.ndarray]:
        """The feasible plans among the given and the repaired one (the runner verifies both)."""
        out = [self.given] if self.given_eval.feasible else []
        if self.status == REPAIRED:
            out.append(self.start)
        return out

    def _why(self) -> str:
        ev = self.given_eval
        why = []
        forbidden = ev.forbidden_node_choices + ev.forbidden_edge_entries
        if forbidden:
            why.append(f"forbidden ({ev.forbidden_node_choices:,} node strategies, "
                       f"{ev.forbidden_edge_entries:,} edge entries)")
        if not ev.feasible:
            why.append(f"over the memory limit at {ev.violated_time_points:,} time points (first "
                       f"t={ev.first_violation_time}, peak {ev.peak_usage:,} > {ev.usage_limit:,})")
        return " and ".join(why)

    def report(self, final_cost: Optional[int]) -> dict:
        """What the result says about the warm start: its cost or why it could not be used, the
        repair, and the improvement of the answer on the plan the run started from."""
        ev, start = self.given_eval, self.start_cost
        improvement = pct = None
        if start is not None and final_cost is not None:
            improvement = start - final_cost
            pct = round(100.0 * improvement / start, 4) if start > 0 else None
        repair = None
        if self.repair is not None:
            repair = {"did": self.repair.text(), "finished": True,
                      "feasible": bool(self.start_eval.feasible),
                      "cost": int(self.start_eval.cost), "seconds": round(self.repair.seconds, 3)}
        elif self.cut is not None:
            repair = {"did": "stopped unfinished at the run's deadline", "finished": False,
                      "feasible": None, "cost": None, "seconds": round(self.cut, 3)}
        return {"status": self.status, "cost": int(ev.cost) if ev.feasible else None,
                "feasible": bool(ev.feasible), "why": self._why() or None,
                "forbidden_choices": ev.forbidden_node_choices + ev.forbidden_edge_entries,
                "over_limit_points": ev.violated_time_points, "repair": repair,
                "start_cost": start, "final_cost": final_cost, "improvement": improvement,
                "improvement_percent": pct}

    def text(self, final_cost: Optional[int]) -> str:
        """One line for people (the CLI's stderr)."""
        return report_text(self.report(final_cost))


def report_text(doc: dict) -> str:
    """One line from a warm-start report (:meth:`WarmStart.report`, as a result document holds it):
    its cost or why it could not be used, the repair, and what the run made of it."""
    repair = doc["repair"]
    if repair is not None and not repair.get("finished", True):
        head = (f"cost {doc['cost']:,}" if doc["status"] == AS_GIVEN else doc["why"] or "")
        head += (f"; its repair did not finish by the run's deadline ({repair['seconds']:.2f} s)"
                 + ("" if doc["status"] == AS_GIVEN else ": kept only as the backends' starting plan"))
    elif doc["status"] == AS_GIVEN:
        head = f"cost {doc['cost']:,}"
    else:
        head = doc["why"] or ""
        if doc["cost"] is not None:
            head += f" (cost {doc['cost']:,})"
        head += f"; repaired in {repair['seconds']:.2f} s ({repair['did']})"
        head += (f": cost {repair['cost']:,}" if doc["status"] == REPAIRED
                 else ": kept only as the backends' starting plan")
    previous = (doc.get("mapping") or {}).get("previous_cost")
    if previous:   # a re-solve: the yardstick is what the previous plan cost before the change
        start = doc.get("start_cost")
        head += (f"; the previous plan cost {previous:,} on the previous problem"
                 + ("" if start is None else f", {_change(start, previous)} once mapped and "
                    f"repaired"))
    if doc["improvement"] is None:
        return head
    if doc["improvement"] <= 0:
        return head + "; the run found nothing cheaper than the plan it started from"
    pct = "" if doc["improvement_percent"] is None else f" ({doc['improvement_percent']:.2f} %)"
    text = head + f"; the answer is {doc['improvement']:,}{pct} below the plan the run started from"
    if previous and doc.get("final_cost") is not None:
        text += f", {_change(doc['final_cost'], previous)} against the previous plan's cost"
    return text


def _change(cost: int, reference: int) -> str:
    """``+3.21 %`` or ``-0.50 %``: ``cost`` against ``reference``."""
    return "equal" if cost == reference else f"{100.0 * (cost - reference) / reference:+.2f} %"


def take_warm_start(problem: Problem, plan: object, seconds: float) -> WarmStart:
    """Verify ``plan`` (a plan of ``problem``: checked by the evaluator, a bad one raises its
    ``SolutionError``) and repair it within ``seconds`` when it is forbidden somewhere or over the
    memory capacity."""
    given = np.array(plan, dtype=np.int64)
    ev = evaluate(problem, given)
    if ev.feasible and not ev.has_forbidden:
        return WarmStart(given, ev, AS_GIVEN, given, ev)
    return _settle(problem, given, ev, repair_plan(problem, given, seconds))


def take_warm_start_by(problem: Problem, plan: object, stop: float, ctx: Any) -> WarmStart:
    """Deterministic mode's :func:`take_warm_start`: the repair reads no clock and runs to its own
    end (its loops are bounded by their counts: the same plan on every machine), in a child forked
    from ``ctx`` so that the run's clock still bounds it. Past ``stop`` (``time.monotonic()``) the
    child is ended and the run goes on from the plan as given, ``cut`` saying so: the answer is then
    not the deterministic one. A repair that finishes in time gives what it gives in process."""
    given = np.array(plan, dtype=np.int64)
    ev = evaluate(problem, given)
    if ev.feasible and not ev.has_forbidden:
        return WarmStart(given, ev, AS_GIVEN, given, ev)
    t0 = time.monotonic()
    repair = _repair_until(problem, given, stop, ctx)
    if repair is None:
        return WarmStart(given, ev, AS_GIVEN if ev.feasible else HINT, given, ev,
                         cut=time.monotonic() - t0)
    return _settle(problem, given, ev, repair)


def _settle(problem: Problem, given: np.ndarray, ev: Evaluation, repair: Repair) -> WarmStart:
    """The warm start once ``repair`` (of ``given``, evaluated ``ev``) is known."""
    rev = evaluate(problem, repair.plan)
    if rev.feasible and (not ev.feasible or rev.cost < ev.cost):
        return WarmStart(given, ev, REPAIRED, repair.plan, rev, repair)
    if ev.feasible:     # forbidden, and the repair found nothing cheaper: the plan as it is
        return WarmStart(given, ev, AS_GIVEN, given, ev, repair)
    return WarmStart(given, ev, HINT, given, ev, repair)


def _repair_until(problem: Problem, given: np.ndarray, stop: float, ctx: Any) -> Optional[Repair]:
    """:func:`repair_plan` without a clock, in a forked child, ended at ``stop``; None when it did
    not answer by then (or died)."""
    if stop <= time.monotonic():
        return None
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_repair_child, args=(problem, given, send), daemon=True,
                        name="warm-start repair")
    child.start()
    send.close()
    try:
        if receive.poll(max(0.0, stop - time.monotonic())):
            try:
                return receive.recv()
            except (EOFError, OSError):   # the child died before it answered
                return None
        return None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()


def _repair_child(problem: Problem, given: np.ndarray, send: Any) -> None:
    send.send(repair_plan(problem, given, math.inf))
    send.close()
