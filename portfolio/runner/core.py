"""The portfolio run: start every backend, verify everything, answer by the deadline.

Process model (why not a pool): every backend runs in its own forked worker process. Forking shares
the instance's numpy arrays copy-on-write, and each worker is a separate process the parent can
kill, which is what fault containment needs: a pool executor declares the whole pool broken when
one worker segfaults. The parent is a single thread with an event loop over the workers' pipes and
process sentinels; it never blocks on a worker and runs no plugin code beyond ``available()``:
``prepare()`` runs in the worker, presolve in a child of its own (see :mod:`.presolving`).
"""


from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from multiprocessing.connection import wait
from typing import Callable, Optional, Sequence

import numpy as np

from ..backend import BackendLike, declared
from ..backend_options import check_given, resolve
from ..evaluate import Evaluation
from ..options import RunOptions
from ..problem import Problem
from ..registry import start_checks
from . import contain
from .answers import FALLBACK, Answers
from .claims import ClaimBook
from .demotion import Demotion
from .exchange import Exchange, deterministic_split
from .launch import Launching, _Presolve
from .order import StartOrder, safety_until, start_order
from .priceboard import PriceBoard
from .result import BackendRun, PortfolioResult
from .schedule import Scheduler, core_shares, machine_cores
from .stopping import StopRules, deadline_plan
from .supervise import Supervision, _Worker
from .warmstart import WARM_START, WarmStart, repair_seconds, take_warm_start, take_warm_start_by
from .worker import PlanMapping, SharedBest

__all__ = ["FALLBACK", "Portfolio", "deadline_plan", "run_portfolio"]


def resolved_options(backends: Sequence[BackendLike], options: RunOptions) -> dict[str, dict]:
    """Every declared option of each backend with its value in this run: the given one (checked
    against the declaration: :class:`~portfolio.backend_options.OptionError` otherwise, before any
    worker starts), else the default for the run's budget (``options.budget_seconds``)."""
    out = {}
    for backend in backends:
        declared_options = declared(backend)[0].options
        given = check_given(backend.name, declared_options,
                            options.backend_options.get(backend.name, {}))
        out[backend.name] = resolve(declared_options, given, options.budget_seconds)
    return out


