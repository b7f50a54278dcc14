"""The portfolio: many backends, one wall-clock deadline, the best verified plan wins.

Process model (why not a pool): every backend runs in its own forked worker process, at most
``workers`` at a time. Forking shares the instance's numpy arrays copy-on-write, so a 100 MB instance
is not copied per worker, and each worker is a separate process the parent can kill, which is what
fault containment needs: a pool executor (joblib/loky, concurrent.futures) declares the whole pool
broken when one worker segfaults, losing every other backend's run with it. The parent is a single
thread with an event loop over the workers' pipes and process sentinels; it never blocks on a worker.

Protocol: a worker sends ``("incumbent", seconds, plan, note)`` for each improving plan (throttled on
the worker side), then ``("done", result)`` or ``("error", traceback)``. The parent verifies every plan
with the exact evaluator on the original problem, keeps the best, and pushes new bests to running
backends that accept warm starts. A backend that reports something false is killed and nothing it
returned can win.
"""

from __future__ import annotations

import ctypes  # imported here, not in the worker: an import after fork can deadlock
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Callable, Optional, Protocol, Sequence

import numpy as np

from .backend import Backend, BackendLike, SolveResult, Status
from .evaluate import Evaluation, SolutionError, evaluate
from .problem import Problem

REPORT_INTERVAL = 0.25
"""Seconds between two incumbents sent by one worker (the latest pending one is sent at the end)."""


def _has_prepare(backend: BackendLike) -> bool:
    prepare = getattr(type(backend), "prepare", None)
    return prepare is not None and prepare is not Backend.prepare


def deadline_plan(start: float, time_limit: float) -> tuple[float, float, float]:
    """(backend deadline, hard-kill time, answer deadline) as absolute ``time.time()`` values.

    Backends are asked to finish ``soft`` seconds early, stragglers are killed ``hard`` seconds before
    the end, and the rest is the margin for collecting results and printing the answer.
    """
    end = start + time_limit
    soft = min(4.0, 1.0 + 0.02 * time_limit)
    hard = min(2.0, 0.6 + 0.015 * time_limit)
    return end - soft, end - hard, end


@dataclass
class Incumbent:
    """One verified improving plan, as seen by the parent."""

    time: float          # seconds since the run started
    cost: int
    backend: str
    note: str = ""


@dataclass
class BackendRun:
    """Everything the portfolio knows about one backend's run: a row of the final table."""

    name: str
    status: Status = Status.PENDING
    best_cost: Optional[int] = None
    best_solution: Optional[np.ndarray] = None
    time_to_best: Optional[float] = None
    lower_bound: Optional[int] = None
    note: str = ""
    incumbents: list[Incumbent] = field(default_factory=list)
    started: Optional[float] = None
    finished: Optional[float] = None
    exitcode: Optional[int] = None
    claimed_optimal: bool = False

    @property
    def disqualified(self) -> bool:
        return self.status is Status.REJECTED

    def to_dict(self) -> dict:
        return {
            "backend": self.name,
            "status": self.status.value,
            "best_cost": self.best_cost,
            "time_to_best": self.time_to_best,
            "lower_bound": self.lower_bound,
            "note": self.note,
            "started": self.started,
            "finished": self.finished,
            "exitcode": self.exitcode,
            "incumbents": [{"time": i.time, "cost": i.cost, "note": i.note} for i in self.incumbents],
        }


