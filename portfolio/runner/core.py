"""The portfolio run: start every backend, verify everything, answer by the deadline.

Process model (why not a pool): every backend runs in its own forked worker process. Forking shares
the instance's numpy arrays copy-on-write, and each worker is a separate process the parent can
kill, which is what fault containment needs: a pool executor declares the whole pool broken when
one worker segfaults. The parent is a single thread with an event loop over the workers' pipes and
process sentinels; it never blocks on a worker and runs no plugin code beyond ``available()``:
``prepare()`` runs in the worker, presolve in a child of its own (see :mod:`.presolving`).

The run is made of parts, each owning its state and given the run's :class:`.context.RunContext`
(docs/architecture.md, "The runner's parts"): the loop here owns the workers
(:class:`.crew.Crew`) and the hooks, and turns the wheel; :class:`.rows.Rows` holds the rows and
is their one writer;
:class:`.launch.Launcher` starts workers when :class:`.order.StartOrder` lets them;
:class:`.supervise.Supervisor` reads and ends them; :class:`.answers.Answers` verifies plans and
keeps the incumbent and the claims; :class:`.presolving.Presolve` runs presolve;
:class:`.stopping.StopRules` says when the run may end; :class:`.demotion.Demotion` lowers
backends that cannot help; :class:`.focus.Focus` holds the CPU weights and moves them toward the
backends that improve the incumbent; :class:`.exchange.Exchange` is deterministic mode's exchange
points.
"""


from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from multiprocessing.connection import wait
from typing import Callable, Optional, Sequence

import numpy as np

from ..backend import BackendLike, declared, engine_versions
from ..backend_options import check_given, resolve
from ..evaluate import Evaluation
from ..options import RunOptions
from ..problem import Problem
from ..registry import start_checks
from ..work import EXCHANGE_UNITS
from . import contain
from .answers import FALLBACK, Answers
from .claims import ClaimBook
from .context import RunContext
from .crew import Crew, sample_cpu
from .deadlines import Clock, deadline_plan
from .demotion import Demotion
from .exchange import Exchange, allot_work, deterministic_split
from .focus import Focus, point_period
from .launch import Launcher
from .order import StartOrder
from .points import WorkBoard
from .presolving import Presolve
from .priceboard import PriceBoard
from .result import BackendRun, PortfolioResult
from .rows import Rows
from .schedule import Scheduler, core_shares, machine_cores
from .stopping import StopRules
from .supervise import Supervisor, kill
from .warmstart import (WarmStart, repair_seconds, starts_cold, take_warm_start,
                        take_warm_start_by)
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


