"""Starting workers: when the start-order rule (:mod:`.order`) lets them start, set up early while
they wait, and extra seed copies of randomized backends on idle cores (which one: :mod:`.order`).
Presolve's child is started by its own part (:class:`.presolving.Presolve`)."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..backend import BackendLike
from ..registry import poll_available
from .crew import Worker
from .order import WAIT_PRESOLVE, WAIT_SAFETY
from .points import PointReporter
from .priceboard import MAX_WRITERS, PriceBoard
from .result import BackendRun
from .warmstart import WarmStart, starts_cold
from .worker import WorkerSpec, has_prepare, prepare_key, to_hint, worker_main

if TYPE_CHECKING:
    from .answers import Answers
    from .context import RunContext
    from .focus import Focus
    from .order import StartOrder
    from .presolving import Presolve


class Launcher:
    """Forks workers and hands them to the event loop's ``crew``.

    Owns the run's price board (a timed run's only: :meth:`open_board`). What it starts and when
    is the start ``order``'s to say; each worker gets its problem (the context's original, or
    ``presolve``'s reduced one), its warm start (``warm``, or the best of ``answers`` so far), the
    board of plans it reads (the context's ``shared``, or ``shared_cold`` for a timed re-solve's
    cold part), its cores (its row), its options (``option_values``) and, in deterministic mode,
    its work (``work_of``, and the adaptive rule's ``work_board``); its priority is ``focus``'s
    to say (its CPU weight); the context's ``scheduler`` is told of each start, its ``rows`` of
    each transition, its ``crew`` gets each worker."""

    def __init__(self, context: "RunContext", order: "StartOrder", presolve: "Presolve",
                 answers: "Answers", warm: Optional[WarmStart], focus: "Focus") -> None:
        self._context = context
        self._rows, self._crew, self._clock, self._options = (context.rows, context.crew,
                                                              context.clock, context.options)
        self._order, self._presolve, self._answers, self._warm = order, presolve, answers, warm
        self._focus = focus
        self._board: Optional[PriceBoard] = None

    # ---------------------------------------------------------------- the price board
    @property
    def board(self) -> Optional[PriceBoard]:
        return self._board

    def open_board(self) -> None:
        """A board for the workers' prices (none without a writable temp folder)."""
        self._board = PriceBoard.create()

    def close_board(self) -> None:
        """Once every worker is gone (nobody writes any more)."""
        if self._board is not None:
            self._board.close()

    # ---------------------------------------------------------------- starting workers
    def launch_ready(self) -> None:
        # available() is plugin code in the parent: every check runs at once in a thread under the
        # registry's time limit (cached: the CLI asked already), and no worker is forked while one
        # may still finish (a fork during an import in another thread can deadlock the child).
        checking = [b for b in self._order.waiting if poll_available(b) is None]
        if checking:
            for backend in checking:
                self._rows.waiting(self._rows[backend.name], "checking available()")
            return
        for backend in self._order.waiting:
            if time.monotonic() >= self._clock.soft_deadline:
                return
            run = self._rows[backend.name]
            why = self._order.blocked(backend)
            early = bool(why) and self._may_set_up_early(backend, why)
            if why and not early:
                self._rows.waiting(run, why)
                continue
            self._order.take(backend)
            ok, reason = poll_available(backend)
            if not ok:
                self._rows.unavailable(run, reason)
                continue
            self._launch(backend, run, early=early, note=f"set up early; {why}" if early else "")

    # ---------------------------------------------------------------- early set-up
    def _may_set_up_early(self, backend: BackendLike, why: str) -> bool:
        """Whether a backend that must wait (for presolve, for the safety net) may run its
        ``prepare`` now and take its problem when the wait is over: a timed run, a backend with a
        set-up, a wait of one of those two kinds, and a core nobody else is using (presolve holds
        one while it runs; a worker already set up and waiting holds none)."""
        key = prepare_key(backend)
        if (self._options.deterministic or not has_prepare(backend)
                or why not in (WAIT_PRESOLVE, WAIT_SAFETY)
                or (key is not None and self._crew.compiling(key) is not None)):
            return False
        busy = int(self._presolve.running) + sum(
            1 for w in self._crew if not w.done and w.run.phase != "ready")
        return busy < self._context.cores

    def release_early(self) -> None:
        """Send go to each early-started worker that is set up and no longer has to wait: its
        problem (the presolved one, through a file written once, or the original) and its warm
        start, as :meth:`_launch` would have given them."""
        for worker in self._crew:
            if worker.control is None or worker.done or worker.run.phase != "ready":
                continue
            why = self._order.blocked(worker.backend, started=True)
            if why:
                self._rows.waiting(worker.run, f"set up; {why}")
                continue
            path, warm, note = None, self._warm_for(worker.backend), ""
            presolved = self._presolve.mapping
            if presolved is not None and worker.backend.capabilities.reduced:
                path, warm = self._presolve.file(), to_hint(presolved, warm)
            elif self._options.presolve and self._presolve.info is not None and \
                    "error" in self._presolve.info:
                note = "presolve not ready: original problem"
            try:
                worker.control.send(("go", path, warm))
            except (BrokenPipeError, OSError):
                continue   # it died meanwhile: its sentinel says so
            worker.control.close()
            worker.control = None
            self._rows.released(worker.run, note)
            worker.solve_started = time.monotonic()

    def never_released(self) -> None:
        """A worker set up early that never got its problem (the run ended first) never started:
        its row says so instead of a timeout."""
        for worker in self._crew:
            if worker.run.phase == "ready" and worker.run.searching is None:
                self._rows.never_released(worker.run)

    def _warm_for(self, backend: BackendLike) -> Optional[np.ndarray]:
        """The plan a backend starts from (on the original problem): the run's best for a backend
        that takes warm starts, what the backends found for a re-solve's cold part, else None."""
        if self._warm is not None and starts_cold(backend.name, self._warm.cold):
            # a re-solve's cold part starts as a run without the warm start would (what the
            # backends found when it starts; deterministic mode: nothing, a timing)
            return None if self._answers.found is None or self._options.deterministic \
                else self._answers.found
        if backend.capabilities.warm_start:   # one that could not be made feasible: a hint
            best = self._answers.best
            return best if best is not None or self._warm is None else self._warm.start
        return None

    def _launch(self, backend: BackendLike, run: BackendRun, early: bool = False,
                note: Optional[str] = None) -> None:
        """Fork ``run``'s worker (``early``: to set up while it waits for its problem); ``note``
        becomes its row's (None: the row's is kept)."""
        cold = self._warm is not None and starts_cold(backend.name, self._warm.cold)
        warm = None if early else self._warm_for(backend)
        problem, mapping = self._context.problem, None
        presolved = self._presolve.mapping
        if early:   # its problem and warm start come with go (release_early)
            pass
        elif presolved is not None and backend.capabilities.reduced:
            problem, mapping = presolved.reduced, presolved
            warm = to_hint(mapping, warm)
        elif backend.capabilities.reduced and self._options.presolve and self._presolve.info is None:
            note = "presolve not ready: original problem"
        shared_cold = self._context.shared_cold
        board = shared_cold if cold and shared_cold is not None else self._context.shared
        shared = board if backend.capabilities.warm_start else None
        spec = WorkerSpec(backend, problem, self._clock.soft_deadline, run.seed, warm,
                          self._clock.start, shared, mapping, run.cores, prices=self._board,
                          price_slot=list(self._rows).index(run.name) % MAX_WRITERS,
                          options=self._context.option_values.get(backend.name, {}),
                          fresher=not cold or shared_cold is not None,
                          nice=self._focus.start_increment(backend.name, run.name))
        if self._context.work_of is not None:   # deterministic mode
            spec.reporter = functools.partial(PointReporter, t0=self._clock.start,
                                              board=self._context.shared, shared=shared, mapping=mapping,
                                              total=self._context.work_of[run.name],
                                              work_board=self._context.work_board,
                                              slot=list(self._rows).index(run.name))
        control = None
        fork = self._context.fork
        if early:
            spec.control, control = fork.Pipe(duplex=False)
        parent_conn, child_conn = fork.Pipe(duplex=False)
        process = fork.Process(target=worker_main, args=(spec, child_conn),
                               name=f"portfolio-{run.name}", daemon=False)
        process.start()
        child_conn.close()  # only the worker holds its end, so its death reads as EOF here
        if spec.control is not None:
            spec.control.close()
        key = prepare_key(backend)
        self._rows.started(run, note, preparing=bool(key), searching=not key and not early)
        self._crew.add(Worker(run, backend, process, parent_conn, key,
                              solve_started=time.monotonic(), control=control))
        self._context.scheduler.started(process.pid, run.cores, spec.nice,
                                        self._focus.weight(backend.name))

    def launch_extra(self) -> None:
        """Idle cores while budget is left: another copy of a randomized backend, new seed."""
        backend = self._order.extra_choice()
        if backend is None:
            return
        k = self._order.next_copy(backend.name)
        seed = self._options.seed + k
        run = self._rows.add(f"{backend.name}+{k}", backend=backend.name, seed=seed, cores=1,
                             note=f"extra copy on an idle core, seed {seed}")
        self._launch(backend, run)
