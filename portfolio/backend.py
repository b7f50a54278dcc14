"""The contract between the portfolio and a solver backend.

A backend is any object with a ``name``, a one-line ``description``, ``capabilities``, an
``available()`` check and a ``solve(problem, deadline, seed, warm_start, report)`` method. Subclassing
:class:`Backend` is the easy way to get one. Backends know nothing of processes, terminals or the CLI:
they receive a problem and a deadline, stream improving plans through ``report`` and return a
:class:`SolveResult`. The runner re-verifies everything they say.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional, Protocol, runtime_checkable

import numpy as np

from .problem import Problem


class Status(str, Enum):
    """How a backend's run ended (the first six may be returned by a backend)."""

    OPTIMAL = "optimal"                       # solution proven optimal
    FEASIBLE = "feasible"                     # a feasible solution, optimality not proven
    INFEASIBLE_PROVEN = "infeasible-proven"   # proof that no feasible plan exists
    NO_SOLUTION = "no-solution"               # gave up without a feasible plan
    UNSUPPORTED = "unsupported"               # cannot handle this instance (size, shape); says why
    ERROR = "error"                           # failed (the runner also uses it for exceptions)
    # Set only by the runner:
    TIMEOUT = "timeout"                       # still running at the deadline, terminated
    CRASHED = "crashed"                       # the worker process died (signal, abort, exit)
    REJECTED = "rejected"                     # returned or reported something that failed verification
    PENDING = "pending"                       # waiting for a free worker
    RUNNING = "running"


@dataclass(frozen=True)
class Capabilities:
    """What the runner may expect of a backend."""

    exact: bool = False          # can prove optimality (and infeasibility)
    anytime: bool = False        # reports improving plans while it runs
    warm_start: bool = False     # uses a given starting plan (and fresh incumbents, via report.best())
    reduced: bool = False        # accepts a presolved (multi-interval, time-varying capacity) problem
    max_nodes: Optional[int] = None  # refuses larger instances with Status.UNSUPPORTED
    threads: bool = False        # uses several cores: give it spare ones (it reads allotted_cores())
    randomized: bool = False     # another seed searches differently: worth a copy on an idle core

    def labels(self) -> list[str]:
        out = [name for name in ("exact", "anytime", "warm_start", "reduced", "threads", "randomized")
               if getattr(self, name)]
        if self.max_nodes is not None:
            out.append(f"nodes<={self.max_nodes:,}")
        return out


@dataclass
class SolveResult:
    """A backend's final word. ``solution`` is an int64 array, or None."""

    status: Status
    solution: Optional[np.ndarray] = None
    lower_bound: Optional[int] = None
    note: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def no_nodes_result(num_nodes: int) -> Optional[SolveResult]:
    """The answer when there is nothing to decide (the empty plan), else None: the search kernels
    draw among n >= 1 nodes, so their backends return this first."""
    if num_nodes:
        return None
    return SolveResult(Status.FEASIBLE, np.zeros(0, dtype=np.int64), note="no nodes")


LOW, NORMAL = "low", "normal"
DEMANDS = (NORMAL, LOW)
"""CPU demand levels a backend may declare through ``report.demand`` (see :class:`Reporter`)."""


class Reporter(Protocol):
    """What a backend gets as ``report``: call it with each improving plan.

    ``bound`` and ``demand`` are newer: call them through :func:`report_bound` and
    :func:`declare_demand`, which accept a reporter without them (a test's own, say)."""

    def __call__(self, solution: np.ndarray, note: str = "") -> None: ...

    def best(self) -> Optional[np.ndarray]:
        """The best verified plan the portfolio knows right now (from any backend), or None."""
        ...

    def bound(self, value: Optional[int], note: str = "") -> None:
        """A proven lower bound on the optimal cost, found during the run (a claim, checked like
        ``SolveResult.lower_bound``; an exact backend's bound that meets a verified cost ends the
        run). Send each improvement (None is ignored); the runner records them with their time
        (gap over time)."""
        ...

    def demand(self, level: str, why: str = "") -> None:
        """How much CPU the phase starting now deserves: ``"low"`` (a phase that rarely pays, such
        as an exact backend's LNS windows when its full model does not fit) or ``"normal"``. The
        runner gives a low-demand worker the lowest priority (nice 19): it runs on cores nobody
        else wants. (A worker cannot raise its priority again without privileges: the runner
        treats ``"low"`` as final for the run.)"""
        ...


