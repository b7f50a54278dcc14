"""Worker supervision: reading and checking what workers send, settling a worker that ended, killing
workers (and everything they started) at the deadline, on a memory cap or on a malformed message."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Optional

from ..backend import BackendLike, Status
from ..procstat import cpu_seconds
from . import contain, validate
from .result import BackendRun


@dataclass
class _Worker:
    run: BackendRun
    backend: BackendLike
    process: mp.process.BaseProcess
    conn: Connection
    key: Optional[str]
    done: bool = False
    solve_started: float = 0.0
    control: Optional[Connection] = None
    """An early set-up's go channel until the parent sent go (:mod:`.launch`)."""



class Supervision:
    """Mixin of :class:`.core.Portfolio`: the parent's side of the worker protocol.

    Uses ``active``, ``scheduler``, ``compiling``, ``memory_limit``, ``presolve_job``, ``adopting``,
    the verification methods of :class:`.answers.Answers` and ``_set_demand`` of
    :class:`.demotion.Demotion`."""

    # ---------------------------------------------------------------- messages
    def _receive(self, worker: _Worker) -> None:
        """Read everything a worker has sent so far; nothing it sends can raise out of here."""
        run = worker.run
        while not worker.done:
            try:
                if not worker.conn.poll():
                    return
                raw = worker.conn.recv()
            except (EOFError, OSError):
                self._finish(worker)
                return
            except Exception as exc:  # an unpicklable or garbled message
                self._kill(worker)
                self._reject(run, f"sent a message that could not be read: {type(exc).__name__}")
                return
            if run.disqualified:
                continue
            try:
                kind, fields = validate.message(raw)
                self._handle(worker, kind, fields)
            except validate.MessageError as exc:
                self._kill(worker)
                self._reject(run, f"malformed message: {exc}")

    def _handle(self, worker: _Worker, kind: str, fields: tuple) -> None:
        run = worker.run
        if kind == "prepared":
            run.prepare_seconds = round(fields[0], 3)
            if worker.control is not None:   # set up early: its problem comes with go
                run.phase = "ready"
            else:
                run.phase, run.searching = "solve", round(self.now(), 4)
                worker.solve_started = time.monotonic()
            if fields[1]:
                run.note, run.traceback = f"prepare failed: {fields[1][0]}", fields[1][1]
            self._release(worker)
        elif (kind in ("point", "held")) != bool(self.options.deterministic) and kind in (
                "point", "held", "incumbent", "bound"):
            mode = "deterministic" if self.options.deterministic else "timed"
            self._kill(worker)
            self._reject(run, f"malformed message: {kind} in a {mode} run")
        elif kind == "point":
            self._on_point(worker, *fields)
        elif kind == "held":
            self._on_held(worker, *fields)
        elif kind == "incumbent":
            refused, _ = self._consider(run, fields[1], fields[2])
            if refused:
                self._kill(worker)
                self._reject(run, refused)
        elif kind == "bound":
            self._in_run_bound(run, fields[1], fields[2], bool(worker.backend.capabilities.exact))
        elif kind == "demand":
            self._set_demand(worker, fields[0], fields[1])
        elif kind == "error":
            run.status, run.note = Status.ERROR, f"exception: {fields[0][0]}"
            run.traceback = fields[0][1]
            run.finished = round(self.now(), 4)
            if self.options.deterministic:
                self._det_end(run.name)
        else:
            try:
                result = validate.result_fields(fields[0])
            except validate.MessageError as exc:
                self._reject(run, str(exc))
                return
            if self.options.deterministic:
                self._det_result(worker, result)
            else:
                self._accept_result(worker, result)

    def _release(self, worker: _Worker) -> None:
        if worker.key is not None and self.compiling.get(worker.key) == worker.run.name:
            del self.compiling[worker.key]

    # ---------------------------------------------------------------- ending workers
    def _sample_cpu(self, worker: _Worker) -> None:
        cpu = cpu_seconds(worker.process.pid, children=True)   # what it started and reaped too
        if cpu is not None:
            worker.run.cpu_seconds = round(cpu, 3)

    def _finish(self, worker: _Worker) -> None:
        """A worker's process ended: collect its CPU time and exit code, settle its status."""
        worker.done = True
        self._sample_cpu(worker)  # a zombie's /proc entry still holds its final CPU times
        worker.process.join(timeout=1.0)
        self.scheduler.ended(worker.process.pid)
        self._release(worker)
        run = worker.run
        run.exitcode = worker.process.exitcode
        if run.finished is None:
            run.finished = round(self.now(), 4)
        if run.status is Status.RUNNING:
            code = run.exitcode
            run.status = Status.CRASHED
            where = " in prepare()" if run.phase == "prepare" else ""
            if code is not None and code < 0:
                try:
                    run.note = f"worker died{where} by signal {signal.Signals(-code).name}"
                except ValueError:
                    run.note = f"worker died{where} by signal {-code}"
            else:
                run.note = f"worker exited{where} with code {code} without a result"
        if self.options.deterministic:
            self._det_gone(worker)
        try:
            worker.conn.close()
        except OSError:
            pass
        # A worker that crashed could not end what it started: end it here.
        contain.sweep(contain.worker_token(os.getpid(), worker.process.pid))
        self._kill_adopted()

    def _kill_adopted(self) -> None:
        """Orphans of workers adopted by this process (the subreaper flag) end here."""
        if self.adopting:
            known = {w.process.pid for w in self.active} | self.spare_pids
            if self.presolve_job is not None:
                known.add(self.presolve_job.process.pid)
            contain.kill_adopted(known, self.run_ticks)

    def _kill_group(self, process: mp.process.BaseProcess) -> None:
        if process.is_alive():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                process.kill()
        process.join(timeout=2.0)

    def _kill(self, worker: _Worker) -> None:
        """SIGKILL the worker and everything it started: its process tree (frozen first, so nothing
        forks meanwhile), its process group, and any process still carrying its mark."""
        self._sample_cpu(worker)
        if worker.process.is_alive():
            contain.kill_tree(worker.process.pid)
        self._kill_group(worker.process)
        contain.sweep(contain.worker_token(os.getpid(), worker.process.pid))

    def _check_memory(self, live: list[_Worker]) -> None:
        """End a worker whose process tree uses more than the memory cap; the others go on."""
        limit = self.memory_limit
        if limit is None or time.monotonic() < self.next_memory_check:
            return
        self.next_memory_check = time.monotonic() + contain.MEMORY_POLL
        for worker in live:
            used = contain.tree_memory(worker.process.pid, limit)
            if used is None or used <= limit or worker.done:
                continue
            self._receive(worker)  # keep what it sent before
            if worker.done:
                continue
            self._kill(worker)
            self._end(worker, Status.ERROR, f"memory limit: used {contain.mib(used)}, more than "
                      f"the {contain.mib(limit)} a backend may use; ended")

    def _end(self, worker: _Worker, status: Status, note: str) -> None:
        """After its kill: keep what ``worker`` sent, close its books, and give a run that was
        still going (or whose death was not yet explained) ``status`` and ``note``."""
        self._receive(worker)
        if not worker.done:
            self._finish(worker)
        if worker.run.status in (Status.RUNNING, Status.CRASHED):
            worker.run.status, worker.run.note = status, note

    def _stop_all(self, note: str) -> None:
        """Collect what running workers sent, then terminate them with status TIMEOUT: every group
        is killed first and reaped after, so on a loaded machine the deaths overlap."""
        self.closing = True   # deterministic mode: no point is settled from here on
        self.scheduler.resume_all()
        for worker in self.active:
            if not worker.done:
                self._receive(worker)
        dying = [w for w in self.active if not w.done]
        phases = {id(w): w.run.phase for w in dying}
        for worker in dying:
            self._sample_cpu(worker)
            try:
                os.killpg(worker.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                worker.process.kill()
        for worker in dying:
            worker.process.join(timeout=2.0)
            why = (f"still in prepare() (set-up/compilation) when {note}"
                   if phases[id(worker)] == "prepare" else f"still running when {note}")
            self._end(worker, Status.TIMEOUT, why)

