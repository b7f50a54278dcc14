"""Starting things: presolve in a child, workers when the start-order rule (:mod:`.order`) lets
them start, and extra seed copies of randomized backends on idle cores (which one: :mod:`.order`)."""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Optional

import numpy as np

from ..backend import BackendLike, Status
from ..registry import poll_available
from . import validate
from .points import PointReporter
from .order import WAIT_PRESOLVE, WAIT_SAFETY
from .presolving import PRESOLVE_SHARE, presolve_main
from .priceboard import MAX_WRITERS
from .result import BackendRun
from .supervise import _Worker
from .warmstart import starts_cold
from .worker import WorkerSpec, freeze, has_prepare, prepare_key, to_hint, worker_main


@dataclass
class _Presolve:
    process: mp.process.BaseProcess
    conn: Connection
    cutoff: float
    started: float


class Launching:
    """Mixin of :class:`.core.Portfolio`: presolve's life cycle and starting workers.

    Uses ``waiting``, ``runs``, ``compiling``, ``copies``, ``active``, ``presolve_job``, ``ctx``,
    ``scheduler``, the deadlines set in :class:`.core.Portfolio` and the start-order rule's
    ``_blocked`` and ``_extra_choice`` (:class:`.order.StartOrder`)."""

    # ---------------------------------------------------------------- starting workers
    def _start_presolve(self) -> None:
        parent, child = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=presolve_main, args=(self.problem, child),
                                   name="portfolio-presolve", daemon=False)
        process.start()
        child.close()
        left = max(0.0, self.soft_deadline - time.monotonic())
        # deterministic mode waits for presolve: only the safety net (the run's end) stops it
        cutoff = float("inf") if self.options.deterministic else time.monotonic() + PRESOLVE_SHARE * left
        self.presolve_job = _Presolve(process, parent, cutoff, self.now())

    def _launch_ready(self) -> None:
        # available() is plugin code in the parent: every check runs at once in a thread under the
        # registry's time limit (cached: the CLI asked already), and no worker is forked while one
        # may still finish (a fork during an import in another thread can deadlock the child).
        checking = [b for b in self.waiting if poll_available(b) is None]
        if checking:
            for backend in checking:
                self.runs[backend.name].note = "checking available()"
            return
        for backend in list(self.waiting):
            if time.monotonic() >= self.soft_deadline:
                return
            run = self.runs[backend.name]
            why = self._blocked(backend)
            early = bool(why) and self._may_set_up_early(backend, why)
            if why and not early:
                run.note = why
                continue
            self.waiting.remove(backend)
            ok, reason = poll_available(backend)
            if not ok:
                run.status, run.note = Status.UNSUPPORTED, f"not available: {reason}"
                continue
            run.note = f"set up early; {why}" if early else ""
            self._launch(backend, run, early=early)

    # ---------------------------------------------------------------- early set-up
    def _may_set_up_early(self, backend: BackendLike, why: str) -> bool:
        """Whether a backend that must wait (for presolve, for the safety net) may run its
        ``prepare`` now and take its problem when the wait is over: a timed run, a backend with a
        set-up, a wait of one of those two kinds, and a core nobody else is using (presolve holds
        one while it runs; a worker already set up and waiting holds none)."""
        if (self.options.deterministic or not has_prepare(backend)
                or why not in (WAIT_PRESOLVE, WAIT_SAFETY) or prepare_key(backend) in self.compiling):
            return False
        busy = int(self.presolve_job is not None) + sum(
            1 for w in self.active if not w.done and w.run.phase != "ready")
        return busy < self.cores

    def _release_early(self) -> None:
        """Send go to each early-started worker that is set up and no longer has to wait: its
        problem (the presolved one, through a file written once, or the original) and its warm
        start, as :meth:`_launch` would have given them."""
        for worker in self.active:
            if worker.control is None or worker.done or worker.run.phase != "ready":
                continue
            why = self._blocked(worker.backend, started=True)
            if why:
                worker.run.note = f"set up; {why}"
                continue
            path, warm, note = None, self._warm_for(worker.backend), ""
            if self.presolved is not None and worker.backend.capabilities.reduced:
                path, warm = self._presolved_file(), to_hint(self.presolved, warm)
            elif self.options.presolve and self.presolve_info is not None and \
                    "error" in self.presolve_info:
                note = "presolve not ready: original problem"
            try:
                worker.control.send(("go", path, warm))
            except (BrokenPipeError, OSError):
                continue   # it died meanwhile: its sentinel says so
            worker.control.close()
            worker.control = None
            worker.run.phase, worker.run.note = "solve", note
            worker.run.searching = round(self.now(), 4)
            worker.solve_started = time.monotonic()

    def _never_released(self) -> None:
        """A worker set up early that never got its problem (the run ended first) never started:
        its row says so instead of a timeout."""
        for worker in self.active:
            if worker.run.phase == "ready" and worker.run.searching is None:
                worker.run.status = Status.PENDING
                worker.run.note = (f"set up, but the run ended before its wait was over "
                                   f"({worker.run.note.removeprefix('set up; ') or 'waiting'})")

    def _presolved_file(self) -> Optional[str]:
        """The presolved problem pickled once into a temporary file (without the original, which
        every worker has), for early-started workers to read: no big message on any pipe."""
        if self.presolved_path is None and self.presolved is not None:
            folder = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
                else None
            fd, path = tempfile.mkstemp(prefix="portfolio-presolved-", suffix=".pkl", dir=folder)
            original = self.presolved.original
            try:
                self.presolved.original = None
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(self.presolved, fh, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                self.presolved.original = original
            self.presolved_path = path
        return self.presolved_path

    def _warm_for(self, backend: BackendLike) -> Optional[np.ndarray]:
        """The plan a backend starts from (on the original problem): the run's best for a backend
        that takes warm starts, what the backends found for a re-solve's cold part, else None."""
        if self.warm is not None and starts_cold(backend.name, self.options.cold):
            # a re-solve's cold part starts as a run without the warm start would (what the
            # backends found when it starts; deterministic mode: nothing, a timing)
            return None if self.found is None or self.options.deterministic else self.found[0]
        if backend.capabilities.warm_start:   # one that could not be made feasible: a hint
            return self.best if self.best is not None or self.warm is None else self.warm.start
        return None

    def _launch(self, backend: BackendLike, run: BackendRun, early: bool = False) -> None:
        cold = self.warm is not None and starts_cold(backend.name, self.options.cold)
        warm = None if early else self._warm_for(backend)
        problem, mapping = self.problem, None
        if early:   # its problem and warm start come with go (_release_early)
            pass
        elif self.presolved is not None and backend.capabilities.reduced:
            problem, mapping = self.presolved.reduced, self.presolved
            warm = to_hint(mapping, warm)
        elif backend.capabilities.reduced and self.options.presolve and self.presolve_info is None:
            run.note = "presolve not ready: original problem"
        board = self.shared_cold if cold and self.shared_cold is not None else self.shared
        shared = board if backend.capabilities.warm_start else None
        spec = WorkerSpec(backend, problem, self.soft_deadline, run.seed, warm, self.start,
                          shared, mapping, run.cores, prices=self.price_board,
                          price_slot=list(self.runs).index(run.name) % MAX_WRITERS,
                          options=self.option_values.get(backend.name, {}),
                          fresher=not cold or self.shared_cold is not None)
        if self.options.deterministic:
            spec.reporter = functools.partial(PointReporter, t0=self.start, board=self.shared,
                                              shared=shared, mapping=mapping, total=self.work_of[run.name])
        control = None
        if early:
            spec.control, control = self.ctx.Pipe(duplex=False)
        parent_conn, child_conn = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=worker_main, args=(spec, child_conn),
                                   name=f"portfolio-{run.name}", daemon=False)
        process.start()
        child_conn.close()  # only the worker holds its end, so its death reads as EOF here
        if spec.control is not None:
            spec.control.close()
        key = prepare_key(backend)
        run.status, run.started = Status.RUNNING, round(self.now(), 4)
        run.phase = "prepare" if key else "solve"
        if not key and not early:
            run.searching = run.started
        if key:
            self.compiling[key] = run.name
        self.active.append(_Worker(run, backend, process, parent_conn, key,
                                   solve_started=time.monotonic(), control=control))
        self.scheduler.started(process.pid, run.cores)

    def _launch_extra(self) -> None:
        """Idle cores while budget is left: another copy of a randomized backend, new seed."""
        backend = self._extra_choice()
        if backend is None:
            return
        k = self.copies.get(backend.name, 0) + 1
        self.copies[backend.name] = k
        run = BackendRun(f"{backend.name}+{k}", backend=backend.name, seed=self.options.seed + k,
                         cores=1, note=f"extra copy on an idle core, seed {self.options.seed + k}")
        self.runs[run.name] = run
        self._launch(backend, run)


    def _poll_presolve(self, force: bool = False) -> None:
        job = self.presolve_job
        if job is None:
            return
        message = None
        try:
            if job.conn.poll():
                message = job.conn.recv()
        except (EOFError, OSError):
            message = ("error", "presolve process ended without a result")
        except Exception as exc:  # noqa: BLE001
            message = ("error", f"unreadable presolve result: {exc}")
        late = message is None and (force or time.monotonic() >= job.cutoff)
        if message is None and not late and job.process.is_alive():
            return
        if message is None and not late:
            message = ("error", f"presolve process died (exit code {job.process.exitcode})")
        self.presolve_job = None
        self._kill_group(job.process)
        job.conn.close()
        if late:
            spent = self.now() - job.started
            self.presolve_info = {"error": (
                f"not finished when the run ended ({spent:.2f} s)" if force else
                f"abandoned after {spent:.2f} s (its share {PRESOLVE_SHARE:g} of the budget)")}
        elif message[0] == "presolved":
            pre = message[1]
            pre.original = self.problem
            if pre.reduced is not None:
                freeze(pre.reduced)
            self._use_presolved(pre, message[2])
        else:
            self.presolve_info = {"error": validate.note_text(str(message[1]).strip().splitlines()[-1])}

