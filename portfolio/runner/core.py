"""The portfolio run: start every backend, verify everything, answer by the deadline.

Process model (why not a pool): every backend runs in its own forked worker process. Forking shares
the instance's numpy arrays copy-on-write, and each worker is a separate process the parent can
kill, which is what fault containment needs: a pool executor declares the whole pool broken when
one worker segfaults. The parent is a single thread with an event loop over the workers' pipes and
process sentinels; it never blocks on a worker and runs no plugin code beyond ``available()``:
``prepare()`` runs in the worker, presolve in a child of its own (see :mod:`.presolving`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Callable, Optional, Sequence

import numpy as np

from ..backend import BackendLike, Status
from ..evaluate import Evaluation, evaluate, min_usage_profile
from ..problem import Problem
from ..registry import poll_available, start_checks
from . import contain, validate
from .claims import INFEASIBLE, LOWER_BOUND, OPTIMAL, Claim, ClaimBook
from .presolving import PRESOLVE_SHARE, presolve_main, summary
from .result import BackendRun, Incumbent, PortfolioResult
from .schedule import DEFAULT_POLICY, Scheduler, core_shares, cpu_seconds, machine_cores
from .worker import PlanMapping, SharedBest, WorkerSpec, has_prepare, prepare_key, to_hint, worker_main

FALLBACK = "fallback"
"""The winner's name when the answer is the runner's own least-memory plan."""

SAFETY_FIRST = 0.1
"""For this share of the budget (at most SAFETY_WAIT seconds) after the runner starts, anytime and
exact backends wait until the quick ones (the safety net) have finished: on a loaded machine the
safety net then gets the cores to itself instead of a sliver of them."""

SAFETY_WAIT = 3.0
"""An early stop on a claim waits this long at most for quick backends (the safety net) to finish."""

EXTRA_MIN_SECONDS = 2.0
"""No extra seed copy is started with less time than this before the backends' deadline."""


def _is_safety_net(backend: BackendLike) -> bool:
    """Quick backends (neither anytime nor exact): they run first and an early stop waits for them."""
    return not backend.capabilities.anytime and not backend.capabilities.exact


def _freeze(obj: object) -> None:
    """Make the numpy arrays of an unpickled Problem (and its Capacity) read-only again, as the
    loader leaves them: numba compiles read-only and writable arrays as different types, so a
    writable copy would miss every cached kernel and compile in the worker."""
    for value in vars(obj).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        elif hasattr(value, "__dataclass_fields__"):
            _freeze(value)


def deadline_plan(start: float, time_limit: float) -> tuple[float, float, float]:
    """(backend deadline, hard-kill time, answer deadline) as absolute ``time.time()`` values.

    Backends are asked to finish ``soft`` seconds early, stragglers are killed ``hard`` seconds before
    the end, and the rest is the margin for collecting results and printing the answer.
    """
    end = start + time_limit
    soft = min(4.0, 1.2 + 0.02 * time_limit)
    hard = min(2.0, 0.8 + 0.02 * time_limit)   # a loaded machine needs ~1 s to stop and print
    return end - soft, end - hard, end


@dataclass
class _Worker:
    run: BackendRun
    backend: BackendLike
    process: mp.process.BaseProcess
    conn: Connection
    key: Optional[str]
    done: bool = False
    solve_started: float = 0.0


@dataclass
class _Presolve:
    process: mp.process.BaseProcess
    conn: Connection
    cutoff: float
    started: float


