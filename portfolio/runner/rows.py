"""The rows of a run (one :class:`~.result.BackendRun` per backend run) and the one part that writes
them: :class:`Rows`, whose named transitions are every change a row goes through.

Why one writer: a row's status is a small state machine (pending, running, a final word, a claim
found false, killed at the deadline...) whose rules used to be spread over six parts, each
assigning fields. Here every part asks for a transition by name (``started``, ``reported``,
``claimed``, ``claim_false``, ``killed``...), so the next rule about a row's status is written in
one place (issue 47; ``tests/test_runner_parts.py`` checks that no other runner module assigns a
row's field). Rows added from outside the runner (a cluster driver's shard rows, see
:mod:`portfolio.distributed.driver`) live in the same table and take the same transitions when a
part of the run deals with them.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Iterator, Optional

import numpy as np

from ..backend import Status
from .claims import Claim
from .result import BackendRun, BoundPoint, Incumbent

if TYPE_CHECKING:
    from .deadlines import Clock
    from .validate import Result


class Rows:
    """The run's rows, name -> :class:`~.result.BackendRun` (``table``: the dict itself, which
    the result and the caller's hooks read), and their one writer. Every time it writes is the
    run's clock (``clock``), rounded to 0.1 ms."""

    def __init__(self, clock: "Clock") -> None:
        self._clock = clock
        self._table: dict[str, BackendRun] = {}

    # ---------------------------------------------------------------- reading
    @property
    def table(self) -> dict[str, BackendRun]:
        """The rows by name (the dict the result hands back; a cluster driver adds shard rows)."""
        return self._table

    def __getitem__(self, name: str) -> BackendRun:
        return self._table[name]

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def get(self, name: str) -> Optional[BackendRun]:
        return self._table.get(name)

    def values(self) -> list[BackendRun]:
        return list(self._table.values())

    def _now(self) -> float:
        return round(self._clock.now(), 4)

    # ---------------------------------------------------------------- new rows
    def add(self, name: str, backend: str = "", seed: int = 0, cores: int = 1,
            note: str = "") -> BackendRun:
        """A new row, pending (a backend of the run, or an extra seed copy of one)."""
        run = BackendRun(name, backend=backend, seed=seed, cores=cores, note=note)
        self._table[name] = run
        return run

    # ---------------------------------------------------------------- before and at the start
    def waiting(self, run: BackendRun, why: str) -> None:
        """Not started yet (or set up and waiting for its problem): why."""
        run.note = why

    def unavailable(self, run: BackendRun, reason: str) -> None:
        run.status, run.note = Status.UNSUPPORTED, f"not available: {reason}"

    def started(self, run: BackendRun, note: Optional[str], preparing: bool,
                searching: bool) -> None:
        """Its worker was forked: running, in ``prepare`` (``preparing``) or solving; searching
        from now when it solves at once (``searching``); ``note`` replaces the row's (None: kept)."""
        if note is not None:
            run.note = note
        run.status, run.started = Status.RUNNING, self._now()
        run.phase = "prepare" if preparing else "solve"
        if searching:
            run.searching = run.started

    def prepared(self, run: BackendRun, seconds: float, early: bool,
                 failure: Optional[tuple[str, str]]) -> None:
        """Its set-up ended after ``seconds``: an early one waits for its problem (``ready``), the
        others search from now; ``failure``: (last line, traceback) of a ``prepare`` that raised."""
        run.prepare_seconds = round(seconds, 3)
        if early:
            run.phase = "ready"
        else:
            run.phase, run.searching = "solve", self._now()
        if failure:
            run.note, run.traceback = f"prepare failed: {failure[0]}", failure[1]

    def released(self, run: BackendRun, note: str) -> None:
        """An early set-up got its problem: it searches from now."""
        run.phase, run.note = "solve", note
        run.searching = self._now()

    def never_released(self, run: BackendRun) -> None:
        """Set up early, but the run ended before its wait was over: it never started."""
        run.status = Status.PENDING
        run.note = (f"set up, but the run ended before its wait was over "
                    f"({run.note.removeprefix('set up; ') or 'waiting'})")

    def settled_first(self, reason: str) -> None:
        """The runner settled the instance before any backend started."""
        for run in self._table.values():
            run.note = f"the runner settled the instance first: {reason}"

    def never_started(self) -> None:
        """At the run's end: each row still pending says why it never started."""
        for run in self._table.values():
            if run.status is Status.PENDING:
                why = run.note or "the time was up before it could start"
                run.note = f"never started: {why}"

    # ---------------------------------------------------------------- during the run
    def cpu(self, run: BackendRun, seconds: float) -> None:
        run.cpu_seconds = round(seconds, 3)

    def demand(self, run: BackendRun, level: str, why: str) -> None:
        run.demand, run.demand_note = level, why

    def improved(self, run: BackendRun, plan: np.ndarray, cost: int, note: str) -> None:
        """A verified plan of ``run``'s: its best and its incumbents over time, when cheaper."""
        if run.best_cost is None or cost < run.best_cost:
            run.best_cost, run.best_solution = cost, plan
            run.time_to_best = self._now()
            run.incumbents.append(Incumbent(self._now(), cost, run.name, note))

    def dropped(self, run: BackendRun, what: str) -> None:
        """A malformed field it sent was dropped (the run goes on)."""
        run.note = f"dropped: {what}"

    def bound(self, run: BackendRun, value: int, note: str, implied: list[Claim]) -> None:
        """An improving in-run bound, with its time; the ``implied`` claims it replaces leave."""
        run.claims = [c for c in run.claims if c not in implied]
        run.bounds.append(BoundPoint(self._now(), value, run.name, note))
        run.lower_bound = max(value, run.lower_bound if run.lower_bound is not None else value)

    def claimed(self, run: BackendRun, claim: Claim) -> None:
        run.claims.append(claim)

    def claims_optimal(self, run: BackendRun, cost: Optional[int]) -> None:
        """It claims a plan of ``cost`` optimal (None: an outside claim, whose bound is the
        claims book's)."""
        run.claimed_optimal = True
        if cost is not None:
            run.lower_bound = cost

    def claims_bound(self, run: BackendRun, value: int) -> None:
        run.lower_bound = max(value, run.lower_bound or value)

    def claim_false(self, run: BackendRun, claim: Claim) -> None:
        """A verified plan contradicts ``claim`` of ``run``'s: the row says so (the earlier false
        claims with it), an optimal or infeasible status drops, its bound is what still stands."""
        earlier = run.note
        if earlier.startswith("false claim"):
            earlier = earlier.split(" || ", 1)[1] if " || " in earlier else ""
        false = ", ".join(c.what() for c in run.claims if c.false)
        run.note = f"false claim: {false}; {claim.why_false}" + (f" || {earlier}" if earlier else "")
        if run.status is Status.OPTIMAL:
            run.status = Status.FEASIBLE if run.best_cost is not None else Status.NO_SOLUTION
        elif run.status is Status.INFEASIBLE_PROVEN:
            run.status = Status.NO_SOLUTION
        run.claimed_optimal = False
        standing = [c.value for c in run.claims if not c.false and c.value is not None]
        run.lower_bound = max(standing) if standing else None

    # ---------------------------------------------------------------- the end of a row
    def reported(self, run: BackendRun, result: "Result") -> None:
        """Its final result reached the row (timed and deterministic runs alike): when, its note
        (the backend's own, else the runner's) with every part the validator dropped, its status,
        and whether its wall-clock safety net stopped it before its work was done."""
        run.finished = self._now()
        notes = ([result.note] if result.note else ([run.note] if run.note else [])) + [
            f"dropped: {p}" for p in result.problems]
        run.note = "; ".join(notes)
        run.status, run.safety_net = result.status, result.safety_net

    def errored(self, run: BackendRun, line: str, traceback: str) -> None:
        """Its backend raised in ``solve``: the last line in the note, the whole traceback kept."""
        run.status, run.note = Status.ERROR, f"exception: {line}"
        run.traceback = traceback
        run.finished = self._now()

    def rejected(self, run: BackendRun, reason: str) -> None:
        """It sent something false or malformed; plans it reported before were verified and stay
        eligible."""
        run.status, run.note = Status.REJECTED, reason
        run.finished = run.finished if run.finished is not None else self._now()

    def exited(self, run: BackendRun, exitcode: Optional[int]) -> None:
        """Its worker's process ended: its exit code; still running means it died without a final
        word (by a signal, or an exit), said with where (``prepare`` or not)."""
        run.exitcode = exitcode
        if run.finished is None:
            run.finished = self._now()
        if run.status is not Status.RUNNING:
            return
        run.status = Status.CRASHED
        where = " in prepare()" if run.phase == "prepare" else ""
        if exitcode is not None and exitcode < 0:
            try:
                run.note = f"worker died{where} by signal {signal.Signals(-exitcode).name}"
            except ValueError:
                run.note = f"worker died{where} by signal {-exitcode}"
        else:
            run.note = f"worker exited{where} with code {exitcode} without a result"

    def killed(self, run: BackendRun, status: Status, note: str) -> None:
        """Ended from outside (the deadline, the memory cap, the run's end): a row that was still
        going, or whose death was not yet explained, gets ``status`` and ``note``."""
        if run.status in (Status.RUNNING, Status.CRASHED):
            run.status, run.note = status, note