class Portfolio:
    """One portfolio run: its event loop, the parts it is made of, and what a caller's hooks may
    read (``on_update`` gets this object at every turn). Use :func:`run_portfolio`.

    The loop owns the problem, the workers (``crew``) and the hooks; ``runs`` is the rows' table
    (name -> :class:`.result.BackendRun`, written by :class:`.rows.Rows` only; a cluster driver may
    add its shards' rows to it); each part owns its own state and is given, when it is made, the
    run's ``context`` and the parts it asks (see the module docstring). For callers: :meth:`now`, :attr:`end`, the incumbent (:meth:`incumbent`,
    :attr:`best`, :attr:`best_eval`, :attr:`best_backend`), the claims, plans and bounds from
    outside (:meth:`offer`, :meth:`outside_bound`, :meth:`outside_optimal`,
    :meth:`outside_reject`), deterministic mode's progress (:attr:`settled_point`,
    :meth:`points_expected`), :attr:`price_board`, :attr:`warm` and :meth:`spare`."""

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
        start = time.monotonic() if options.start is None else options.start
        if start > time.monotonic() + 1.0:
            raise ValueError(f"start {options.start!r} lies in the future: run_portfolio takes a "
                             f"time.monotonic() value, not time.time()")
        self.clock = Clock.of(start, options.time_limit)
        self.cores = max(1, options.workers or machine_cores())
        # Work done elsewhere (a cluster, see portfolio.distributed): ``hold(backend)`` says why a
        # waiting backend may not start yet (None: it may); ``keep_open()`` keeps the loop going
        # with no live worker, so that plans offered from outside (``offer``) still count.
        self.on_update = on_update
        self.callback_error: Optional[dict] = None   # what on_update raised (it ended the run)
        # Bytes one backend (with everything it starts) may use; "default": a share of the RAM.
        memory_limit: Optional[int] = (contain.default_memory_limit(len(self.backends))
                                       if options.memory_limit == "default"
                                       else options.memory_limit)
        self.scheduler = Scheduler(options.policy, self.cores)
        shares = core_shares([getattr(b.capabilities, "threads", False) for b in self.backends],
                             self.cores)
        self.rows = Rows(self.clock)   # the rows' one writer
        for b, c in zip(self.backends, shares):
            self.rows.add(b.name, seed=options.seed, cores=c)
        self.runs = self.rows.table
        by_name = {b.name: b for b in self.backends}
        self.crew = Crew()
        fork = mp.get_context("fork")
        work_of = allot_work(self.runs, by_name, options.work_budget, options.cpu_weights) \
            if options.deterministic else None
        work_board = None
        if work_of and options.adaptive:   # the totals the adaptive rule moves (.focus)
            period = point_period(max(work_of.values()) // EXCHANGE_UNITS + 1)
            work_board = WorkBoard(fork, len(self.runs),
                                   sum(work_of.values()) // EXCHANGE_UNITS // period + 2, period)
        self.context = RunContext(
            problem, tuple(self.backends), options, self.option_values, self.clock, self.rows,
            self.crew, self.scheduler, self.cores, fork, memory_limit,
            shared=SharedBest(fork, problem.num_nodes),
            # A timed re-solve's cold part shares only its own plans (see Answers.consider): the
            # warm plan and what the warm part makes of it never pull it into the old plan's basin.
            shared_cold=(SharedBest(fork, problem.num_nodes)
                         if options.warm_start is not None and not options.deterministic else None),
            work_of=work_of, work_board=work_board)
        self.answers = Answers(self.context)
        self.focus = Focus(self.context)
        self.presolve = Presolve(self.context, self.answers)
        if presolved is not None:   # may settle the run at once
            self.presolve.use(presolved, None)
        # The warm start, repaired when needed, is a plan of the run before any backend starts.
        self.warm: Optional[WarmStart] = None
        if options.warm_start is not None:
            if options.deterministic:
                # the repair runs to its own end (its loops are bounded by their counts, no clock
                # inside), in a child the run's clock ends at the backends' deadline: the run is
                # never late for it, and says when its answer is then not the deterministic one
                self.warm = take_warm_start_by(problem, options.warm_start,
                                               self.clock.soft_deadline, fork)
            else:
                self.warm = take_warm_start(problem, options.warm_start,
                                            repair_seconds(options.time_limit))
            # the re-solve's cold part: given, or decided from how far the plan was from fitting
            self.warm.decide_cold([b.name for b in self.backends], options.cold)
            self.answers.warm_start(self.warm.incumbents(), self.warm.cold)
        self.exchange: Optional[Exchange] = None
        if options.deterministic:
            self.exchange = Exchange(self.context, self.answers, left_out, self.focus)
            self.exchange.begin(self.answers.best)   # point 0's incumbent: the verified warm start
        self.order = StartOrder(self.context, self.presolve, hold, self.focus)
        self.demotion = Demotion(self.context)
        self.stop = StopRules(self.context, self.answers, keep_open)
        self.supervisor = Supervisor(self.context, self.answers, self.demotion, self.exchange,
                                     self.presolve, self.focus)
        self.launcher = Launcher(self.context, self.order, self.presolve, self.answers, self.warm,
                                 self.focus)

    # ---------------------------------------------------------------- what hooks read
    def now(self) -> float:
        return self.clock.now()

    @property
    def end(self) -> float:
        """When the answer is due (``time.monotonic()`` scale)."""
        return self.clock.end

    @property
    def best(self) -> Optional[np.ndarray]:
        return self.answers.best

    @property
    def best_eval(self) -> Optional[Evaluation]:
        return self.answers.best_eval

    @property
    def best_backend(self) -> Optional[str]:
        return self.answers.best_backend

    @property
    def claims(self) -> ClaimBook:
        return self.answers.claims

    @property
    def settled_point(self) -> int:
        """Deterministic mode: the last exchange point settled (0 in a timed run)."""
        return 0 if self.exchange is None else self.exchange.settled_point

    def points_expected(self) -> int:
        """Deterministic mode: the exchange points of a run whose backends spend all their work."""
        return 0 if self.exchange is None else self.exchange.points_expected()

    @property
    def price_board(self) -> Optional[PriceBoard]:
        return self.launcher.board

    def incumbent(self) -> Optional[tuple[int, np.ndarray, str]]:
        """See :meth:`.answers.Answers.incumbent`."""
        return self.answers.incumbent()

    def offer(self, run: Optional[BackendRun], plan: object, note: str) -> Optional[str]:
        """See :meth:`.answers.Answers.offer`."""
        return self.answers.offer(run, plan, note)

    def outside_bound(self, run: BackendRun, value: object, note: str, exact: bool) -> None:
        self.answers.outside_bound(run, value, note, exact)

    def outside_optimal(self, run: BackendRun, cost: int, exact: bool) -> None:
        self.answers.outside_optimal(run, cost, exact)

    def outside_reject(self, run: BackendRun, reason: str) -> None:
        self.answers.outside_reject(run, reason)

    def spare(self, pids: set[int]) -> None:
        """Children of this process the runner must not end (a cluster's host)."""
        self.supervisor.spare(pids)

    # ---------------------------------------------------------------- the run
    def run(self) -> PortfolioResult:
        self.order.begin()
        self.stop.catch_signals()
        self.supervisor.adopt()
        try:
            if not self.options.deterministic:   # prices would arrive when timing says
                self.launcher.open_board()
            start_checks(self.backends)
            self.answers.own_checks()
            settled = self.stop.ends_early()  # e.g. a tiny instance enumerated: no backend is needed
            if settled:
                self.rows.settled_first(settled)
            else:
                # even without reduced backends: presolve may settle the instance
                if self.options.presolve and self.presolve.info is None and \
                        self.presolve.mapping is None:
                    self.presolve.start()
                self._loop()
        finally:
            self.scheduler.resume_all()
            for worker in self.crew:
                if not worker.done:
                    kill(worker, self.rows)
                    self.supervisor.finish(worker)
            self.presolve.poll(force=True)
            contain.sweep(f"{os.getpid()}:")  # anything any worker started, whatever happened
            self.supervisor.kill_adopted()
            self.launcher.never_released()
            self.presolve.remove_file()
            self.launcher.close_board()   # after the orphans' kill: it may start a cleaner
            self.supervisor.stop_adopting()
            self.stop.restore_signals()
        return self._result()

    def _settle_points(self) -> None:
        """Deterministic mode: what ended this turn (presolve, a worker) may free points."""
        if self.exchange is not None:
            self.exchange.settle(self.stop.reason, self.presolve.running)

    def _loop(self) -> None:
        slices_over = False
        while True:
            self.presolve.poll()
            self.launcher.launch_ready()
            self.launcher.release_early()
            self.launcher.launch_extra()
            self.answers.refine_reserve()
            live = self.crew.live()
            if self.on_update and not self._call_on_update():
                error = self.callback_error["error"]
                self.supervisor.stop_all(f"the caller's on_update raised {error}")
                return
            if self.stop.interrupted:
                self.supervisor.stop_all(f"the run was interrupted ({self.stop.interrupted})")
                return
            self.supervisor.check_memory(live)
            live = [w for w in live if not w.done]
            self.demotion.demote_hopeless_bounders(live, self.answers.verified_best()[0])
            self.focus.turn(live)
            self._settle_points()   # settled before the run may end
            reason = self.stop.ends_early()
            if reason:
                self.supervisor.stop_all(f"the run stopped early: {reason}")
                return
            if self.stop.nothing_left(live, bool(self.order.waiting), self.presolve.running):
                return
            if time.monotonic() >= self.clock.kill_time:
                self.supervisor.stop_all("the deadline came; terminated")
                return
            if not slices_over and time.monotonic() >= self.clock.soft_deadline - 0.2:
                self.scheduler.resume_all()
                slices_over = True
            for w in live:
                sample_cpu(w, self.rows)
            self.scheduler.tick(time.monotonic(),
                                [(w.process.pid, w.run.cpu_seconds or 0.0) for w in live])
            handles = [w.conn for w in live] + [w.process.sentinel for w in live]
            handles += self.presolve.handles()
            timeout = max(0.0, min(0.1, self.clock.kill_time - time.monotonic()))
            ready = set(wait(handles, timeout=timeout)) if handles else time.sleep(timeout) or set()
            for worker in live:
                if worker.conn in ready or worker.process.sentinel in ready:
                    self.supervisor.receive(worker)
                if not worker.done and worker.process.sentinel in ready:
                    self.supervisor.receive(worker)
                    if not worker.done:
                        self.supervisor.finish(worker)
            self._settle_points()

    def _call_on_update(self) -> bool:
        """The caller's hook, once; False when it raised: its error is kept (``callback_error``),
        and the run ends with its best verified plan rather than losing it to the exception."""
        try:
            self.on_update(self)
        except Exception as exc:  # noqa: BLE001 -- the caller's code; its error goes in the result
            self.callback_error = {"hook": "on_update", "error": f"{type(exc).__name__}: {exc}",
                                   "traceback": traceback.format_exc()}
            return False
        return True

    def _result(self) -> PortfolioResult:
        self.rows.never_started()
        self.answers.check_claims()
        ended_by = self.stop.interrupted or (
            None if self.callback_error is None else f"on_update raised {self.callback_error['error']}")
        deterministic = None if self.exchange is None else self.exchange.summary(
            ended_by, self.warm, self.stop.stopped_early)
        answer = self.answers.final()
        cost = None if answer.evaluation is None else answer.evaluation.cost
        return PortfolioResult(
            problem=self.problem.name, time_limit=self.options.time_limit, runs=self.runs,
            solution=answer.solution, evaluation=answer.evaluation, winner=answer.winner,
            elapsed=self.now(), infeasible_proven_by=answer.infeasible_proven_by,
            proof=answer.proof, claims=list(self.claims.claims),
            stopped_early=self.stop.stopped_early, presolve=self.presolve.info,
            interrupted=self.stop.interrupted,
            schedule={"policy": self.scheduler.policy, "cores": self.cores,
                      "honour_demand": self.options.honour_demand, **self.focus.summary()},
            engines=engine_versions(self.backends), deterministic=deterministic,
            warm_start=None if self.warm is None else {
                **self.warm.report(cost),
                "cold": sorted(b.name for b in self.backends
                               if starts_cold(b.name, self.warm.cold)),
                "cold_why": self.warm.cold_why},
            options={name: dict(values) for name, values in self.option_values.items()},
            options_given={k: dict(v) for k, v in self.options.backend_options.items()},
            config=self.options.config, callback_error=self.callback_error,
        )


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

    ``on_update(portfolio)`` is called at every turn of the event loop (at least every 0.1 s); an
    exception it raises ends the run there, every worker ended, and the result keeps it
    (``PortfolioResult.callback_error``) beside the best verified plan.
    ``hold`` and ``keep_open`` are for work done outside this machine (:mod:`portfolio.distributed`):
    a backend ``hold`` gives a reason for waits, and the run goes on while ``keep_open()`` is true
    even with no worker alive (plans come in through :meth:`Portfolio.offer` from ``on_update``).
    """
    return Portfolio(problem, backends, options, on_update=on_update, presolved=presolved,
                     hold=hold, keep_open=keep_open).run()
