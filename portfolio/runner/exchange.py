"""Deterministic mode, parent side: the exchange points and what the run says about itself.

Why: a compiler needs the same plan for the same problem, seed and work budget, whatever the load
or the number of cores (docs/determinism.md). So in this mode nothing the parent decides depends on
when a message arrives. Each backend counts work units (:mod:`portfolio.work`, worker side in
:mod:`.points`) and stops at every ``EXCHANGE_UNITS`` of its own count: exchange point k. The
parent *settles* point k once every backend of the run has reached it or ended (ended: its final
word, ``done`` or ``error``, counts at the point after the last one it passed; a worker that died
without one is dropped, and the run is then not the deterministic answer):

1. the plans handed over at point k are taken in a fixed order (the runs' sorted names), and the
   incumbent changes only for a strictly cheaper one (each plan was verified when it arrived);
2. the incumbent is published (:class:`~.worker.SharedBest`, then its ``settled`` counter: the
   parent never writes to a pipe), and the waiting workers go on from it;
3. the bounds and claims of point k are applied in the same order, and the early-stop rule runs:
   a run ends early only at a point.

Presolve is waited for (a point is not settled while it runs); the rules that read the clock
elsewhere (extra seeds on idle cores, presolve's share of the budget, the quick backends' head start
before an early stop) are off or only move when things run, never what they compute. The
wall-clock limit stays as the safety net: when it fires first (or ends a warm start's repair, which
runs without a clock of its own), the answer is the best verified plan received, and
:meth:`Exchange.summary` says it is not the deterministic answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

import numpy as np

from ..backend import BackendLike, Status, declared
from ..evaluate import Evaluation
from ..identity import plan_identity
from ..work import EXCHANGE_UNITS
from . import validate
from .claims import INFEASIBLE, LOWER_BOUND, OPTIMAL
from .crew import refuse
from .result import BackendRun

if TYPE_CHECKING:
    from .answers import Answers
    from .context import RunContext
    from .crew import Worker
    from .focus import Focus
    from .warmstart import WarmStart

BOUND = "bound"
"""A bound handed over at a point (``report.bound``), applied like a bound sent in a timed run."""

MIN_SHARE = 0.01
"""The least ``work_share`` a backend gets (a zero or negative one would leave it no work)."""


def deterministic_split(backends: Sequence[BackendLike]) -> tuple[list[BackendLike], list[str]]:
    """(the backends that declare ``meta.deterministic``, the names of the others): the one rule
    the CLI, the API and the runner apply to choose a deterministic run's backends."""
    kept = [b for b in backends if declared(b)[0].deterministic]
    return kept, [b.name for b in backends if not declared(b)[0].deterministic]


def allot_work(runs: dict[str, BackendRun], by_name: dict[str, BackendLike],
               work_budget: int, weights: Optional[Mapping[str, float]] = None) -> dict[str, int]:
    """Each run's share of the work budget, by its backend's declared ``work_share`` (at least
    ``MIN_SHARE``) times its CPU weight (``RunOptions.cpu_weights``; 1 when not given): what its
    worker counts to (:class:`.points.PointReporter`). A start-time decision, so the same for
    every run of the same options."""
    weights = weights or {}
    shares = {name: max(MIN_SHARE, float(declared(by_name[run.backend])[0].work_share))
              * float(weights.get(run.backend, 1.0)) for name, run in runs.items()}
    whole = sum(shares.values()) or 1.0
    return {name: max(1, int(work_budget * share / whole)) for name, share in shares.items()}


@dataclass
class _Track:
    """Where one backend's run stands in the exchange."""

    reached: int = 0
    """The last exchange point it handed over."""
    ended: bool = False
    """Its final word came (its last plans count at ``end_point``), or it was refused."""
    end_point: Optional[int] = None
    dropped: Optional[str] = None
    """Why it left without a final word, when that happened during the run (not at its end)."""
    dropped_at: int = 0
    """The last settled point when it was dropped."""
    late: bool = False
    """Its final word came once the backends' deadline had passed: the clock may have stopped it."""