@dataclass
class PortfolioResult:
    """The outcome of a portfolio run."""

    problem: str
    time_limit: float
    runs: dict[str, BackendRun]
    solution: Optional[np.ndarray]
    evaluation: Optional[Evaluation]
    winner: Optional[str]
    elapsed: float
    infeasible_proven_by: Optional[str] = None

    @property
    def cost(self) -> Optional[int]:
        return None if self.evaluation is None else self.evaluation.cost

    @property
    def incumbents(self) -> list[Incumbent]:
        found = [i for run in self.runs.values() if not run.disqualified for i in run.incumbents]
        return sorted(found, key=lambda i: i.time)

    def to_dict(self) -> dict:
        return {
            "problem": self.problem,
            "time_limit": self.time_limit,
            "elapsed": round(self.elapsed, 3),
            "winner": self.winner,
            "cost": self.cost,
            "feasible": self.solution is not None,
            "infeasible_proven_by": self.infeasible_proven_by,
            "evaluation": None if self.evaluation is None else self.evaluation.to_dict(),
            "backends": [run.to_dict() for run in self.runs.values()],
            "incumbents": [{"time": i.time, "cost": i.cost, "backend": i.backend, "note": i.note}
                           for i in self.incumbents],
            "solution": None if self.solution is None else [int(s) for s in self.solution],
        }


# ------------------------------------------------------------------------------------------ worker side
class PlanMapping(Protocol):
    """What the runner needs of a presolve result (see :mod:`portfolio.presolve`)."""

    reduced: Optional[Problem]
    infeasible: Optional[str]

    def expand(self, reduced_plan: np.ndarray) -> np.ndarray: ...

    def restrict(self, original_plan: np.ndarray) -> Optional[np.ndarray]: ...


class SharedBest:
    """The portfolio's best verified plan in shared memory, readable by every worker.

    The parent never sends plans down a pipe (a blocking send to a worker that is itself blocked
    sending an incumbent would deadlock both); it writes here, seqlock style: the version is odd while
    the plan is being written, and readers retry when the version moved during their copy.
    """

    def __init__(self, ctx: mp.context.BaseContext, n: int) -> None:
        self.version = ctx.RawValue("q", 0)
        self.plan = ctx.RawArray("q", max(n, 1))
        self.n = n

    def publish(self, plan: np.ndarray) -> None:
        self.version.value += 1
        np.frombuffer(self.plan, dtype=np.int64, count=self.n)[:] = plan
        self.version.value += 1

    def read(self, seen: int) -> tuple[int, Optional[np.ndarray]]:
        """(version, plan) when a newer complete plan than ``seen`` is there, else (seen, None)."""
        for _ in range(100):
            before = self.version.value
            if before == seen or before % 2:
                return seen, None
            plan = np.frombuffer(self.plan, dtype=np.int64, count=self.n).copy()
            if self.version.value == before:
                return before, plan
        return seen, None


class _PipeReporter:
    """The ``report`` a backend gets inside a worker: throttled incumbents out, shared best in.

    A plan held back by the throttle is sent by a small flusher thread once the interval has passed,
    so a backend that goes quiet (or is killed later) does not lose its last improvement.
    """

    def __init__(self, conn: Connection, t0: float, shared: Optional[SharedBest],
                 mapping: Optional[PlanMapping] = None) -> None:
        self.conn, self.t0, self.shared, self.mapping = conn, t0, shared, mapping
        self.pending: Optional[tuple[np.ndarray, str]] = None
        self.last_sent = 0.0
        self.seen = 0
        self.latest_best: Optional[np.ndarray] = None
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._flusher, name="portfolio-flusher", daemon=True).start()

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        plan = np.array(solution, dtype=np.int64, copy=True)
        if self.mapping is not None:
            plan = self.mapping.expand(plan)
        with self.lock:
            self.pending = (plan, note)
            if time.time() - self.last_sent >= REPORT_INTERVAL:
                self._send_pending()

    def _send_pending(self) -> None:
        if self.pending is not None and not self.closed:
            plan, note = self.pending
            self.pending = None
            self.conn.send(("incumbent", time.time() - self.t0, plan, note))
            self.last_sent = time.time()

    def _flusher(self) -> None:
        while not self.closed:
            time.sleep(REPORT_INTERVAL / 2)
            with self.lock:
                if self.pending is not None and time.time() - self.last_sent >= REPORT_INTERVAL:
                    self._send_pending()

    def flush(self) -> None:
        with self.lock:
            self._send_pending()

    def send(self, message: tuple) -> None:
        """Send a final message; nothing is sent after it."""
        with self.lock:
            self._send_pending()
            self.conn.send(message)
            self.closed = True

    def best(self) -> Optional[np.ndarray]:
        if self.shared is not None:
            self.seen, plan = self.shared.read(self.seen)
            if plan is not None and self.mapping is not None:
                plan = self.mapping.restrict(plan)
            if plan is not None:
                self.latest_best = plan
        return self.latest_best


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the runner dies (a worker in its own process group
    would otherwise outlive a runner killed with SIGKILL). No-op elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the request took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass


