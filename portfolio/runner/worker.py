"""The worker side: one forked process per backend run, and the protocol back to the parent.

A worker sends plain data only, so the parent never unpickles a plugin's objects:
``("prepared", seconds, error_or_None)`` once ``prepare()`` returned (or raised),
``("incumbent", seconds_since_start, int64_plan, note)`` for improving plans and
``("bound", seconds_since_start, bound, note)`` for improving lower bounds (both throttled),
``("demand", "low"|"normal", why)`` when the backend's CPU demand changes, then
``("done", {"status", "solution", "lower_bound", "note"})`` or ``("error", traceback_text)`` (the
whole traceback: the parent shows its last line and keeps the text, ``BackendRun.traceback``).
In deterministic mode plans and bounds travel only at exchange points instead
(``("point", k, plan, note, bound, bound_note)``, then ``("held", ...)`` before the final message:
:mod:`.points`).
``prepare()`` (JIT compilation, for instance) runs here, under the deadline, never in the parent.
"""

from __future__ import annotations

import ctypes  # imported here, not in the worker: an import after fork can deadlock
import multiprocessing as mp
import numbers
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Callable, Optional, Protocol

import numpy as np

from ..backend import CORES_ENV, Backend, BackendLike, SolveResult
from ..prices import SharedPrices
from ..problem import Problem
from . import contain
from .priceboard import PriceBoard

REPORT_INTERVAL = 0.25
"""Seconds between two incumbents sent by one worker (the latest pending one is sent at the end)."""


class PlanMapping(Protocol):
    """What the runner needs of a presolve result (see :mod:`portfolio.presolve`)."""

    reduced: Optional[Problem]
    infeasible: Optional[str]

    def expand(self, reduced_plan: np.ndarray) -> np.ndarray: ...

    def restrict(self, original_plan: np.ndarray) -> Optional[np.ndarray]: ...


def has_prepare(backend: BackendLike) -> bool:
    prepare = getattr(type(backend), "prepare", None)
    return prepare is not None and prepare is not Backend.prepare


def prepare_key(backend: BackendLike) -> Optional[str]:
    """Backends sharing one ``prepare`` implementation (one JIT cache) share one key."""
    if not has_prepare(backend):
        return None
    prepare = getattr(type(backend), "prepare")
    return f"{getattr(prepare, '__module__', '?')}.{getattr(prepare, '__qualname__', '?')}"