class Portfolio(Launching, StartOrder, Supervision, Demotion, Answers, StopRules, Exchange):
    """One portfolio run. Use :func:`run_portfolio`; this class holds the run's state and its event
    loop; the methods it inherits are grouped by job: :mod:`.launch` (starting presolve and workers),
    :mod:`.supervise` (messages, ending workers), :mod:`.answers` (verification, claims, result),
    and one module per rule: :mod:`.order` (start order), :mod:`.demotion` (low CPU demand),
    :mod:`.stopping` (deadlines, early stop, signals), :mod:`.exchange` (deterministic mode's
    exchange points)."""

    def __init__(self, problem: Problem, backends: Sequence[BackendLike], options: RunOptions, *,
                 on_update: Optional[Callable[["Portfolio"], None]] = None,
                 presolved: Optional[PlanMapping] = None,
                 hold: Optional[Callable[[BackendLike], Optional[str]]] = None,
                 keep_open: Optional[Callable[[], bool]] = None) -> None:
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ValueError(f"backend listed twice: {names}")
        if not isinstance(options, RunOptions):
            raise TypeError(f"options: expected RunOptions, got {type(options).__name__}")
        if options.deterministic and (hold is not None or keep_open is not None):
            raise ValueError("deterministic mode takes no hold or keep_open: work done outside "
                             "the run's workers cannot be exchanged at its points")
        left_out: list[str] = []
        if options.deterministic:   # only backends that count work take part (one note names the rest)
            backends, left_out = deterministic_split(backends)
        self.problem, self.backends, self.options = problem, list(backends), options
        self.option_values = resolved_options(self.backends, options)
        start = options.start
        self.start = time.monotonic() if start is None else start
        if self.start > time.monotonic() + 1.0:
            raise ValueError(f"start {start!r} lies in the future: run_portfolio takes a "
                             f"time.monotonic() value, not time.time()")
        self.soft_deadline, self.kill_time, self.end = deadline_plan(self.start, options.time_limit)
        self.cores = max(1, options.workers or machine_cores())
        self.workers = self.cores
        self.on_update = on_update
        # Work done elsewhere (a cluster, see portfolio.distributed): ``hold(backend)`` says why a
        # waiting backend may not start yet (None: it may); ``keep_open()`` keeps the loop going
        # with no live worker, so that plans offered from outside (``offer``) still count.
        self.hold, self.keep_open = hold, keep_open
        self.spare_pids: set[int] = set()   # children the runner must not end (a cluster's host)
        # Bytes one backend (with everything it starts) may use; "default": a share of the RAM.
        self.memory_limit: Optional[int] = (contain.default_memory_limit(len(self.backends))
                                            if options.memory_limit == "default"
                                            else options.memory_limit)
        self.next_memory_check = 0.0
        self.interrupted: Optional[str] = None  # the signal that ended the run early, if any
        self.adopting, self.run_ticks = False, 0
        self.scheduler = Scheduler(options.policy, self.cores)
        shares = core_shares([getattr(b.capabilities, "threads", False) for b in self.backends],
                             self.cores)
        self.runs = {b.name: BackendRun(b.name, seed=options.seed, cores=c)
                     for b, c in zip(self.backends, shares)}
        self.by_name = {b.name: b for b in self.backends}
        self.waiting = start_order(self.backends)
        self.compiling: dict[str, str] = {}     # prepare key -> run compiling it right now
        self.copies: dict[str, int] = {}
        self.active: list[_Worker] = []
        self.claims = ClaimBook()
        self.best: Optional[np.ndarray] = None
        self.best_eval: Optional[Evaluation] = None
        self.best_backend: Optional[str] = None
        self.found: Optional[tuple[np.ndarray, Evaluation]] = None   # a re-solve's cold part's best
        self.warm: Optional[WarmStart] = None
        self.reserve: Optional[tuple[np.ndarray, Evaluation]] = None
        self.reserve_refined = False   # see Answers._safe_reserve
        self.stopped_early: Optional[str] = None
        self.presolved: Optional[PlanMapping] = None
        self.presolve_info: Optional[dict] = None
        self.presolve_job: Optional[_Presolve] = None
        self.presolved_path: Optional[str] = None   # the presolved problem for early set-ups
        self.ctx = mp.get_context("fork")
        self.shared = SharedBest(self.ctx, problem.num_nodes)
        # A timed re-solve's cold part shares only its own plans (see Answers._consider): the warm
        # plan and what the warm part makes of it never pull it into the old plan's basin.
        self.shared_cold: Optional[SharedBest] = (
            SharedBest(self.ctx, problem.num_nodes)
            if options.warm_start is not None and not options.deterministic else None)
        self.price_board: Optional[PriceBoard] = None   # made by run(): a timed run's only
        if presolved is not None:   # may settle the run at once: the shared best must exist
            self._use_presolved(presolved, None)
        # The warm start, repaired when needed, is a plan of the run before any backend starts.
        if options.warm_start is not None:
            if options.deterministic:
                # the repair runs to its own end (its loops are bounded by their counts, no clock
                # inside), in a child the run's clock ends at the backends' deadline: the run is
                # never late for it, and says when its answer is then not the deterministic one
                self.warm = take_warm_start_by(problem, options.warm_start, self.soft_deadline,
                                               self.ctx)
            else:
                self.warm = take_warm_start(problem, options.warm_start,
                                            repair_seconds(options.time_limit))
            before = self.best_eval   # a presolve that settled the run keeps its name
            for plan in self.warm.incumbents():
                self._consider(None, plan, "warm start")
            if self.best is not None and self.best_eval is not before:
                self.best_backend = WARM_START
        if options.deterministic:
            self._init_exchange(left_out)
            if self.best is not None:   # point 0's incumbent: the verified warm start
                self.shared.publish(self.best)

    def now(self) -> float:
        return time.monotonic() - self.start


    def run(self) -> PortfolioResult:
        self.safety_until = safety_until(time.monotonic(), self.options.time_limit)
        saved = self._catch_signals()
        # Orphans of workers come to this process, not to init, so that they can be ended too.
        self.run_ticks = contain.now_ticks()
        was_subreaper = contain.is_subreaper()
        self.adopting = was_subreaper or contain.set_subreaper(True)
        try:
            if not self.options.deterministic:   # prices would arrive when timing says
                self.price_board = PriceBoard.create()   # None without a writable temp folder
            start_checks(self.backends)
            self._own_checks()
            settled = self._stop_reason()  # e.g. a tiny instance enumerated: no backend is needed
            if settled:
                self.stopped_early = settled
                for run in self.runs.values():
                    run.note = f"the runner settled the instance first: {settled}"
            else:
                # even without reduced backends: presolve may settle the instance
                if self.options.presolve and self.presolve_info is None and self.presolved is None:
                    self._start_presolve()
                self._loop()
        finally:
            self.scheduler.resume_all()
            for worker in self.active:
                if not worker.done:
                    self._kill(worker)
                    self._finish(worker)
            if self.presolve_job is not None:
                self._poll_presolve(force=True)
            contain.sweep(f"{os.getpid()}:")  # anything any worker started, whatever happened
            self._kill_adopted()
            self._never_released()
            if self.presolved_path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.presolved_path)
            if self.price_board is not None:   # every worker is gone: nobody writes any more
                self.price_board.close()       # (after the orphans' kill: it may start a cleaner)
            if self.adopting and not was_subreaper:
                contain.set_subreaper(False)
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        return self._result()

    def _loop(self) -> None:
        slices_over = False
        while True:
            self._poll_presolve()
            self._launch_ready()
            self._release_early()
            self._launch_extra()
            if not self.reserve_refined:
                self._safe_reserve()
            live = [w for w in self.active if not w.done]
            if self.on_update:
                self.on_update(self)
            if self.interrupted:
                self._stop_all(f"the run was interrupted ({self.interrupted})")
                return
            self._check_memory(live)
            live = [w for w in live if not w.done]
            self._demote_hopeless_bounders(live)
            if self.options.deterministic:   # what ended this turn (presolve, a worker) may
                self._settle_points()        # free points: settled before the run may end
            reason = self._stop_reason()
            if reason:
                self.stopped_early = reason
                self._stop_all(f"the run stopped early: {reason}")
                return
            if self._nothing_left(live):
                return
            if time.monotonic() >= self.kill_time:
                self._stop_all("the deadline came; terminated")
                return
            if not slices_over and time.monotonic() >= self.soft_deadline - 0.2:
                self.scheduler.resume_all()
                slices_over = True
            for w in live:
                self._sample_cpu(w)
            self.scheduler.tick(time.monotonic(), [(w.process.pid, w.run.cpu_seconds or 0.0) for w in live])
            handles = [w.conn for w in live] + [w.process.sentinel for w in live]
            if self.presolve_job is not None:
                handles += [self.presolve_job.conn, self.presolve_job.process.sentinel]
            timeout = max(0.0, min(0.1, self.kill_time - time.monotonic()))
            ready = set(wait(handles, timeout=timeout)) if handles else time.sleep(timeout) or set()
            for worker in live:
                if worker.conn in ready or worker.process.sentinel in ready:
                    self._receive(worker)
                if not worker.done and worker.process.sentinel in ready:
                    self._receive(worker)
                    if not worker.done:
                        self._finish(worker)
            if self.options.deterministic:
                self._settle_points()