class Exchange:
    """The rules above: deterministic mode's part of a run.

    Owns where each backend stands (``_Track``), the plans and claims handed over for each point
    until it is settled, the last settled point, the early stop decided at a point, whether the run
    is closing, and the best plan received (the answer when the run cannot finish). Verifies and
    records plans, and makes incumbents and claims, through ``answers``; ends rows through the
    context's ``rows``; publishes each settled point through its ``shared`` board; refuses a
    worker that breaks the protocol (:func:`.crew.refuse`). The context's ``work_of`` is each
    run's work (:func:`allot_work`); ``left_out`` names the backends without the mode."""

    def __init__(self, context: "RunContext", answers: "Answers", left_out: list[str],
                 focus: "Focus") -> None:
        self._answers, self._rows, self._by_name = answers, context.rows, context.by_name
        self._focus = focus
        self._shared, self._clock, self._options = context.shared, context.clock, context.options
        self._option_values, self._left_out = context.option_values, left_out
        self._work_of: dict[str, int] = context.work_of or {}
        self._tracks = {name: _Track() for name in self._rows}
        self._offers: dict[int, dict[str, list[tuple[np.ndarray, Evaluation, str]]]] = {}
        self._point_claims: dict[int, dict[str, list[tuple[str, object, str]]]] = {}
        self._settled = 0
        self._halted: Optional[str] = None     # the early stop decided at a point
        self._closing = False                  # the run is ending: kills from now on are not drops
        self._loose_best: Optional[tuple[np.ndarray, Evaluation, str]] = None  # best received

    def begin(self, incumbent: Optional[np.ndarray]) -> None:
        """Point 0's incumbent (the verified warm start), published before any worker starts."""
        if incumbent is not None:
            self._shared.publish(incumbent)

    @property
    def settled_point(self) -> int:
        return self._settled

    def close(self) -> None:
        """The run is ending: no point is settled from here on, and a kill is not a drop."""
        self._closing = True

    # ---------------------------------------------------------------- messages
    def on_point(self, worker: "Worker", k: int, plan: object, note: str, bound: object,
                 bound_note: str) -> None:
        track = self._tracks[worker.run.name]
        if k != track.reached + 1:
            refuse(worker, f"malformed message: exchange point {k} after point {track.reached}",
                   self._rows)
            return
        track.reached = k
        self._offer(worker, k, plan, note, bound, bound_note)

    def on_held(self, worker: "Worker", plan: object, note: str, bound: object,
                bound_note: str) -> None:
        self._offer(worker, self._tracks[worker.run.name].reached + 1, plan, note, bound,
                    bound_note)

    def _offer(self, worker: "Worker", k: int, plan: object, note: str, bound: object,
               bound_note: str) -> bool:
        """A plan (verified now, compared at the point) and a bound handed over for point ``k``.
        False when the plan was refused: the backend is then rejected, at that point."""
        run = worker.run
        if plan is not None:
            refused, ev = self._answers.verify(plan)
            if refused:
                refuse(worker, refused, self._rows)
                return False
            sol = np.array(plan, dtype=np.int64)
            self._answers.record(run, sol, ev, note or f"point {k}")
            self._offers.setdefault(k, {}).setdefault(run.name, []).append((sol, ev, note))
            if self._loose_best is None or ev.cost < self._loose_best[1].cost:
                self._loose_best = (sol, ev, run.name)
        if bound is not None:
            self._claim_at(k, run.name, BOUND, bound, bound_note)
        return True

    def _claim_at(self, k: int, name: str, kind: str, value: object, note: str = "") -> None:
        self._point_claims.setdefault(k, {}).setdefault(name, []).append((kind, value, note))

    def on_result(self, worker: "Worker", result: validate.Result) -> None:
        """A final result: its plan and claims count at the point after the last one passed."""
        run, track = worker.run, self._tracks[worker.run.name]
        end = track.reached + 1
        cost = None
        if result.solution is not None:
            if not self._offer(worker, end, result.solution, "final", None, ""):
                self.ended(worker.run.name, end)
                return
            cost = self._offers[end][run.name][-1][1].cost
        self._rows.reported(run, result)   # its status, and whether its safety net stopped it
        if result.status is Status.OPTIMAL:
            self._claim_at(end, run.name, OPTIMAL, cost)
        if result.lower_bound is not None:
            self._claim_at(end, run.name, LOWER_BOUND, result.lower_bound)
        if result.status is Status.INFEASIBLE_PROVEN:
            self._claim_at(end, run.name, INFEASIBLE, None)
        self.ended(run.name, end)

    def ended(self, name: str, end: Optional[int] = None) -> None:
        """Backend ``name``'s final word came (a result, or an error): it counts at point ``end``
        (default: the one after the last it passed)."""
        track = self._tracks[name]
        track.ended, track.end_point = True, track.reached + 1 if end is None else end
        # Only for the run's word on itself, never for a decision: a backend that returned at the
        # deadline it was given may have been stopped by the clock rather than by its work.
        track.late = time.monotonic() >= self._clock.soft_deadline

    def gone(self, worker: "Worker") -> None:
        """The worker's process ended (see :meth:`.supervise.Supervisor.finish`): without its
        final word and before the run's end, it is dropped (the run is then not deterministic)."""
        track = self._tracks.get(worker.run.name)
        if track is None or track.ended or worker.run.status is Status.REJECTED:
            return
        track.dropped = "stopped with the run" if self._closing else (worker.run.note or "died")
        track.dropped_at = self._settled

    # ---------------------------------------------------------------- settling
    def _blocks(self, name: str, k: int) -> bool:
        """Whether backend ``name`` holds point ``k`` up: it has neither reached nor ended."""
        track = self._tracks[name]
        if track.ended or track.dropped is not None:
            return False
        if self._rows[name].status in (Status.UNSUPPORTED, Status.REJECTED):
            return False   # not available here (never started), or refused
        return track.reached < k

    def _horizon(self) -> int:
        """The last point any backend reached or ends at."""
        return max([max(t.reached, t.end_point or 0) for t in self._tracks.values()], default=0)

    def settle(self, stop_reason: Callable[[], Optional[str]], presolving: bool) -> None:
        """Settle every point that can be settled now, in order (none while presolve runs,
        ``presolving``); stop at an early stop (``stop_reason()``, asked after each point)."""
        if self._halted is not None or self._closing or presolving:
            return
        while True:
            k = self._settled + 1
            if k > self._horizon() or any(self._blocks(name, k) for name in self._tracks):
                return
            self._settle(k)
            reason = stop_reason()
            if reason:
                self._halted = reason
                return

    def reached(self, name: str) -> int:
        """The last exchange point run ``name`` handed over."""
        return self._tracks[name].reached

    def _settle(self, k: int) -> None:
        changed = False
        for name in sorted(self._offers.get(k, {})):
            reads = bool(self._by_name[self._rows[name].backend].capabilities.warm_start)
            for sol, ev, _ in self._offers[k][name]:
                before = self._answers.standing()
                changed = self._answers.take(sol, ev, name) or changed
                self._focus.posted(name, sol, ev.cost, before, reads)   # its credit, in order
        if changed:
            self._shared.publish(self._answers.best)
            self._answers.check_claims()
        # the adaptive rule's totals, decided from settled facts, before any worker may see k
        totals = self._focus.at_point(k, lambda name: self._tracks[name].reached >= k)
        if totals is not None:
            self._work_of = totals
        self._shared.settled.value = k   # after the plan: a worker that sees k reads k's incumbent
        self._settled = k
        for name in sorted(self._point_claims.get(k, {})):
            run = self._rows[name]
            exact = bool(self._by_name[run.backend].capabilities.exact)
            for kind, value, note in self._point_claims[k][name]:
                if kind == BOUND:
                    self._answers.in_run_bound(run, value, note, exact)
                elif run.disqualified:
                    continue
                elif kind == OPTIMAL:
                    self._rows.claims_optimal(run, value)
                    self._answers.claim(run, OPTIMAL, value, exact)
                elif kind == LOWER_BOUND:
                    self._rows.claims_bound(run, value)
                    self._answers.claim(run, LOWER_BOUND, value, exact)
                else:
                    self._answers.claim(run, INFEASIBLE, None, exact)
        self._offers.pop(k, None)
        self._point_claims.pop(k, None)

    # ---------------------------------------------------------------- the run's word on itself
    def points_expected(self) -> int:
        """The points of a run whose backends spend their whole share: every ``EXCHANGE_UNITS``,
        and the one at which their final results count."""
        return max(self._work_of.values(), default=0) // EXCHANGE_UNITS + 1

    def summary(self, interrupted: Optional[str], warm: Optional["WarmStart"],
                stopped_early: Optional[str]) -> dict:
        """Whether the answer is the deterministic one, and why not (``interrupted``: the signal,
        or the caller's callback error, that ended the run; ``warm``: the warm start, whose repair may have been cut short;
        ``stopped_early``: the run's early stop); the loose best plan becomes the answer when the
        run could not finish its work (it is the best verified plan)."""
        k, total = self._settled, self.points_expected()
        dropped = sorted((t.dropped_at, name, t.dropped) for name, t in self._tracks.items()
                         if t.dropped is not None and t.dropped != "stopped with the run")
        late = sorted((t.end_point or 0, name) for name, t in self._tracks.items() if t.late)
        finished = all(not self._blocks(name, self._horizon() + 1) and t.dropped is None
                       for name, t in self._tracks.items()) and k >= self._horizon()
        reason = None
        if interrupted:
            reason = f"interrupted ({interrupted}) at exchange point {k} of {total}"
        elif warm is not None and warm.cut is not None:
            reason = (f"the warm start's repair did not finish by the backends' deadline "
                      f"({warm.cut:.1f} s); exchange point {k} of {total}")
        elif dropped:
            at, name, why = dropped[0]
            reason = (f"{name} ended without its final word at exchange point {at}: "
                      f"{validate.note_text(why)[:120]}")
        elif (clocked := sorted(n for n in self._rows if self._rows[n].safety_net)):
            reason = (f"{clocked[0]} stopped on its wall-clock safety net before its work was "
                      f"done (exchange point {k} of {total})")
        elif self._halted is None and stopped_early is None and (late or not finished):
            reason = f"wall-clock limit fired at exchange point {k} of {total}" + (
                f": {late[0][1]} returned at the backends' deadline, at its point {late[0][0]}"
                if late else "")
        if reason is not None and self._loose_best is not None:
            self._answers.take(*self._loose_best)
        return {"requested": True, "complete": reason is None, "reason": reason,
                "work": self._options.work_budget, "work_per_backend": dict(sorted(self._work_of.items())),
                "exchange": EXCHANGE_UNITS, "points": k, "left_out": list(self._left_out),
                **self._identity()}

    def _identity(self) -> dict:
        """What decides the plan besides the problem, and its digest (the same problem and the
        same ``identity`` give the same plan): :func:`portfolio.identity.plan_identity`."""
        return plan_identity(self._options, list(self._by_name.values()), self._option_values)