def to_hint(mapping: Optional[PlanMapping], plan: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """A plan of the original problem as a warm start for a backend on ``mapping``'s reduced one:
    the exact counterpart when there is one, else a close plan (``project``), never None."""
    if plan is None or mapping is None:
        return plan
    project = getattr(mapping, "project", None)
    return project(plan) if project is not None else mapping.restrict(plan)


class SharedBest:
    """The portfolio's best verified plan in shared memory, readable by every worker.

    The parent never sends plans down a pipe (a blocking send to a worker that is itself blocked
    sending an incumbent would deadlock both); it writes here, seqlock style: the version is odd while
    the plan is being written, and readers retry when the version moved during their copy.

    ``settled`` is deterministic mode's counter: the last exchange point the parent settled (the
    plan is that point's incumbent, written before the counter moves; workers waiting at a point
    watch it, see :mod:`.points`).
    """

    def __init__(self, ctx: mp.context.BaseContext, n: int) -> None:
        self.settled = ctx.RawValue("q", 0)
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


class PipeReporter:
    """The ``report`` a backend gets inside a worker: throttled incumbents out, shared best in.

    A plan held back by the throttle is sent by a small flusher thread once the interval has passed,
    so a backend that goes quiet (or is killed later) does not lose its last improvement.
    """

    def __init__(self, conn: Connection, t0: float, shared: Optional[SharedBest],
                 mapping: Optional[PlanMapping] = None, price_board: Optional[PriceBoard] = None,
                 writer: str = "", price_slot: int = 0) -> None:
        self.conn, self.t0, self.shared, self.mapping = conn, t0, shared, mapping
        self.price_board, self.writer = price_board, writer or "backend"
        self.price_slot = price_slot   # this worker's file on the board (see .priceboard)
        self.pending: Optional[tuple[np.ndarray, str]] = None
        self.pending_bound: Optional[tuple[object, str]] = None
        self.last_sent = 0.0
        self.seen = 0
        self.latest_best: Optional[np.ndarray] = None
        self.lock = threading.Lock()
        self.closed = False
        self.work = None   # deterministic mode's budget (portfolio.work): a timed run has none
        self.options: dict = {}   # the backend's resolved options (set by worker_main)
        threading.Thread(target=self._flusher, name="portfolio-flusher", daemon=True).start()

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        plan = plain_plan(solution, self.mapping)
        with self.lock:
            self.pending = (plan, str(note))
            if time.monotonic() - self.last_sent >= REPORT_INTERVAL:
                self._send_pending()

    def bound(self, value: object, note: str = "") -> None:
        """An improving lower bound: throttled like plans (the latest one pending is sent)."""
        if value is None:
            return
        with self.lock:
            self.pending_bound = (plain_bound(value), str(note))
            if time.monotonic() - self.last_sent >= REPORT_INTERVAL:
                self._send_pending()

    def demand(self, level: str, why: str = "") -> None:
        self.send(("demand", level if isinstance(level, str) else repr(level)[:40], str(why)),
                  final=False)

    def _send_pending(self) -> None:
        if self.closed:
            return
        sent = False
        if self.pending is not None:
            plan, note = self.pending
            self.pending = None
            self.conn.send(("incumbent", time.monotonic() - self.t0, plan, note))
            sent = True
        if self.pending_bound is not None:
            value, note = self.pending_bound
            self.pending_bound = None
            self.conn.send(("bound", time.monotonic() - self.t0, value, note))
            sent = True
        if sent:
            self.last_sent = time.monotonic()

    def _flusher(self) -> None:
        while not self.closed:
            time.sleep(REPORT_INTERVAL / 2)
            with self.lock:
                if ((self.pending is not None or self.pending_bound is not None)
                        and time.monotonic() - self.last_sent >= REPORT_INTERVAL):
                    self._send_pending()

    def flush(self) -> None:
        with self.lock:
            self._send_pending()

    def send(self, message: tuple, final: bool = True) -> None:
        """Send a message after any pending plan; nothing is sent after a final one."""
        with self.lock:
            self._send_pending()
            if not self.closed:
                self.conn.send(message)
            self.closed = self.closed or final

    def publish_prices(self, key: str, prices: np.ndarray, bound: int, note: str = "") -> None:
        """Put ``prices`` on the run's price board (:mod:`.priceboard`), where they outlive this
        worker; nothing without a board. Prices that do not fit ``key`` raise ValueError."""
        if self.price_board is None:
            return
        if not isinstance(bound, numbers.Integral) or isinstance(bound, (bool, np.bool_)):
            raise ValueError(f"the bound of published prices must be an integer, got {bound!r}")
        source = f"{self.writer} at {time.monotonic() - self.t0:.1f} s"
        self.price_board.publish(self.price_slot, str(key), prices, int(bound),
                                 f"{source}: {note}" if note else source)

    def shared_prices(self, key: str) -> Optional[SharedPrices]:
        """The board's prices of ``key`` with the highest certified bound, or None."""
        return None if self.price_board is None else self.price_board.read(str(key))

    def best(self) -> Optional[np.ndarray]:
        if self.shared is not None:
            self.seen, plan = self.shared.read(self.seen)
            if plan is not None:
                self.latest_best = to_hint(self.mapping, plan)
        return self.latest_best


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the runner dies (a worker in its own process group
    would otherwise outlive a runner killed with SIGKILL). No-op elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the request took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass


def plain_bound(value: object) -> object:
    """The bound as plain data for the pipe (the parent validates it); odd objects become text."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return value if value is None else bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return repr(value)[:80]


def plain_plan(solution: object, mapping: Optional[PlanMapping]) -> object:
    """A plan as plain data for the pipe, never silently changed: one rule for reported and returned
    plans. Integer plans become int64 (expanded to the original problem with a ``mapping``); any
    other plan (floats, booleans, mixed objects) is sent as it is, as plain numbers, and refused by the
    parent's evaluator, which names the first non-integer choice."""
    arr = np.asarray(solution) if not isinstance(solution, np.ndarray) else solution
    if arr.dtype.kind in "iu" and arr.ndim == 1:
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            return arr.copy()  # out of range: the evaluator says so
        plan = np.array(arr, dtype=np.int64, copy=True)
        return mapping.expand(plan) if mapping is not None else plan
    if arr.dtype.kind in "fb":
        return arr.copy()
    items = arr.tolist() if arr.dtype != object or arr.ndim == 1 else list(arr.ravel())
    if not isinstance(items, list):
        items = [items]
    return [x if isinstance(x, (int, float)) and not isinstance(x, bool) else float("nan") for x in items]


def _plain_result(result: object, mapping: Optional[PlanMapping]) -> dict:
    if not isinstance(result, SolveResult):
        raise TypeError(f"solve() returned {type(result).__name__}, expected SolveResult")
    status = getattr(result.status, "value", result.status)
    solution = None if result.solution is None else plain_plan(result.solution, mapping)
    return {"status": status if isinstance(status, str) else repr(status)[:80],
            "solution": solution, "lower_bound": plain_bound(result.lower_bound),
            "note": result.note if isinstance(result.note, str) else repr(result.note)[:300],
            "safety_net": result.safety_net is True}


@dataclass
class WorkerSpec:
    """What one worker runs: set in the parent, inherited through fork."""

    backend: BackendLike
    problem: Problem
    deadline: float      # time.monotonic() (system-wide on Linux: the parent's value holds here)
    seed: int
    warm_start: Optional[np.ndarray]
    t0: float            # the run's start, time.monotonic()
    shared: Optional[SharedBest]
    mapping: Optional[PlanMapping]
    cores: int
    reporter: Optional[Callable[[Connection], "PipeReporter"]] = None
    """Deterministic mode's reporter for the worker's end of the pipe (:mod:`.points`); None: the
    timed run's :class:`PipeReporter`."""
    prices: Optional[PriceBoard] = None
    """The run's price board (:mod:`.priceboard`); None in deterministic mode."""
    price_slot: int = 0
    """The worker's slot on the board (its number in the run, modulo ``MAX_WRITERS``)."""
    options: Optional[dict] = None
    """The backend's options for this run, every declared one resolved (``report.options``)."""
    fresher: bool = True
    """Take the portfolio's best plan as the warm start when one is there at ``solve`` time (False:
    a backend that starts cold in a re-solve keeps its ``warm_start``)."""
    nice: int = 0
    """Nice levels the worker adds to its own at its start, before anything else (its CPU weight,
    :mod:`.schedule`): what it starts inherits them."""
    control: Optional[Connection] = None
    """An early start (its set-up while presolve runs): after ``prepare`` the worker waits here for
    ``("go", presolved_file_or_None, warm_start)`` and solves the presolved problem read from that
    file (None: the original one, ``problem``)."""


def freeze(obj: object) -> None:
    """Make the numpy arrays of an unpickled Problem (and its Capacity) read-only again, as the
    loader leaves them: numba compiles read-only and writable arrays as different types, so a
    writable copy would miss every cached kernel and compile in the worker."""
    for value in vars(obj).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        elif hasattr(value, "__dataclass_fields__"):
            freeze(value)


def _await_problem(spec: "WorkerSpec", reporter: "PipeReporter") -> tuple[Problem, object]:
    """An early-started worker's problem and warm start, once the parent says go: the presolved
    problem from the file it names (plans then map back through it), else the original."""
    import pickle

    message = spec.control.recv()   # EOFError when the parent is gone: the worker ends
    _, path, warm = message
    if path is None:
        return spec.problem, warm
    with open(path, "rb") as fh:
        pre = pickle.load(fh)
    pre.original = spec.problem
    if pre.reduced is not None:
        freeze(pre.reduced)
    reporter.mapping = pre
    return pre.reduced, warm


def wall_deadline(monotonic_deadline: float) -> float:
    """The backend contract's deadline (a ``time.time()`` value) for a ``time.monotonic()`` one, read
    off both clocks once, right before ``solve``: a wall-clock step before this moment cannot move the
    deadline, and the backend turns it back into a monotonic one with ``backend.time_left``."""
    return time.time() + (monotonic_deadline - time.monotonic())


def worker_main(spec: WorkerSpec, conn: Connection) -> None:
    """Body of a worker process: set up, run one backend and send everything back.

    With a ``mapping`` the backend works on the presolved problem; every plan it reports or returns is
    expanded to the original problem here, before the parent verifies it.
    """
    os.setpgrp()  # own process group: a kill at the deadline also reaches programs it started
    if spec.nice > 0:   # its CPU weight (.schedule), before it starts anything
        try:
            os.nice(spec.nice)
        except OSError:
            pass
    die_with_parent()
    contain.isolate_stdout()      # nothing the backend prints reaches the answer on stdout
    contain.become_subreaper()    # whatever it starts stays in this tree ...
    contain.mark_worker()         # ... and is marked, for the parent's sweep
    os.environ[CORES_ENV] = str(max(1, spec.cores))
    reporter = (spec.reporter(conn) if spec.reporter is not None
                else PipeReporter(conn, spec.t0, spec.shared, spec.mapping, spec.prices,
                                  getattr(spec.backend, "name", ""), spec.price_slot))
    reporter.options = dict(spec.options or {})
    try:
        if has_prepare(spec.backend):
            t = time.perf_counter()
            error = None
            try:
                spec.backend.prepare()
            except Exception:  # noqa: BLE001 -- told to the parent; solve may still work
                error = traceback.format_exc()
            reporter.send(("prepared", time.perf_counter() - t, error), final=False)
        problem, warm = spec.problem, spec.warm_start
        if spec.control is not None:   # set up early: the problem comes when the parent says go
            problem, warm = _await_problem(spec, reporter)
        if spec.shared is not None and spec.fresher:
            fresher = reporter.best()  # the portfolio may have found better while we set up
            warm = fresher if fresher is not None else warm
        result = spec.backend.solve(problem, wall_deadline(spec.deadline), spec.seed, warm, reporter)
        reporter.send(("done", _plain_result(result, reporter.mapping)))
    except BaseException:  # noqa: BLE001 -- everything goes back to the parent as text
        reporter.send(("error", traceback.format_exc()))
    finally:
        contain.kill_own_descendants()  # ... and ends with it
        conn.close()
