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
:meth:`Exchange._deterministic_summary` says it is not the deterministic answer.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from ..backend import (DISTRIBUTION, BackendLike, Status, declared, distribution_version,
                       engine_versions)
from ..backend_options import plan_relevant
from ..evaluate import Evaluation
from ..work import EXCHANGE_UNITS
from . import validate
from .claims import INFEASIBLE, LOWER_BOUND, OPTIMAL

if TYPE_CHECKING:
    from .supervise import _Worker

BOUND = "bound"
"""A bound handed over at a point (``report.bound``), applied like a bound sent in a timed run."""

MIN_SHARE = 0.01
"""The least ``work_share`` a backend gets (a zero or negative one would leave it no work)."""


def deterministic_split(backends: Sequence[BackendLike]) -> tuple[list[BackendLike], list[str]]:
    """(the backends that declare ``meta.deterministic``, the names of the others): the one rule
    the CLI, the API and the runner apply to choose a deterministic run's backends."""
    kept = [b for b in backends if declared(b)[0].deterministic]
    return kept, [b.name for b in backends if not declared(b)[0].deterministic]


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
    """Mixin of :class:`.core.Portfolio`: the rules above.

    Uses ``options``, ``runs``, ``by_name``, ``best``/``best_eval``/``best_backend``, ``shared``,
    ``presolve_job``, ``interrupted``, ``warm`` (a warm start's repair cut short), the
    verification of :class:`.answers.Answers` and ``_stop_reason`` of :class:`.stopping.StopRules`."""

    def _init_exchange(self, left_out: list[str]) -> None:
        shares = {name: max(MIN_SHARE, float(declared(self.by_name[run.backend])[0].work_share))
                  for name, run in self.runs.items()}
        whole = sum(shares.values()) or 1.0
        self.work_of = {name: max(1, int(self.options.work_budget * share / whole))
                        for name, share in shares.items()}
        self.left_out = left_out
        self.tracks = {name: _Track() for name in self.runs}
        self.offers: dict[int, dict[str, list[tuple[np.ndarray, Evaluation, str]]]] = {}
        self.point_claims: dict[int, dict[str, list[tuple[str, object, str]]]] = {}
        self.settled_point = 0
        self.halted: Optional[str] = None     # the early stop decided at a point
        self.closing = False                  # the run is ending: kills from now on are not drops
        self.loose_best: Optional[tuple[np.ndarray, Evaluation, str]] = None  # best received

    # ---------------------------------------------------------------- messages
    def _on_point(self, worker: "_Worker", k: int, plan: object, note: str, bound: object,
                  bound_note: str) -> None:
        track = self.tracks[worker.run.name]
        if k != track.reached + 1:
            self._kill(worker)
            self._reject(worker.run, f"malformed message: exchange point {k} after point "
                                     f"{track.reached}")
            return
        track.reached = k
        self._offer(worker, k, plan, note, bound, bound_note)

    def _on_held(self, worker: "_Worker", plan: object, note: str, bound: object,
                 bound_note: str) -> None:
        self._offer(worker, self.tracks[worker.run.name].reached + 1, plan, note, bound, bound_note)

    def _offer(self, worker: "_Worker", k: int, plan: object, note: str, bound: object,
               bound_note: str) -> bool:
        """A plan (verified now, compared at the point) and a bound handed over for point ``k``.
        False when the plan was refused: the backend is then rejected, at that point."""
        run = worker.run
        if plan is not None:
            refused, ev = self._verify(plan)
            if refused:
                self._kill(worker)
                self._reject(run, refused)
                return False
            sol = np.array(plan, dtype=np.int64)
            self._record(run, sol, ev, note or f"point {k}")
            self.offers.setdefault(k, {}).setdefault(run.name, []).append((sol, ev, note))
            if self.loose_best is None or ev.cost < self.loose_best[1].cost:
                self.loose_best = (sol, ev, run.name)
        if bound is not None:
            self._claim_at(k, run.name, BOUND, bound, bound_note)
        return True

    def _claim_at(self, k: int, name: str, kind: str, value: object, note: str = "") -> None:
        self.point_claims.setdefault(k, {}).setdefault(name, []).append((kind, value, note))

    def _det_result(self, worker: "_Worker", result: validate.Result) -> None:
        """A final result: its plan and claims count at the point after the last one passed."""
        run, track = worker.run, self.tracks[worker.run.name]
        end = track.reached + 1
        run.finished = round(self.now(), 4)
        notes = ([result.note] if result.note else ([run.note] if run.note else [])) + [
            f"dropped: {p}" for p in result.problems]
        run.note = "; ".join(notes)
        cost = None
        if result.solution is not None:
            if not self._offer(worker, end, result.solution, "final", None, ""):
                self._det_end(worker.run.name, end)
                return
            cost = self.offers[end][run.name][-1][1].cost
        run.status = result.status
        if result.status is Status.OPTIMAL:
            self._claim_at(end, run.name, OPTIMAL, cost)
        if result.lower_bound is not None:
            self._claim_at(end, run.name, LOWER_BOUND, result.lower_bound)
        if result.status is Status.INFEASIBLE_PROVEN:
            self._claim_at(end, run.name, INFEASIBLE, None)
        self._det_end(run.name, end)

    def _det_end(self, name: str, end: Optional[int] = None) -> None:
        track = self.tracks[name]
        track.ended, track.end_point = True, track.reached + 1 if end is None else end
        # Only for the run's word on itself, never for a decision: a backend that returned at the
        # deadline it was given may have been stopped by the clock rather than by its work.
        track.late = time.monotonic() >= self.soft_deadline

    def _det_gone(self, worker: "_Worker") -> None:
        """The worker's process ended (see :meth:`.supervise.Supervision._finish`): without its
        final word and before the run's end, it is dropped (the run is then not deterministic)."""
        track = self.tracks.get(worker.run.name)
        if track is None or track.ended or worker.run.status is Status.REJECTED:
            return
        track.dropped = "stopped with the run" if self.closing else (worker.run.note or "died")
        track.dropped_at = self.settled_point

    # ---------------------------------------------------------------- settling
    def _blocks(self, name: str, k: int) -> bool:
        """Whether backend ``name`` holds point ``k`` up: it has neither reached nor ended."""
        track = self.tracks[name]
        if track.ended or track.dropped is not None:
            return False
        if self.runs[name].status in (Status.UNSUPPORTED, Status.REJECTED):
            return False   # not available here (never started), or refused
        return track.reached < k

    def _horizon(self) -> int:
        """The last point any backend reached or ends at."""
        return max([max(t.reached, t.end_point or 0) for t in self.tracks.values()], default=0)

    def _settle_points(self) -> None:
        """Settle every point that can be settled now, in order; stop at an early stop."""
        if self.halted is not None or self.closing or self.presolve_job is not None:
            return
        while True:
            k = self.settled_point + 1
            if k > self._horizon() or any(self._blocks(name, k) for name in self.tracks):
                return
            self._settle(k)
            reason = self._stop_reason()
            if reason:
                self.halted = reason
                return

    def _settle(self, k: int) -> None:
        changed = False
        for name in sorted(self.offers.get(k, {})):
            for sol, ev, _ in self.offers[k][name]:
                if self.best_eval is None or ev.cost < self.best_eval.cost:
                    self.best, self.best_eval, self.best_backend = sol, ev, name
                    changed = True
        if changed:
            self.shared.publish(self.best)
            self._check_claims()
        self.shared.settled.value = k   # after the plan: a worker that sees k reads k's incumbent
        self.settled_point = k
        for name in sorted(self.point_claims.get(k, {})):
            run = self.runs[name]
            exact = bool(self.by_name[run.backend].capabilities.exact)
            for kind, value, note in self.point_claims[k][name]:
                if kind == BOUND:
                    self._in_run_bound(run, value, note, exact)
                elif run.disqualified:
                    continue
                elif kind == OPTIMAL:
                    run.claimed_optimal, run.lower_bound = True, value
                    self._claim(run, OPTIMAL, value, exact)
                elif kind == LOWER_BOUND:
                    run.lower_bound = max(value, run.lower_bound or value)
                    self._claim(run, LOWER_BOUND, value, exact)
                else:
                    self._claim(run, INFEASIBLE, None, exact)
        self.offers.pop(k, None)
        self.point_claims.pop(k, None)

    # ---------------------------------------------------------------- the run's word on itself
    def points_expected(self) -> int:
        """The points of a run whose backends spend their whole share: every ``EXCHANGE_UNITS``,
        and the one at which their final results count."""
        return max(self.work_of.values(), default=0) // EXCHANGE_UNITS + 1

    def _deterministic_summary(self) -> dict:
        """Whether the answer is the deterministic one, and why not; the loose best plan becomes
        the answer when the run could not finish its work (it is the best verified plan)."""
        k, total = self.settled_point, self.points_expected()
        dropped = sorted((t.dropped_at, name, t.dropped) for name, t in self.tracks.items()
                         if t.dropped is not None and t.dropped != "stopped with the run")
        late = sorted((t.end_point or 0, name) for name, t in self.tracks.items() if t.late)
        finished = all(not self._blocks(name, self._horizon() + 1) and t.dropped is None
                       for name, t in self.tracks.items()) and k >= self._horizon()
        reason = None
        if self.interrupted:
            reason = f"interrupted ({self.interrupted}) at exchange point {k} of {total}"
        elif self.warm is not None and self.warm.cut is not None:
            reason = (f"the warm start's repair did not finish by the backends' deadline "
                      f"({self.warm.cut:.1f} s); exchange point {k} of {total}")
        elif dropped:
            at, name, why = dropped[0]
            reason = (f"{name} ended without its final word at exchange point {at}: "
                      f"{validate.note_text(why)[:120]}")
        elif (clocked := sorted(n for n, r in self.runs.items() if r.safety_net)):
            reason = (f"{clocked[0]} stopped on its wall-clock safety net before its work was "
                      f"done (exchange point {k} of {total})")
        elif self.halted is None and self.stopped_early is None and (late or not finished):
            reason = f"wall-clock limit fired at exchange point {k} of {total}" + (
                f": {late[0][1]} returned at the backends' deadline, at its point {late[0][0]}"
                if late else "")
        if reason is not None and self.loose_best is not None and (
                self.best_eval is None or self.loose_best[1].cost < self.best_eval.cost):
            self.best, self.best_eval, self.best_backend = self.loose_best
        return {"requested": True, "complete": reason is None, "reason": reason,
                "work": self.options.work_budget, "work_per_backend": dict(sorted(self.work_of.items())),
                "exchange": EXCHANGE_UNITS, "points": k, "left_out": list(self.left_out),
                **self._identity()}

    def _identity(self) -> dict:
        """What decides the plan besides the problem: seed, work, backends, the options that can
        change the plan, versions; and a digest of them (the same problem and the same
        ``identity`` give the same plan: docs/determinism.md)."""
        options = {b.name: plan_relevant(declared(b)[0].options, self.option_values[b.name])
                   for b in self.backends}
        versions = {"portfolio": distribution_version(DISTRIBUTION) or "",
                    **engine_versions(self.backends)}
        identity = {"seed": self.options.seed, "work": self.options.work_budget,
                    "backends": sorted(b.name for b in self.backends), "options": options,
                    "versions": versions}
        text = json.dumps(identity, sort_keys=True, default=str)
        return {"options": options, "identity": hashlib.sha256(text.encode()).hexdigest()[:16]}