class Portfolio:
    """One portfolio run. Use :func:`run_portfolio`; this class holds the run's state."""

    def __init__(self, problem: Problem, backends: Sequence[BackendLike], time_limit: float,
                 start: Optional[float] = None, workers: Optional[int] = None, seed: int = 0,
                 warm_start: Optional[np.ndarray] = None,
                 on_update: Optional[Callable[["Portfolio"], None]] = None,
                 presolved: Optional[PlanMapping] = None, presolve: bool = False,
                 early_stop: bool = True, policy: str = DEFAULT_POLICY,
                 extra_seeds: bool = True, memory_limit: object = "default",
                 fallback: bool = True) -> None:
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ValueError(f"backend listed twice: {names}")
        self.problem, self.backends, self.time_limit = problem, list(backends), time_limit
        self.start = time.time() if start is None else start
        self.soft_deadline, self.kill_time, self.end = deadline_plan(self.start, time_limit)
        self.cores = max(1, workers or machine_cores())
        self.workers = self.cores
        self.seed, self.on_update, self.early_stop = seed, on_update, early_stop
        self.extra_seeds = extra_seeds
        self.fallback = fallback  # the reserve plan may be the answer (it always checks claims)
        # Bytes one backend (with everything it starts) may use; "default": a share of the RAM.
        self.memory_limit: Optional[int] = (contain.default_memory_limit(len(self.backends))
                                            if memory_limit == "default" else memory_limit)
        self.next_memory_check = 0.0
        self.interrupted: Optional[str] = None  # the signal that ended the run early, if any
        self.adopting, self.run_ticks = False, 0
        self.scheduler = Scheduler(policy, self.cores)
        shares = core_shares([getattr(b.capabilities, "threads", False) for b in self.backends],
                             self.cores)
        self.runs = {b.name: BackendRun(b.name, seed=seed, cores=c) for b, c in zip(self.backends, shares)}
        self.by_name = {b.name: b for b in self.backends}
        # Backends without set-up first: they start before a slow compile can hold anything up.
        self.waiting = sorted(self.backends, key=has_prepare)
        self.compiling: dict[str, str] = {}     # prepare key -> run compiling it right now
        self.copies: dict[str, int] = {}
        self.active: list[_Worker] = []
        self.claims = ClaimBook()
        self.best: Optional[np.ndarray] = None
        self.best_eval: Optional[Evaluation] = None
        self.best_backend: Optional[str] = None
        self.reserve: Optional[tuple[np.ndarray, Evaluation]] = None
        self.stopped_early: Optional[str] = None
        self.presolved: Optional[PlanMapping] = None
        self.presolve_info: Optional[dict] = None
        self.presolve_job: Optional[_Presolve] = None
        self.want_presolve = presolve  # even without reduced backends: it may settle the instance
        if presolved is not None:
            self._use_presolved(presolved, None)
        self.ctx = mp.get_context("fork")
        self.shared = SharedBest(self.ctx, problem.num_nodes)
        if warm_start is not None:
            self._consider(None, np.asarray(warm_start, dtype=np.int64), "given warm start")
            if self.best_backend is not None:
                self.best_backend = "(warm start)"

    def now(self) -> float:
        return time.time() - self.start

    # ---------------------------------------------------------------- verification
    def _consider(self, run: Optional[BackendRun], plan: object, note: str
                  ) -> tuple[Optional[str], Optional[Evaluation]]:
        """Verify a plan; keep it if it is the best. (why refused or None, its evaluation)."""
        try:
            ev = evaluate(self.problem, plan)
        except Exception as exc:  # SolutionError, or a plan no evaluator could read
            return f"invalid plan: {validate.note_text(str(exc))[:120]}", None
        if not ev.feasible:
            return (f"infeasible plan reported as feasible: usage {ev.peak_usage:,} > limit "
                    f"{ev.usage_limit:,} at t={ev.first_violation_time}"), ev
        sol = np.array(plan, dtype=np.int64)
        if run is not None and (run.best_cost is None or ev.cost < run.best_cost):
            run.best_cost, run.best_solution, run.time_to_best = ev.cost, sol, round(self.now(), 4)
            run.incumbents.append(Incumbent(round(self.now(), 4), ev.cost, run.name, note))
        if self.best_eval is None or ev.cost < self.best_eval.cost:
            self.best, self.best_eval = sol, ev
            self.best_backend = None if run is None else run.name
            self.shared.publish(sol)
        return None, ev

    def _verified_best(self) -> tuple[Optional[int], Optional[str]]:
        """The cheapest verified cost, counting the runner's reserve plan, and its source."""
        cost, source = (None, None) if self.best_eval is None else (self.best_eval.cost, self.best_backend)
        if self.reserve is not None and (cost is None or self.reserve[1].cost < cost):
            cost, source = self.reserve[1].cost, FALLBACK
        return cost, source

    def _claim(self, run: Optional[BackendRun], kind: str, value: Optional[int], exact: bool,
               source: str = "") -> None:
        self.claims.add(Claim(kind, run.name if run else source, run.backend if run else "runner",
                              value, round(self.now(), 4), exact))
        if run is not None:
            run.claims.append(self.claims.claims[-1])
        self._check_claims()

    def _check_claims(self) -> None:
        """Claims a verified plan contradicts lose their standing; their sources keep their plans."""
        cost, source = self._verified_best()
        for claim in self.claims.check(cost, source):
            run = self.runs.get(claim.source)
            if run is None:
                continue
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

    def _reject(self, run: BackendRun, reason: str) -> None:
        """The backend sent something false or malformed: its row says so. Plans it reported
        before were verified and stay eligible."""
        run.status, run.note = Status.REJECTED, reason
        run.finished = run.finished if run.finished is not None else round(self.now(), 4)

    # ---------------------------------------------------------------- the runner's own proofs
    def _own_checks(self) -> None:
        """The least-memory reserve plan, and the memory-only infeasibility proof (no compilation)."""
        plain = np.asarray(self.problem.min_usage_strategies, dtype=np.int64)
        ev = evaluate(self.problem, plain)
        if ev.feasible:
            self.reserve = (plain, ev)
            return
        floor = min_usage_profile(self.problem)
        capacity, limited = self.problem.capacity.at(self.problem.time_points)
        over = np.flatnonzero(limited & (floor > capacity))
        if len(over):
            t = int(self.problem.time_points[over[0]])
            self._claim(None, INFEASIBLE, None, True,
                        f"memory check (least usage exceeds the capacity at t={t})")

    def _use_presolved(self, pre: PlanMapping, seconds: Optional[float]) -> None:
        self.presolve_info = summary(pre, seconds or 0.0) if seconds is not None else summary(pre, 0.0)
        if pre.infeasible is not None or pre.reduced is None:
            # Presolve treats forbidden entries as hard: no forbidden-free plan. Not a proof that no
            # plan exists; every backend keeps the original problem.
            self.presolve_info["note"] = "no forbidden-free plan; backends get the original problem"
            return
        self.presolved = pre
        red = pre.reduced
        if np.all(red.strategy_counts == 1):
            refused, ev = self._consider(None, pre.expand(np.zeros(red.num_nodes, dtype=np.int64)),
                                         "presolve")
            if refused is None:
                self.best_backend = "presolve"
                self._claim(None, OPTIMAL, ev.cost, True, "presolve (nothing left to decide)")

    # ---------------------------------------------------------------- starting workers
    def _start_presolve(self) -> None:
        parent, child = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=presolve_main, args=(self.problem, child),
                                   name="portfolio-presolve", daemon=False)
        process.start()
        child.close()
        left = max(0.0, self.soft_deadline - time.time())
        self.presolve_job = _Presolve(process, parent, time.time() + PRESOLVE_SHARE * left, self.now())

    def _blocked(self, backend: BackendLike) -> Optional[str]:
        """Why a waiting backend cannot start yet, or None."""
        if not _is_safety_net(backend) and time.time() < self.safety_until:
            pending = any(_is_safety_net(b) for b in self.waiting)
            running = any(not w.done and _is_safety_net(w.backend) for w in self.active)
            if pending or running:
                return "waiting for the safety net (quick backends first)"
        if backend.capabilities.reduced and self.presolve_job is not None:
            return "waiting for presolve"
        key = prepare_key(backend)
        if key is not None and key in self.compiling:
            return f"waiting for compilation by {self.compiling[key]}"
        return None

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
            if time.time() >= self.soft_deadline:
                return
            run = self.runs[backend.name]
            why = self._blocked(backend)
            if why:
                run.note = why
                continue
            self.waiting.remove(backend)
            ok, reason = poll_available(backend)
            if not ok:
                run.status, run.note = Status.UNSUPPORTED, f"not available: {reason}"
                continue
            run.note = ""
            self._launch(backend, run)

    def _launch(self, backend: BackendLike, run: BackendRun) -> None:
        warm = self.best if backend.capabilities.warm_start else None
        problem, mapping = self.problem, None
        if self.presolved is not None and backend.capabilities.reduced:
            problem, mapping = self.presolved.reduced, self.presolved
            warm = to_hint(mapping, warm)
        elif backend.capabilities.reduced and self.want_presolve and self.presolve_info is None:
            run.note = "presolve not ready: original problem"
        spec = WorkerSpec(backend, problem, self.soft_deadline, run.seed, warm, self.start,
                          self.shared if backend.capabilities.warm_start else None, mapping, run.cores)
        parent_conn, child_conn = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=worker_main, args=(spec, child_conn),
                                   name=f"portfolio-{run.name}", daemon=False)
        process.start()
        child_conn.close()  # only the worker holds its end, so its death reads as EOF here
        key = prepare_key(backend)
        run.status, run.started = Status.RUNNING, round(self.now(), 4)
        run.phase = "prepare" if key else "solve"
        if key:
            self.compiling[key] = run.name
        self.active.append(_Worker(run, backend, process, parent_conn, key,
                                   solve_started=time.time()))
        self.scheduler.started(process.pid, run.cores)

    def _launch_extra(self) -> None:
        """Idle cores while budget is left: another copy of a randomized backend, new seed."""
        if not self.extra_seeds or self.waiting or self.presolve_job is not None:
            return
        if self.soft_deadline - time.time() < EXTRA_MIN_SECONDS:
            return
        live = [w for w in self.active if not w.done]
        if sum(w.run.cores for w in live) >= self.cores:
            return
        candidates = [w.backend for w in live
                      if getattr(w.backend.capabilities, "randomized", False) and w.run.phase == "solve"]
        if not candidates:
            return
        backend = min(candidates, key=lambda b: (self.copies.get(b.name, 0), b.name))
        setup = self.runs[backend.name].prepare_seconds or 0.0  # a copy loads the JIT cache again
        if self.soft_deadline - time.time() < EXTRA_MIN_SECONDS + setup:
            return
        k = self.copies.get(backend.name, 0) + 1
        self.copies[backend.name] = k
        run = BackendRun(f"{backend.name}+{k}", backend=backend.name, seed=self.seed + k, cores=1,
                         note=f"extra copy on an idle core, seed {self.seed + k}")
        self.runs[run.name] = run
        self._launch(backend, run)

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
            run.prepare_seconds, run.phase = round(fields[0], 3), "solve"
            worker.solve_started = time.time()
            if fields[1]:
                run.note = f"prepare failed: {fields[1]}"
            self._release(worker)
        elif kind == "incumbent":
            refused, _ = self._consider(run, fields[1], fields[2])
            if refused:
                self._kill(worker)
                self._reject(run, refused)
        elif kind == "error":
            run.status, run.note = Status.ERROR, f"exception: {fields[0]}"
            run.finished = round(self.now(), 4)
        else:
            try:
                result = validate.result_fields(fields[0])
            except validate.MessageError as exc:
                self._reject(run, str(exc))
                return
            self._accept_result(worker, result)

    def _accept_result(self, worker: _Worker, result: validate.Result) -> None:
        run = worker.run
        run.finished = round(self.now(), 4)
        notes = ([result.note] if result.note else ([run.note] if run.note else [])) + [
            f"dropped: {p}" for p in result.problems]
        run.note = "; ".join(notes)
        ev = None
        if result.solution is not None:
            refused, ev = self._consider(run, result.solution, "final")
            if refused:
                self._reject(run, refused)
                return
        run.status = result.status
        exact = bool(worker.backend.capabilities.exact)
        if result.status is Status.OPTIMAL:
            run.claimed_optimal, run.lower_bound = True, ev.cost
            self._claim(run, OPTIMAL, ev.cost, exact)
        if result.lower_bound is not None:
            run.lower_bound = max(result.lower_bound, run.lower_bound or result.lower_bound)
            self._claim(run, LOWER_BOUND, result.lower_bound, exact)
        if result.status is Status.INFEASIBLE_PROVEN:
            self._claim(run, INFEASIBLE, None, exact)

    def _release(self, worker: _Worker) -> None:
        if worker.key is not None and self.compiling.get(worker.key) == worker.run.name:
            del self.compiling[worker.key]

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
        late = message is None and (force or time.time() >= job.cutoff)
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
                _freeze(pre.reduced)
            self._use_presolved(pre, message[2])
        else:
            self.presolve_info = {"error": validate.note_text(str(message[1]).strip().splitlines()[-1])}

    # ---------------------------------------------------------------- ending workers
    def _sample_cpu(self, worker: _Worker) -> None:
        cpu = cpu_seconds(worker.process.pid)
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
            known = {w.process.pid for w in self.active}
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
        if limit is None or time.time() < self.next_memory_check:
            return
        self.next_memory_check = time.time() + contain.MEMORY_POLL
        for worker in live:
            used = contain.tree_memory(worker.process.pid, limit)
            if used is None or used <= limit or worker.done:
                continue
            self._receive(worker)  # keep what it sent before
            if worker.done:
                continue
            self._kill(worker)
            self._receive(worker)
            if not worker.done:
                self._finish(worker)
            if worker.run.status in (Status.RUNNING, Status.CRASHED):
                worker.run.status = Status.ERROR
                worker.run.note = (f"memory limit: used {contain.mib(used)}, more than the "
                                   f"{contain.mib(limit)} a backend may use; ended")

    def _stop_all(self, note: str) -> None:
        """Collect what running workers sent, then terminate them with status TIMEOUT: every group
        is killed first and reaped after, so on a loaded machine the deaths overlap."""
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
            self._receive(worker)
            if not worker.done:
                self._finish(worker)
            if worker.run.status in (Status.RUNNING, Status.CRASHED):
                worker.run.status = Status.TIMEOUT
                worker.run.note = (f"still in prepare() (set-up/compilation) when {note}"
                                   if phases[id(worker)] == "prepare" else f"still running when {note}")

    # ---------------------------------------------------------------- main loop
    def _safety_net_done(self) -> bool:
        """The quick backends (neither anytime nor exact) have had their say: each finished, is
        still setting up, or has been solving for ``SAFETY_WAIT`` seconds already."""
        return not any(not w.done and w.run.phase == "solve" and _is_safety_net(w.backend)
                       and time.time() - w.solve_started < SAFETY_WAIT for w in self.active)

    def _stop_reason(self) -> Optional[str]:
        """Why the run may end now: a proof of the runner's own, or a claim of an exact backend once
        the safety net has had its say."""
        if not self.early_stop:
            return None
        cost, _ = self._verified_best()
        reason = self.claims.stop_reason(cost)
        if reason is None:
            return None
        own = any(c.backend == "runner" for c in self.claims.standing())
        return reason if own or self._safety_net_done() else None

    def _on_signal(self, signum: int, frame: object) -> None:
        self.interrupted = signal.Signals(signum).name

    def _catch_signals(self) -> dict:
        """SIGINT/SIGTERM end the run early with the best verified plan (main thread only)."""
        saved = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                saved[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread: the caller handles signals
                pass
        return saved

    def run(self) -> PortfolioResult:
        self.safety_until = time.time() + min(SAFETY_WAIT, SAFETY_FIRST * self.time_limit)
        saved = self._catch_signals()
        # Orphans of workers come to this process, not to init, so that they can be ended too.
        self.run_ticks = contain.now_ticks()
        was_subreaper = contain.is_subreaper()
        self.adopting = was_subreaper or contain.set_subreaper(True)
        try:
            start_checks(self.backends)
            self._own_checks()
            if self.want_presolve and self.presolve_info is None and self.presolved is None:
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
            self._launch_extra()
            live = [w for w in self.active if not w.done]
            if self.on_update:
                self.on_update(self)
            if self.interrupted:
                self._stop_all(f"the run was interrupted ({self.interrupted})")
                return
            self._check_memory(live)
            live = [w for w in live if not w.done]
            reason = self._stop_reason()
            if reason:
                self.stopped_early = reason
                self._stop_all(f"the run stopped early: {reason}")
                return
            if not live and self.presolve_job is None and (
                    not self.waiting or time.time() >= self.soft_deadline):
                return
            if time.time() >= self.kill_time:
                self._stop_all("the deadline came; terminated")
                return
            if not slices_over and time.time() >= self.soft_deadline - 0.2:
                self.scheduler.resume_all()
                slices_over = True
            for w in live:
                self._sample_cpu(w)
            self.scheduler.tick(time.time(), [(w.process.pid, w.run.cpu_seconds or 0.0) for w in live])
            handles = [w.conn for w in live] + [w.process.sentinel for w in live]
            if self.presolve_job is not None:
                handles += [self.presolve_job.conn, self.presolve_job.process.sentinel]
            timeout = max(0.0, min(0.1, self.kill_time - time.time()))
            ready = set(wait(handles, timeout=timeout)) if handles else time.sleep(timeout) or set()
            for worker in live:
                if worker.conn in ready or worker.process.sentinel in ready:
                    self._receive(worker)
                if not worker.done and worker.process.sentinel in ready:
                    self._receive(worker)
                    if not worker.done:
                        self._finish(worker)

    def _result(self) -> PortfolioResult:
        for run in self.runs.values():
            if run.status is Status.PENDING:
                why = run.note or "the time was up before it could start"
                run.note = f"never started: {why}"
        self._check_claims()
        solution, evaluation, winner = self.best, self.best_eval, self.best_backend
        if self.fallback and self.reserve is not None and (
                evaluation is None or self.reserve[1].cost < evaluation.cost):
            solution, evaluation, winner = self.reserve[0], self.reserve[1], FALLBACK
        cost = None if evaluation is None else evaluation.cost
        winner_backend = self.runs[winner].backend if winner in self.runs else "runner"
        proof = self.claims.verdict(cost, winner, winner_backend)
        infeasible_by = None
        if solution is None:
            standing = [c for c in self.claims.infeasible_claims() if c.exact]
            infeasible_by = standing[0].source if standing else None
        return PortfolioResult(
            problem=self.problem.name, time_limit=self.time_limit, runs=self.runs,
            solution=solution, evaluation=evaluation, winner=winner, elapsed=self.now(),
            infeasible_proven_by=infeasible_by, proof=proof, claims=list(self.claims.claims),
            stopped_early=self.stopped_early, presolve=self.presolve_info, interrupted=self.interrupted,
            schedule={"policy": self.scheduler.policy, "cores": self.cores},
        )


def run_portfolio(problem: Problem, backends: Sequence[BackendLike], time_limit: float,
                  start: Optional[float] = None, workers: Optional[int] = None, seed: int = 0,
                  warm_start: Optional[np.ndarray] = None,
                  on_update: Optional[Callable[[Portfolio], None]] = None,
                  presolved: Optional[PlanMapping] = None, presolve: bool = False,
                  early_stop: bool = True, policy: str = DEFAULT_POLICY,
                  extra_seeds: bool = True, memory_limit: object = "default",
                  fallback: bool = True) -> PortfolioResult:
    """Run ``backends`` on ``problem`` until ``start + time_limit`` and return the best verified plan.

    ``start`` is an absolute ``time.time()`` (default: now); the CLI passes the process start time so
    that loading counts against the budget. ``workers`` is the number of cores to share (default:
    this process's CPU affinity); every backend starts at once whatever their number. With
    ``presolved`` (a :class:`PlanMapping` of ``problem``) or ``presolve=True`` (presolve in a child
    under the deadline), backends declaring ``reduced`` work on the presolved problem.
    ``early_stop=False`` keeps the run going to the deadline whatever is claimed or proven.
    ``memory_limit`` caps each backend's memory in bytes (None: no cap; default: a share of the RAM,
    see :func:`.contain.default_memory_limit`). SIGINT/SIGTERM end the run at once with the best
    verified plan; ``PortfolioResult.interrupted`` names the signal. ``fallback`` (default True)
    makes the runner's own least-memory plan the answer when no backend found a cheaper one, so that
    a run always answers; ``bench`` turns it off so that a configuration's row is its backends' own.
    """
    return Portfolio(problem, backends, time_limit, start, workers, seed, warm_start, on_update,
                     presolved, presolve, early_stop, policy, extra_seeds, memory_limit,
                     fallback).run()