def run_portfolio(problem: Problem, backends: Sequence[BackendLike], options: RunOptions, *,
                  on_update: Optional[Callable[[Portfolio], None]] = None,
                  presolved: Optional[PlanMapping] = None,
                  hold: Optional[Callable[[BackendLike], Optional[str]]] = None,
                  keep_open: Optional[Callable[[], bool]] = None) -> PortfolioResult:
    """Run ``backends`` on ``problem`` until ``options.start + options.time_limit`` and return the
    best verified plan. ``options`` (:class:`portfolio.options.RunOptions`) says what the run does;
    the keyword arguments are the run's live hooks and data, not settings.

    ``options.start`` is a ``time.monotonic()`` value (default: now; system-wide on Linux, so it
    compares across the forked workers); the CLI passes the process start time so that loading
    counts against the budget. A ``time.time()`` value (in the future on the monotonic scale) is
    refused. ``workers`` is the number of cores to share (default: this process's CPU affinity);
    every backend starts at once whatever their number. With ``presolved`` (a
    :class:`PlanMapping` of ``problem``) or ``options.presolve`` (presolve in a child under the
    deadline), backends declaring ``reduced`` work on the presolved problem. ``early_stop=False``
    keeps the run going to the deadline whatever is claimed or proven. ``memory_limit`` caps each
    backend's memory in bytes (None: no cap; default: a share of the RAM, see
    :func:`.contain.default_memory_limit`). SIGINT/SIGTERM end the run at once with the best
    verified plan; ``PortfolioResult.interrupted`` names the signal. ``fallback`` (default True)
    makes the runner's own least-memory plan the answer when no backend found a cheaper one, so
    that a run always answers; ``bench`` turns it off so that a configuration's row is its
    backends' own. ``honour_demand`` (default True) gives a backend that declares a low CPU demand
    (``report.demand("low")``) the lowest priority (see :mod:`.demotion`); False ignores demands.
    ``exhaustive`` (the CLI's choice) first scores every plan of a tiny instance
    (:mod:`portfolio.exhaustive`); when that settles it, the run ends before any backend starts.
    ``options.cluster`` is not read here: :mod:`portfolio.distributed.session` reads it and hands
    the run its hooks.

    ``on_update(portfolio)`` is called at every turn of the event loop (at least every 0.1 s).
    ``hold`` and ``keep_open`` are for work done outside this machine (:mod:`portfolio.distributed`):
    a backend ``hold`` gives a reason for waits, and the run goes on while ``keep_open()`` is true
    even with no worker alive (plans come in through :meth:`Portfolio.offer` from ``on_update``).
    """
    return Portfolio(problem, backends, options, on_update=on_update, presolved=presolved,
                     hold=hold, keep_open=keep_open).run()
