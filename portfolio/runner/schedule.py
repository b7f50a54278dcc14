"""How N backends share W cores under one deadline.

Every chosen, available backend starts at once: none waits in a queue behind an anytime backend
that never frees its core. Three rules share the cores when there are more workers than cores
(measured in ``benchmarks/runner_schedule.py``, figures in ``docs/benchmarks/runner.md``):

- ``share``: plain oversubscription; the kernel's fair scheduler gives each runnable worker an
  equal share of the cores. Nothing to manage, and a worker that finishes frees its share at once.
- ``pin``: each worker is pinned (CPU affinity) to the least loaded cores, as many as it was given;
  fewer migrations, but a finished worker's core idles until the next worker starts.
- ``slices``: at most W workers run at a time; every ``SLICE`` seconds the ones with the least CPU
  time so far run and the others are stopped (SIGSTOP/SIGCONT round robin). All are resumed
  shortly before the deadline so that each can return its result.

Under every rule, a backend with a low CPU demand (who gets one and why: :mod:`.demotion`) gets
the lowest priority: its process group goes to nice 19 (CFS weight 15 against 1024 at nice 0, so it
runs on cores no one else wants), under ``slices`` it gets a slice only when fewer normal workers
than cores are left, and it does not count as holding a core when idle cores are filled with extra
seeds.

Cores beyond the number of backends go to backends declaring ``threads`` (told through
``PORTFOLIO_CORES``), and whenever a core falls idle while budget is left the runner starts another
copy of a ``randomized`` backend with a new seed (which one: :mod:`.order`).
"""

from __future__ import annotations

import os
import signal
from typing import Iterable, Sequence

from ..options import POLICIES

SLICE = 0.5
"""Seconds of one time slice under ``slices``."""
LOW_NICE = 19
"""The nice value of a worker that declared a low CPU demand (the lowest priority)."""


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def core_shares(threaded: Sequence[bool], cores: int) -> list[int]:
    """Cores per backend: one each, and the cores left over dealt round robin to the backends that
    can use several threads."""
    shares = [1] * len(threaded)
    spare = cores - len(threaded)
    takers = [i for i, t in enumerate(threaded) if t]
    k = 0
    while spare > 0 and takers:
        shares[takers[k % len(takers)]] += 1
        spare, k = spare - 1, k + 1
    return shares


class Scheduler:
    """Applies one policy to the running workers (identified by pid)."""

    def __init__(self, policy: str, cores: int) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown scheduling policy {policy!r}; choose from {', '.join(POLICIES)}")
        self.policy, self.cores = policy, cores
        self.load = [0] * cores          # pinned workers per core
        self.pinned: dict[int, list[int]] = {}
        self.stopped: set[int] = set()
        self.low: set[int] = set()       # workers that declared a low CPU demand
        self.next_slice = 0.0
        try:
            self.cpu_ids = sorted(os.sched_getaffinity(0))[:cores]
        except (AttributeError, OSError):
            self.cpu_ids = list(range(cores))
        self.cores = len(self.cpu_ids) or cores

    def started(self, pid: int, cores: int) -> None:
        if self.policy != "pin" or not hasattr(os, "sched_setaffinity"):
            return
        chosen = sorted(range(self.cores), key=lambda c: (self.load[c], c))[:max(1, cores)]
        for c in chosen:
            self.load[c] += 1
        self.pinned[pid] = chosen
        try:
            os.sched_setaffinity(pid, {self.cpu_ids[c] for c in chosen})
        except OSError:
            pass

    def ended(self, pid: int) -> None:
        for c in self.pinned.pop(pid, []):
            self.load[c] -= 1
        self.stopped.discard(pid)
        self.low.discard(pid)

    def lower(self, pid: int) -> None:
        """A worker declared a low demand: its whole process group (every thread of every process
        in it, and what they start later) to nice ``LOW_NICE``. Final: an unprivileged process
        cannot raise a priority again."""
        self.low.add(pid)
        try:
            os.setpriority(os.PRIO_PGRP, pid, LOW_NICE)
        except (OSError, AttributeError):
            pass

    def tick(self, now: float, running: Iterable[tuple[int, float]]) -> None:
        """``running``: (pid, cpu seconds so far) of live workers. Rotates slices when due."""
        if self.policy != "slices" or now < self.next_slice:
            return
        self.next_slice = now + SLICE
        ranked = sorted(running, key=lambda pc: (pc[0] in self.low, pc[1]))
        go = {pid for pid, _ in ranked[: self.cores]}
        for pid, _ in ranked:
            self._signal(pid, go=pid in go)

    def resume_all(self) -> None:
        """Let every stopped worker run again (before the deadline, so each can return)."""
        for pid in list(self.stopped):
            self._signal(pid, go=True)
        self.policy = "share" if self.policy == "slices" else self.policy

    def _signal(self, pid: int, go: bool) -> None:
        if go == (pid not in self.stopped):
            return
        try:
            os.killpg(pid, signal.SIGCONT if go else signal.SIGSTOP)
        except OSError:
            return
        if go:
            self.stopped.discard(pid)
        else:
            self.stopped.add(pid)
