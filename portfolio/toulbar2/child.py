"""Every toulbar2 solve runs in a forked child that is stopped at its limit and killed soon after;
several children may run at once (:func:`run_children`).

Why a child: toulbar2 keeps global state (one network per process), and its own timer counts CPU
time, which runs slower than the wall clock on a busy machine. The parent here keeps the clock:
once the child says its search started (:func:`started_search`, after posting), it gets SIGVTALRM
at the search's limit (toulbar2's handler then ends the search with its best assignment), and it
is killed ``KILL_GRACE`` later if it has not answered. A killed child gives nothing, never a wrong
answer.

The search limit is counted on the wall clock (one child at a time: the engine's behaviour since
issue 21), or, with ``cpu_limits``, in CPU seconds of the child (``utime + stime`` from
``/proc/PID/stat``, polled every ``CPU_POLL`` s after the child said "posted"): children that
share the cores then each get about the CPU one child alone gets, whatever runs beside them. Their
wall-clock allowances (the post, the search) are stretched by ``stretch`` as a safety cap, and
nothing ever runs past ``cap``. Where ``/proc`` cannot be read, the child's limit is the wall
clock's, unstretched.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, Callable, Optional, Sequence

from portfolio.procstat import cpu_seconds

KILL_GRACE = 1.0
"""A child still running this long after toulbar2's own limit (plus the time it takes to post the
network, estimated from the last child) is killed; toulbar2 normally returns by itself with its best
assignment before that."""

CPU_POLL = 0.1
"""Seconds between two readings of a child's CPU time (CPU-time limits only)."""

_SEND: Optional[Callable] = None
"""In a child: sends a message to the parent (set by :func:`_child_main`)."""


def started_search() -> None:
    """Tell the parent that the network is posted and toulbar2's search starts now (its stop
    counts from here); a no-op outside a child."""
    if _SEND is not None:
        _SEND(("posted", None))


def _child_main(conn: Any, target: Callable, args: tuple) -> None:
    global _SEND
    _SEND = conn.send
    try:
        conn.send(("ok", target(*args)))
    except BaseException as exc:  # noqa: BLE001 -- the parent reads every outcome
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


@dataclass
class ChildJob:
    """One solve to run in a child: ``target(*args)``, killed ``limit`` s after its start if it
    never says "posted"; ``search``: its search limit after "posted"; ``cap``: a
    ``time.monotonic()`` value it never runs past (see :func:`run_in_child`)."""

    target: Callable
    args: tuple
    limit: float
    search: Optional[float] = None
    cap: Optional[float] = None


@dataclass
class _Running:
    """A started child and its clocks (parent side)."""

    job: ChildJob
    proc: Any
    recv: Any
    start: float
    end: float                          # kill at (monotonic)
    alarm: Optional[float] = None       # SIGVTALRM at (monotonic), once the search started
    cpu0: Optional[float] = None        # the child's CPU seconds when it said "posted"
    outcome: Optional[tuple] = field(default=None)


def run_in_child(target: Callable, args: tuple, limit: float, search: Optional[float] = None,
                 cap: Optional[float] = None) -> tuple[str, Any]:
    """``target(*args)`` in a forked child: ``("ok", value)``, ``("error", why)`` or
    ``("killed", None)``.

    The child is killed ``limit`` seconds after its start if it has not answered. With ``search``:
    once the child says its search started (:func:`started_search`), it gets SIGVTALRM ``search``
    wall-clock seconds later (toulbar2's own timer is that signal on CPU time, which runs slower
    than the wall clock on a busy machine; its handler ends the search with the best assignment),
    and the kill waits until ``KILL_GRACE`` after that, but never past ``cap`` (a
    ``time.monotonic()`` value; the signal then comes ``KILL_GRACE`` before ``cap``, so a post that
    took longer than expected still returns the search's best plan instead of being killed)."""
    return run_children([ChildJob(target, args, limit, search, cap)])[0]