def _worker_main(backend: BackendLike, problem: Problem, deadline: float, seed: int,
                 warm_start: Optional[np.ndarray], conn: Connection, t0: float,
                 shared: Optional[SharedBest], mapping: Optional[PlanMapping] = None) -> None:
    """Body of a worker process: run one backend and send everything back.

    With a ``mapping`` the backend works on the presolved problem; every plan it reports or returns is
    expanded to the original problem here, before the parent verifies it.
    """
    os.setpgrp()  # own process group: a kill at the deadline also reaches programs it started
    _die_with_parent()
    reporter = _PipeReporter(conn, t0, shared, mapping)
    try:
        result = backend.solve(problem, deadline, seed, warm_start, reporter)
        if not isinstance(result, SolveResult):
            raise TypeError(f"solve() returned {type(result).__name__}, expected SolveResult")
        if mapping is not None and result.solution is not None:
            result.solution = mapping.expand(np.asarray(result.solution, dtype=np.int64))
        reporter.send(("done", result))
    except BaseException:  # noqa: BLE001 -- everything goes back to the parent as text
        reporter.send(("error", traceback.format_exc(limit=8)))
    finally:
        conn.close()


# ------------------------------------------------------------------------------------------ parent side
@dataclass
class _Worker:
    run: BackendRun
    backend: BackendLike
    process: mp.process.BaseProcess
    conn: Connection
    done: bool = False