def report_bound(report: Reporter, value: int, note: str = "") -> None:
    """``report.bound(value, note)`` when the reporter has it (a no-op otherwise)."""
    send = getattr(report, "bound", None)
    if send is not None:
        send(value, note)


def declare_demand(report: Reporter, level: str, why: str = "") -> None:
    """``report.demand(level, why)`` when the reporter has it (a no-op otherwise)."""
    send = getattr(report, "demand", None)
    if send is not None:
        send(level, why)


class NullReporter:
    """A reporter for direct calls outside the runner: remembers plans, bounds and demands, shares
    nothing."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, np.ndarray, str]] = []
        self.bounds: list[tuple[float, int, str]] = []
        self.demands: list[tuple[str, str]] = []

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        self.reports.append((time.monotonic(), np.array(solution, dtype=np.int64), note))

    def best(self) -> Optional[np.ndarray]:
        return None

    def bound(self, value: Optional[int], note: str = "") -> None:
        if value is not None:
            self.bounds.append((time.monotonic(), value, note))

    def demand(self, level: str, why: str = "") -> None:
        self.demands.append((level, why))


@runtime_checkable
class BackendLike(Protocol):
    name: str
    description: str
    capabilities: Capabilities

    def available(self) -> tuple[bool, str]: ...

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult: ...


class Backend:
    """Convenience base class. Override ``solve``; set ``name``, ``description``, ``capabilities``.

    ``deadline`` is an absolute ``time.time()`` value: return (or at least report your best plan)
    before it. ``seed`` makes randomised backends reproducible.

    Clocks: the runner keeps its deadlines on ``time.monotonic()`` (system-wide on Linux, so the
    value it hands a forked worker holds there) and turns the backend's into this wall-clock value
    inside the worker, right before ``solve``: no wall-clock value crosses a process boundary. Read
    it once, through :func:`time_left`, and keep your own durations and inner deadlines on
    ``time.monotonic()`` (``stop = time.monotonic() + time_left(deadline)``), which a wall-clock step
    cannot move.
    """

    name: str = ""
    description: str = ""
    capabilities: Capabilities = Capabilities()

    def available(self) -> tuple[bool, str]:
        """(True, "") when usable here; otherwise (False, why), e.g. a missing optional dependency."""
        return True, ""

    def prepare(self) -> None:
        """Optional one-time set-up, run in the backend's worker process before ``solve``.

        Compile JIT code here (numba, with ``cache=True``): the runner starts one backend per
        ``prepare`` implementation first and the others sharing it once it returned, so they load
        the on-disk cache instead of compiling again. The time counts against the run's budget; a
        ``prepare`` that hangs or raises costs only this backend's row.
        """

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        raise NotImplementedError


CORES_ENV = "PORTFOLIO_CORES"
"""Environment variable through which the runner tells a worker how many cores it was given."""


def allotted_cores() -> int:
    """How many cores this backend may use (threads of a multi-threaded engine such as CP-SAT).

    The runner sets ``PORTFOLIO_CORES`` in each worker; outside the runner this is the number of
    cores this process may run on (its CPU affinity). Never less than 1.
    """
    value = os.environ.get(CORES_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def time_left(deadline: float) -> float:
    """Seconds until the run's ``deadline`` (negative once passed): the one place a backend reads
    the wall clock; turn the result into a ``time.monotonic()`` deadline of its own."""
    return deadline - time.time()


BackendFactory = Callable[[], BackendLike]