def run_children(jobs: Sequence[ChildJob], parallel: int = 1, cpu_limits: bool = False,
                 stretch: float = 1.0) -> list[tuple[str, Any]]:
    """Each job as :func:`run_in_child` runs it, up to ``parallel`` children at once (a queued job
    starts when a child ends); the outcomes in the jobs' order. A queued job whose ``cap`` is less
    than a second away when its turn comes is not started: ``("skipped", None)``.

    ``cpu_limits``: a job's ``search`` counts CPU seconds of its child after "posted"; its
    wall-clock allowances (``limit`` before "posted", ``search`` after it) are multiplied by
    ``stretch``, never past ``cap``. Every child started is reaped before this returns."""
    outcomes: list[Optional[tuple]] = [None] * len(jobs)
    queue = list(range(len(jobs)))
    running: dict[int, _Running] = {}
    ctx = multiprocessing.get_context("fork")
    factor = max(1.0, stretch) if cpu_limits else 1.0
    try:
        while queue or running:
            while queue and len(running) < max(1, parallel):
                index = queue.pop(0)
                job = jobs[index]
                if running or index > 0:   # the first job always starts, as run_in_child did
                    if job.cap is not None and time.monotonic() > job.cap - 1.0:
                        outcomes[index] = ("skipped", None)
                        continue
                running[index] = _start(ctx, job, factor)
            if running:
                _step(running, outcomes, cpu_limits, factor)
    finally:
        for child in running.values():
            _reap(child)
    return [("killed", None) if o is None else o for o in outcomes]


def _start(ctx: Any, job: ChildJob, factor: float) -> _Running:
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, job.target, job.args), daemon=True)
    start = time.monotonic()
    proc.start()
    send.close()
    end = start + max(0.0, job.limit) * factor
    if job.cap is not None and factor > 1.0:
        end = min(end, job.cap)
    return _Running(job, proc, recv, start, end)


def _step(running: dict, outcomes: list, cpu_limits: bool, factor: float) -> None:
    """Wait for the next message or clock event of the running children and act on it; a child
    with an outcome is reaped and leaves ``running``."""
    now = time.monotonic()
    wake = min(min(c.end, c.alarm if c.alarm is not None else c.end) for c in running.values())
    timeout = max(0.0, wake - now)
    if cpu_limits and any(c.cpu0 is not None for c in running.values()):
        timeout = min(timeout, CPU_POLL)
    ready = wait([c.recv for c in running.values()], timeout)
    for index, child in list(running.items()):
        if child.recv in ready:
            _read(child, cpu_limits, factor)
        _clock(child, cpu_limits)
        if child.outcome is not None:
            outcomes[index] = child.outcome
            _reap(running.pop(index))


def _read(child: _Running, cpu_limits: bool, factor: float) -> None:
    try:
        kind, value = child.recv.recv()
    except EOFError:
        child.outcome = ("error", "child ended without an answer")
        return
    job = child.job
    if kind != "posted":
        child.outcome = (kind, value)
        return
    if job.search is None:
        return
    now = time.monotonic()
    cpu0 = cpu_seconds(child.proc.pid) if cpu_limits else None
    wall = job.search * (factor if cpu0 is not None else 1.0)
    child.alarm, child.cpu0 = now + wall, cpu0
    child.end = max(child.end, child.alarm + KILL_GRACE)
    if job.cap is not None:   # a slow post must not cost the whole solve at the cap
        child.alarm = min(child.alarm, job.cap - KILL_GRACE)
        child.end = min(child.end, job.cap)


def _clock(child: _Running, cpu_limits: bool) -> None:
    """The signal at the search's limit (wall clock or CPU time), the kill at the end."""
    if child.outcome is not None:
        return
    now = time.monotonic()
    due = child.alarm is not None and now >= child.alarm
    if child.alarm is not None and not due and child.cpu0 is not None:
        used = cpu_seconds(child.proc.pid)
        due = used is not None and used - child.cpu0 >= float(child.job.search or 0.0)
        if due:   # killed a grace after the signal, as on the wall clock
            child.end = min(child.end, max(now + KILL_GRACE, child.start + child.job.limit))
    if due:
        child.alarm, child.cpu0 = None, None
        if child.proc.pid is not None and child.proc.is_alive():
            os.kill(child.proc.pid, signal.SIGVTALRM)
    if time.monotonic() >= child.end:
        child.outcome = ("killed", None)


def _reap(child: _Running) -> None:
    if child.proc.is_alive():
        child.proc.kill()
    child.proc.join(5)
    child.recv.close()
