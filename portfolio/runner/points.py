"""Deterministic mode, worker side: the ``report`` and ``report.work`` of a backend that counts work.

Why a reporter of its own: in this mode the portfolio may only exchange plans at fixed points of
each backend's work count (:mod:`portfolio.work`), never when a plan happens to arrive. So
``report(plan)`` and ``report.bound(value)`` only remember; at exchange point k, ``spend`` hands the
parent what was remembered since the last point (``("point", k, plan, note, bound, bound_note)``,
None for nothing new) and goes on; the next ``report.best()`` waits until the parent has settled
point k (the settled-point counter of :class:`~.worker.SharedBest`) and returns that point's
incumbent. Why the wait is in ``best`` and not in ``spend``: a backend whose steps are long (a
toulbar2 solve passes several points at once) pays for a step before running it and reads the
incumbent after it; meanwhile the others go on through those points instead of waiting for it.
When ``solve`` ends, what is still remembered goes first, as ``("held", plan, note, bound,
bound_note)``, so that it counts at the backend's last point with its final result. The count
itself is :class:`~portfolio.work.CountingWork` (the spend loop every ``report.work`` shares),
which calls :meth:`PointReporter.exchange_point` at each point. The parent's side is
:mod:`.exchange`. With the adaptive rule on, the work a backend may spend can move at the rule's
points (:class:`WorkBoard`): the new total is read in ``best``, once the point it belongs to is
settled, so a backend that never reads the incumbent keeps the work it was given.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Optional

import numpy as np

from ..work import CountingWork
from .worker import PipeReporter, PlanMapping, SharedBest, plain_bound, plain_plan, to_hint

WAIT_FIRST, WAIT_MOST = 0.0005, 0.01
"""Seconds between two looks at the settled-point counter while waiting (doubling up to the most):
waiting costs no CPU and only the wait's length, never its outcome, depends on the clock."""


class WorkBoard:
    """Deterministic mode's work totals as the adaptive rule (:mod:`.focus`) decides them: row
    ``a`` holds every run's total decided at exchange point ``a * period``, one column per run
    (its slot). The parent writes a row before it marks that point settled; a worker reads the row
    of the last decision at or before the point it passed, and only after waiting for that point
    to be settled (:meth:`PointReporter.best`): the same row, hence the same total, in every run.
    A zero means no decision (the total stays)."""

    def __init__(self, ctx: object, runs: int, rows: int, period: int) -> None:
        self.runs, self.rows, self.period = max(1, runs), max(1, rows), max(1, period)
        self._totals = ctx.RawArray("q", self.runs * self.rows)

    def write(self, row: int, totals: list[int]) -> None:
        """Row ``row``'s totals, one per slot (parent side)."""
        if 0 <= row < self.rows:
            for slot, total in enumerate(totals[: self.runs]):
                self._totals[row * self.runs + slot] = int(total)

    def total_at(self, point: int, slot: int) -> int:
        """The total decided last at or before exchange point ``point`` for ``slot`` (0: none)."""
        row = min(point // self.period, self.rows - 1)
        if row < 1 or not 0 <= slot < self.runs:
            return 0
        return int(self._totals[row * self.runs + slot])


class PointReporter(PipeReporter):
    """The ``report`` of a deterministic backend's worker (see the module).

    ``board`` carries the settled-point counter (every deterministic worker has it); ``shared``, the
    incumbent, only for a backend declaring ``warm_start``, as in a timed run. No price board: prices
    arriving when another backend happens to read would make the run depend on timing, so this
    reporter is built without one and :class:`PipeReporter`'s price methods share nothing (the one
    place that decides it; the runner makes no board for a deterministic run either)."""

    def __init__(self, conn: Connection, t0: float, board: SharedBest, shared: Optional[SharedBest],
                 mapping: Optional[PlanMapping], total: int,
                 work_board: Optional[WorkBoard] = None, slot: int = 0) -> None:
        super().__init__(conn, t0, shared, mapping)
        self.board = board
        self.work_board, self.slot = work_board, slot   # the adaptive rule's totals (.focus)
        self.points = 0
        self.held: Optional[tuple[np.ndarray, str]] = None
        self.held_bound: Optional[tuple[object, str]] = None
        self.work = CountingWork(total, on_exchange=self.exchange_point)   # the one spend loop
        self.stale = False
        self.latest_best = self._read_best()  # point 0: the warm start, or None

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        arr = solution if isinstance(solution, np.ndarray) else np.asarray(solution)
        with self.lock:
            self.held = (arr.copy(), str(note))

    def bound(self, value: object, note: str = "") -> None:
        if value is None:
            return
        with self.lock:
            self.held_bound = (plain_bound(value), str(note))

    def best(self) -> Optional[np.ndarray]:
        """The incumbent of the last point this backend passed (the warm start before the first):
        waits until the parent has settled that point."""
        if self.stale:
            pause = WAIT_FIRST
            while self.board.settled.value < self.points and not self.closed:
                time.sleep(pause)
                pause = min(WAIT_MOST, 2 * pause)
            self.latest_best = self._read_best()
            self.stale = False
            if self.work_board is not None:   # the point is settled: its decision is final
                total = self.work_board.total_at(self.points, self.slot)
                if total > 0:
                    self.work.total = max(self.work.spent(), total)
        return self.latest_best

    def _read_best(self) -> Optional[np.ndarray]:
        if self.shared is None:
            return None
        self.seen, plan = self.shared.read(self.seen)
        return self.latest_best if plan is None else to_hint(self.mapping, plan)

    def _take_held(self) -> tuple:
        """What was remembered since the last point, as plain data (None for nothing new)."""
        plan = note = bound = bound_note = None
        if self.held is not None:
            raw, note = self.held
            plan = plain_plan(raw, self.mapping)
        if self.held_bound is not None:
            bound, bound_note = self.held_bound
        self.held = self.held_bound = None
        return plan, note or "", bound, bound_note or ""

    def exchange_point(self, k: int) -> None:
        """Point ``k``: hand over what was remembered; :meth:`best` waits for the point's incumbent."""
        with self.lock:
            message = ("point", k, *self._take_held())
            if self.closed:
                return
            self.conn.send(message)
        self.points = k
        self.stale = True

    def send(self, message: tuple, final: bool = True) -> None:
        """A final message (``done``, ``error``) goes after what is still remembered (``held``)."""
        if final:
            with self.lock:
                held = self._take_held()
                if not self.closed and (held[0] is not None or held[2] is not None):
                    self.conn.send(("held", *held))
        super().send(message, final)
