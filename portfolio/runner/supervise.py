"""Worker supervision: reading and checking what workers send, settling a worker that ended, killing
workers (and everything they started) at the deadline, on a memory cap or on a malformed message.

The workers themselves are the event loop's (:class:`.crew.Crew`); the :class:`Supervisor` is the
parent's side of the worker protocol and hands what a message means to the part it concerns: a plan
or a bound to :class:`.answers.Answers`, a demand to :class:`.demotion.Demotion`, an exchange point
to :class:`.exchange.Exchange`."""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING, Optional

from ..backend import Status
from . import contain, validate
from .crew import Worker, kill, refuse, sample_cpu

if TYPE_CHECKING:
    from .answers import Answers
    from .context import RunContext
    from .demotion import Demotion
    from .exchange import Exchange
    from .focus import Focus
    from .presolving import Presolve


class Supervisor:
    """The parent's side of the worker protocol.

    Owns its next check of the memory cap, the adoption of orphans (whether this process adopts
    them, since when) and the children it must not end (``spare``). Reads the workers (the
    context's ``crew``), lowers and resumes them through its ``scheduler``, ends their rows through
    its ``rows``; a verified plan, a bound or a final result goes to ``answers``, a demand to
    ``demotion``, an exchange point to ``exchange`` (deterministic mode only); ``focus`` is told
    of each verified plan of a timed run with the incumbent it arrived on (the adaptive rule's
    credit) and, in deterministic mode, of each demand with the point it follows; ``presolve``
    is asked for its child's pid (an orphan sweep spares it)."""

    def __init__(self, context: "RunContext", answers: "Answers", demotion: "Demotion",
                 exchange: Optional["Exchange"], presolve: "Presolve", focus: "Focus") -> None:
        self._crew, self._scheduler, self._rows = context.crew, context.scheduler, context.rows
        self._clock, self._options = context.clock, context.options
        self._answers, self._demotion, self._exchange, self._presolve = (answers, demotion,
                                                                         exchange, presolve)
        self._focus = focus
        self._memory_limit = context.memory_limit
        self._next_memory_check = 0.0
        self._adopting, self._was_subreaper, self._run_ticks = False, False, 0
        self._spare: set[int] = set()

    # ---------------------------------------------------------------- orphans
    def adopt(self) -> None:
        """Orphans of workers come to this process from now on, not to init, so that they can be
        ended too (the subreaper flag)."""
        self._run_ticks = contain.now_ticks()
        self._was_subreaper = contain.is_subreaper()
        self._adopting = self._was_subreaper or contain.set_subreaper(True)

    def stop_adopting(self) -> None:
        if self._adopting and not self._was_subreaper:
            contain.set_subreaper(False)

    def spare(self, pids: set[int]) -> None:
        """Children the runner must not end (a cluster's host)."""
        self._spare |= pids

    def kill_adopted(self) -> None:
        """Orphans of workers adopted by this process (the subreaper flag) end here."""
        if self._adopting:
            known = self._crew.pids() | self._spare
            if self._presolve.pid is not None:
                known.add(self._presolve.pid)
            contain.kill_adopted(known, self._run_ticks)

    # ---------------------------------------------------------------- messages
    def receive(self, worker: Worker) -> None:
        """Read everything a worker has sent so far; nothing it sends can raise out of here."""
        run = worker.run
        while not worker.done:
            try:
                if not worker.conn.poll():
                    return
                raw = worker.conn.recv()
            except (EOFError, OSError):
                self.finish(worker)
                return
            except Exception as exc:  # an unpicklable or garbled message
                refuse(worker, f"sent a message that could not be read: {type(exc).__name__}",
                       self._rows)
                return
            if run.disqualified:
                continue
            try:
                kind, fields = validate.message(raw)
                self._handle(worker, kind, fields)
            except validate.MessageError as exc:
                refuse(worker, f"malformed message: {exc}", self._rows)

    def _handle(self, worker: Worker, kind: str, fields: tuple) -> None:
        run = worker.run
        if kind == "prepared":
            early = worker.control is not None   # set up early: its problem comes with go
            self._rows.prepared(run, fields[0], early, fields[1])
            if not early:
                worker.solve_started = time.monotonic()
            self._crew.release(worker)
        elif (kind in ("point", "held")) != bool(self._options.deterministic) and kind in (
                "point", "held", "incumbent", "bound"):
            mode = "deterministic" if self._options.deterministic else "timed"
            refuse(worker, f"malformed message: {kind} in a {mode} run", self._rows)
        elif kind == "point":
            self._exchange.on_point(worker, *fields)
        elif kind == "held":
            self._exchange.on_held(worker, *fields)
        elif kind == "incumbent":
            before = self._answers.standing()
            refused, ev = self._answers.consider(run, fields[1], fields[2])
            if refused:
                refuse(worker, refused, self._rows)
            else:
                self._focus.posted(worker, fields[1], ev.cost, before,
                                   bool(worker.backend.capabilities.warm_start))
        elif kind == "bound":
            self._answers.in_run_bound(run, fields[1], fields[2],
                                       bool(worker.backend.capabilities.exact))
        elif kind == "demand":
            self._demotion.set_demand(worker, fields[0], fields[1])
            if self._exchange is not None:   # sent after the last point it handed over
                self._focus.declared(run.name, fields[0], self._exchange.reached(run.name))
        elif kind == "error":
            self._rows.errored(run, *fields[0])
            if self._exchange is not None:
                self._exchange.ended(run.name)
        else:
            try:
                result = validate.result_fields(fields[0])
            except validate.MessageError as exc:
                self._rows.rejected(run, str(exc))
                return
            if self._exchange is not None:
                self._exchange.on_result(worker, result)
            else:
                self._answers.accept_result(run, bool(worker.backend.capabilities.exact), result)

    # ---------------------------------------------------------------- ending workers
    def finish(self, worker: Worker) -> None:
        """A worker's process ended: collect its CPU time and exit code, settle its status."""
        worker.done = True
        sample_cpu(worker, self._rows)  # a zombie's /proc entry still holds its final CPU times
        worker.process.join(timeout=1.0)
        self._scheduler.ended(worker.process.pid)
        self._crew.release(worker)
        self._rows.exited(worker.run, worker.process.exitcode)
        if self._exchange is not None:
            self._exchange.gone(worker)
        try:
            worker.conn.close()
        except OSError:
            pass
        # A worker that crashed could not end what it started: end it here.
        contain.sweep(contain.worker_token(os.getpid(), worker.process.pid))
        self.kill_adopted()

    def check_memory(self, live: list[Worker]) -> None:
        """End a worker whose process tree uses more than the memory cap; the others go on."""
        limit = self._memory_limit
        if limit is None or time.monotonic() < self._next_memory_check:
            return
        self._next_memory_check = time.monotonic() + contain.MEMORY_POLL
        for worker in live:
            used = contain.tree_memory(worker.process.pid, limit)
            if used is None or used <= limit or worker.done:
                continue
            self.receive(worker)  # keep what it sent before
            if worker.done:
                continue
            kill(worker, self._rows)
            self._end(worker, Status.ERROR, f"memory limit: used {contain.mib(used)}, more than "
                      f"the {contain.mib(limit)} a backend may use; ended")

    def _end(self, worker: Worker, status: Status, note: str) -> None:
        """After its kill: keep what ``worker`` sent, close its books, and give a run that was
        still going (or whose death was not yet explained) ``status`` and ``note``."""
        self.receive(worker)
        if not worker.done:
            self.finish(worker)
        self._rows.killed(worker.run, status, note)

    def stop_all(self, note: str) -> None:
        """Collect what running workers sent, then terminate them with status TIMEOUT: every group
        is killed first and reaped after, so on a loaded machine the deaths overlap."""
        if self._exchange is not None:   # no point is settled from here on
            self._exchange.close()
        self._scheduler.resume_all()
        for worker in self._crew:
            if not worker.done:
                self.receive(worker)
        dying = [w for w in self._crew if not w.done]
        phases = {id(w): w.run.phase for w in dying}
        for worker in dying:
            sample_cpu(worker, self._rows)
            try:
                os.killpg(worker.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                worker.process.kill()
        for worker in dying:
            worker.process.join(timeout=2.0)
            why = (f"still in prepare() (set-up/compilation) when {note}"
                   if phases[id(worker)] == "prepare" else f"still running when {note}")
            self._end(worker, Status.TIMEOUT, why)