class Portfolio:
    """One portfolio run. Use :func:`run_portfolio`; this class holds the run's state."""

    def __init__(self, problem: Problem, backends: Sequence[BackendLike], time_limit: float,
                 start: Optional[float] = None, workers: Optional[int] = None, seed: int = 0,
                 warm_start: Optional[np.ndarray] = None,
                 on_update: Optional[Callable[["Portfolio"], None]] = None,
                 presolved: Optional[PlanMapping] = None) -> None:
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ValueError(f"backend listed twice: {names}")
        self.problem = problem
        self.backends = list(backends)
        self.time_limit = time_limit
        self.start = time.time() if start is None else start
        self.soft_deadline, self.kill_time, self.end = deadline_plan(self.start, time_limit)
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.seed = seed
        self.on_update = on_update
        self.runs = {b.name: BackendRun(b.name) for b in self.backends}
        self.best: Optional[np.ndarray] = None
        self.best_eval: Optional[Evaluation] = None
        self.best_backend: Optional[str] = None
        self.proven_optimal_by: Optional[str] = None
        self.infeasible_proven_by: Optional[str] = None
        self.active: list[_Worker] = []
        # Backends without set-up first, so a slow first compile never delays the quick ones.
        self.queue = sorted(self.backends, key=lambda b: _has_prepare(b))
        self.prepared: set[str] = set()
        usable = presolved is not None and presolved.infeasible is None and presolved.reduced is not None
        self.presolved = presolved if usable else None
        if presolved is not None and presolved.infeasible is not None:
            self.infeasible_proven_by = f"presolve ({presolved.infeasible})"
            self.queue = []
            for run in self.runs.values():
                run.status, run.note = Status.UNSUPPORTED, "not run: presolve proved the instance infeasible"
        self.ctx = mp.get_context("fork")
        self.shared = SharedBest(self.ctx, problem.num_nodes)
        if warm_start is not None:
            self._consider("(warm start)", np.asarray(warm_start, dtype=np.int64), "given warm start",
                           record=False)

    def now(self) -> float:
        return time.time() - self.start

    # ---------------------------------------------------------------- verification
    def _reject(self, run: BackendRun, reason: str) -> None:
        run.status = Status.REJECTED
        run.note = reason
        if self.best_backend == run.name:
            self._recompute_best()

    def _recompute_best(self) -> None:
        self.best = self.best_eval = self.best_backend = None
        for run in self.runs.values():
            if run.disqualified or run.best_solution is None:
                continue
            if self.best_eval is None or run.best_cost < self.best_eval.cost:
                self.best = run.best_solution
                self.best_eval = evaluate(self.problem, run.best_solution)
                self.best_backend = run.name

    def _consider(self, name: str, plan: object, note: str, record: bool = True) -> Optional[str]:
        """Verify a plan; keep it if it is the best. Returns why it was refused, or None."""
        try:
            ev = evaluate(self.problem, plan)
        except SolutionError as exc:
            return f"invalid plan: {exc}"
        if not ev.feasible:
            return (f"infeasible plan reported as feasible: usage {ev.peak_usage:,} > limit "
                    f"{ev.usage_limit:,} at t={ev.first_violation_time}")
        sol = np.asarray(plan, dtype=np.int64)
        if record:
            run = self.runs[name]
            if run.best_cost is None or ev.cost < run.best_cost:
                run.best_cost, run.best_solution, run.time_to_best = ev.cost, sol, self.now()
                run.incumbents.append(Incumbent(round(self.now(), 4), ev.cost, name, note))
        if self.best_eval is None or ev.cost < self.best_eval.cost:
            self.best, self.best_eval, self.best_backend = sol, ev, name
            self._share_best()
        return None

    def _share_best(self) -> None:
        """Publish a new best plan to running backends that take warm starts (never blocks)."""
        self.shared.publish(self.best)

    # ---------------------------------------------------------------- workers
    def _launch(self, backend: BackendLike) -> None:
        run = self.runs[backend.name]
        ok, why = backend.available()
        if not ok:
            run.status, run.note = Status.UNSUPPORTED, f"not available: {why}"
            return
        self._prepare(backend)
        if time.time() >= self.soft_deadline:
            run.note = "set-up (prepare) used up the time"
            return
        warm = self.best if backend.capabilities.warm_start else None
        problem, mapping = self.problem, None
        if self.presolved is not None and backend.capabilities.reduced:
            problem, mapping = self.presolved.reduced, self.presolved
            warm = None if warm is None else mapping.restrict(warm)
        parent_conn, child_conn = self.ctx.Pipe(duplex=True)
        process = self.ctx.Process(
            target=_worker_main, name=f"portfolio-{backend.name}", daemon=False,
            args=(backend, problem, self.soft_deadline, self.seed, warm, child_conn, self.start,
                  self.shared if backend.capabilities.warm_start else None, mapping),
        )
        process.start()
        child_conn.close()  # only the worker holds its end, so its death reads as EOF here
        run.status, run.started = Status.RUNNING, round(self.now(), 4)
        self.active.append(_Worker(run, backend, process, parent_conn))

    def _prepare(self, backend: BackendLike) -> None:
        """Run the backend's one-time set-up in this process (shared by all backends of a class)."""
        prepare = getattr(backend, "prepare", None)
        key = type(backend).__qualname__
        if prepare is None or key in self.prepared:
            return
        self.prepared.add(key)
        try:
            prepare()
        except Exception as exc:  # set-up failing is the backend's problem; the worker will tell
            self.runs[backend.name].note = f"prepare failed: {type(exc).__name__}: {exc}"

    def _receive(self, worker: _Worker) -> None:
        """Read everything a worker has sent so far."""
        run = worker.run
        while not worker.done:
            try:
                if not worker.conn.poll():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                self._finish(worker)
                return
            except Exception as exc:  # an unpicklable or garbled message
                self._kill(worker)
                self._reject(run, f"sent a message that could not be read: {exc}")
                return
            if run.disqualified:
                continue
            kind = message[0]
            if kind == "incumbent":
                refused = self._consider(run.name, message[2], message[3])
                if refused:
                    self._kill(worker)
                    self._reject(run, refused)
            elif kind == "done":
                self._accept_result(worker, message[1])
            elif kind == "error":
                run.status = Status.ERROR
                run.note = "exception: " + message[1].strip().splitlines()[-1]
                run.finished = round(self.now(), 4)

    def _accept_result(self, worker: _Worker, result: SolveResult) -> None:
        run = worker.run
        run.finished = round(self.now(), 4)
        run.note = result.note or run.note
        try:
            status = Status(result.status)
        except ValueError:
            self._reject(run, f"unknown status {result.status!r}")
            return
        if status not in (Status.OPTIMAL, Status.FEASIBLE, Status.INFEASIBLE_PROVEN,
                          Status.NO_SOLUTION, Status.UNSUPPORTED, Status.ERROR):
            self._reject(run, f"status {status.value!r} is reserved for the runner")
            return
        if result.solution is not None:
            refused = self._consider(run.name, result.solution, "final")
            if refused:
                self._reject(run, refused)
                return
        elif status in (Status.OPTIMAL, Status.FEASIBLE):
            self._reject(run, f"status {status.value} without a solution")
            return
        run.lower_bound = None if result.lower_bound is None else int(result.lower_bound)
        run.status = status
        if status is Status.OPTIMAL:
            run.claimed_optimal = True
            run.lower_bound = run.best_cost
            if self.best_eval is not None and run.best_cost == self.best_eval.cost:
                self.proven_optimal_by = run.name
        if status is Status.INFEASIBLE_PROVEN:
            self.infeasible_proven_by = run.name
        self._check_claims()

    def _check_claims(self) -> None:
        """A lower bound above a verified cost is a false claim; so is an 'optimum' someone beat."""
        if self.best_eval is None:
            return
        best = self.best_eval.cost
        for run in self.runs.values():
            if run.disqualified:
                continue
            if run.lower_bound is not None and run.lower_bound > best:
                what = "claimed optimal at" if run.claimed_optimal else "claimed lower bound"
                self._reject(run, f"false claim: {what} {run.lower_bound:,} but "
                                  f"{self.best_backend} verified {best:,}")
                if self.proven_optimal_by == run.name:
                    self.proven_optimal_by = None
            if run.status is Status.INFEASIBLE_PROVEN:
                self._reject(run, f"false claim: infeasible, but {self.best_backend} found a "
                                  f"feasible plan")
                if self.infeasible_proven_by == run.name:
                    self.infeasible_proven_by = None

    def _finish(self, worker: _Worker) -> None:
        """A worker's process ended: collect its exit code and settle its status."""
        worker.done = True
        worker.process.join(timeout=1.0)
        run = worker.run
        run.exitcode = worker.process.exitcode
        if run.finished is None:
            run.finished = round(self.now(), 4)
        if run.status is Status.RUNNING:
            code = run.exitcode
            run.status = Status.CRASHED
            if code is not None and code < 0:
                try:
                    run.note = f"worker died by signal {signal.Signals(-code).name}"
                except ValueError:
                    run.note = f"worker died by signal {-code}"
            else:
                run.note = f"worker exited with code {code} without a result"
        try:
            worker.conn.close()
        except OSError:
            pass

    def _kill(self, worker: _Worker) -> None:
        """SIGKILL the worker's whole process group (the worker and anything it started)."""
        if worker.process.is_alive():
            try:
                os.killpg(worker.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                worker.process.kill()
        worker.process.join(timeout=2.0)

    def _stop_all(self, note: str) -> None:
        """Collect what running workers sent, then terminate them with status TIMEOUT."""
        for worker in self.active:
            if worker.done:
                continue
            self._receive(worker)  # take whatever it managed to send
            if worker.done:
                continue
            self._kill(worker)
            self._receive(worker)
            if not worker.done:
                self._finish(worker)
            if worker.run.status in (Status.RUNNING, Status.CRASHED):
                worker.run.status, worker.run.note = Status.TIMEOUT, note

    # ---------------------------------------------------------------- main loop
    def run(self) -> PortfolioResult:
        try:
            self._loop()
        finally:
            for worker in self.active:
                if not worker.done:
                    self._kill(worker)
                    self._finish(worker)
        for run in self.runs.values():
            if run.status is Status.PENDING:
                run.note = "never started: no worker was free before the deadline"
        self._check_claims()
        return PortfolioResult(
            problem=self.problem.name,
            time_limit=self.time_limit,
            runs=self.runs,
            solution=self.best,
            evaluation=self.best_eval,
            winner=self.best_backend,
            elapsed=self.now(),
            infeasible_proven_by=self.infeasible_proven_by,
        )

    def _loop(self) -> None:
        while True:
            running = [w for w in self.active if not w.done]
            while self.queue and len(running) < self.workers and time.time() < self.soft_deadline:
                self._launch(self.queue.pop(0))
                running = [w for w in self.active if not w.done]
            if self.on_update:
                self.on_update(self)
            if not running and not self.queue:
                return
            proven_by = self.proven_optimal_by or self.infeasible_proven_by
            if proven_by:
                self._stop_all(f"stopped early: {proven_by} proved its answer")
                return
            if time.time() >= self.kill_time:
                self._stop_all("still running at the deadline; terminated")
                return
            if not running:  # queued backends but past the soft deadline
                return
            timeout = max(0.0, min(0.1, self.kill_time - time.time()))
            handles = [w.conn for w in running] + [w.process.sentinel for w in running]
            ready = set(wait(handles, timeout=timeout))
            for worker in running:
                if worker.conn in ready or worker.process.sentinel in ready:
                    self._receive(worker)
                if not worker.done and worker.process.sentinel in ready:
                    self._receive(worker)
                    if not worker.done:
                        self._finish(worker)


def presolve_for(problem: Problem, backends: Sequence[BackendLike]) -> tuple[object, Optional[dict]]:
    """Presolve once when some backend accepts a reduced problem: (presolved or None, summary).

    Never fatal: a presolve failure leaves every backend on the original problem and is reported in
    the summary's ``error``.
    """
    if not any(b.capabilities.reduced for b in backends):
        return None, None
    t0 = time.perf_counter()
    try:
        from .presolve import presolve, warm_up

        warm_up()
        presolved = presolve(problem)
    except Exception as exc:  # a presolve bug must not cost the user their answer
        return None, {"error": f"{type(exc).__name__}: {exc}"}
    info: dict = {"seconds": round(time.perf_counter() - t0, 3), "infeasible": presolved.infeasible}
    if presolved.reduced is not None:
        red = presolved.reduced
        info.update(nodes=red.num_nodes, edges=red.num_edges,
                    free_nodes=int((red.strategy_counts > 1).sum()))
    return presolved, info


def run_portfolio(problem: Problem, backends: Sequence[BackendLike], time_limit: float,
                  start: Optional[float] = None, workers: Optional[int] = None, seed: int = 0,
                  warm_start: Optional[np.ndarray] = None,
                  on_update: Optional[Callable[[Portfolio], None]] = None,
                  presolved: Optional[PlanMapping] = None) -> PortfolioResult:
    """Run ``backends`` on ``problem`` until ``start + time_limit`` and return the best verified plan.

    ``start`` is an absolute ``time.time()`` (default: now); the CLI passes the process start time so
    that loading counts against the budget. With ``presolved`` (a :class:`PlanMapping` of
    ``problem``), backends whose capabilities include ``reduced`` work on the presolved problem.
    """
    return Portfolio(problem, backends, time_limit, start, workers, seed, warm_start, on_update,
                     presolved).run()
