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

CPU weights (``RunOptions.cpu_weights``, a selector's schedule; the adaptive rule's moves,
:mod:`.focus`) become priorities: under ``share`` and ``pin`` a worker of weight ``w`` runs at
``round(log(w_max / w) / log(NICE_RATIO))`` nice levels above the heaviest one (CFS gives each
nice level about 1.25 times less CPU than the one below it; at most ``LOW_NICE``), set in the
worker itself before it does anything (:func:`.worker.worker_main`), so that everything it starts
inherits it. Under ``slices`` the weights rank the slices instead (least CPU per unit of weight
runs first) and nobody is niced. An unprivileged process can raise its nice but never lower it
again (``RLIMIT_NICE`` is 0 here), so a level once given is a floor: :meth:`Scheduler.reweigh`
expresses a move toward a worker by raising the others, keeping the ratios, and stops moving once
the levels run out (19 above the runner's own: a run started under ``nice -n 19`` has none, and
weights then act only through the extra seeds, :mod:`.order`).

Cores beyond the number of backends go to backends declaring ``threads`` (told through
``PORTFOLIO_CORES``), and whenever a core falls idle while budget is left the runner starts another
copy of a ``randomized`` backend with a new seed (which one: :mod:`.order`).
"""

from __future__ import annotations

import math
import os
import signal
from typing import Iterable, Mapping, Sequence

from ..options import POLICIES

SLICE = 0.5
"""Seconds of one time slice under ``slices``."""
LOW_NICE = 19
"""The nice value of a worker that declared a low CPU demand (the lowest priority)."""
NICE_RATIO = 1.25
"""CFS's ratio of CPU weight between two neighbouring nice levels (1024 at nice 0, 820 at 1...)."""


def nice_offset(weight: float, heaviest: float) -> int:
    """The nice levels above the heaviest worker's for a worker of ``weight`` (both > 0):
    ``round(log(heaviest / weight) / log(NICE_RATIO))``, at least 0, at most ``LOW_NICE``."""
    if weight >= heaviest:
        return 0
    return min(LOW_NICE, max(0, round(math.log(heaviest / weight) / math.log(NICE_RATIO))))


def nice_offsets(weights: Mapping[str, float]) -> dict[str, int]:
    """Each name's nice offset for its weight against the heaviest of ``weights``."""
    heaviest = max(weights.values(), default=1.0)
    return {name: nice_offset(w, heaviest) for name, w in weights.items()}


def share_of(offset: int) -> float:
    """The CPU weight, relative to nice 0, of a worker ``offset`` levels above it."""
    return NICE_RATIO ** -offset


def own_nice() -> int:
    """This process's nice value (what a worker starts from)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, AttributeError):
        return 0


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
        self.levels: dict[int, int] = {}   # the nice level each worker was given (pid -> level)
        self.weights: dict[int, float] = {}   # ``slices``: each worker's weight (default 1)
        self.base = own_nice()           # the runner's own level: workers start from it
        self.next_slice = 0.0
        try:
            self.cpu_ids = sorted(os.sched_getaffinity(0))[:cores]
        except (AttributeError, OSError):
            self.cpu_ids = list(range(cores))
        self.cores = len(self.cpu_ids) or cores

    def start_increment(self, offset: int) -> int:
        """The nice increment a worker applies to itself at its start for a weight ``offset``
        levels under the heaviest (:func:`nice_offset`): none under ``slices`` (weights rank the
        slices there), else the offset, within what is left below ``LOW_NICE``."""
        if self.policy == "slices":
            return 0
        return max(0, min(offset, LOW_NICE - self.base))

    def started(self, pid: int, cores: int, increment: int = 0, weight: float = 1.0) -> None:
        """A worker started: its level (the runner's plus the ``increment`` it gave itself), its
        ``weight`` (``slices``), and its cores pinned under ``pin``."""
        self.levels[pid] = min(LOW_NICE, self.base + increment)
        self.weights[pid] = weight
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
        self.levels.pop(pid, None)
        self.weights.pop(pid, None)

    def lower(self, pid: int) -> None:
        """A worker declared a low demand: its whole process group (every thread of every process
        in it, and what they start later) to nice ``LOW_NICE``. Final: an unprivileged process
        cannot raise a priority again."""
        self.low.add(pid)
        self._set_level(pid, LOW_NICE)

    def level(self, pid: int) -> int:
        """The nice level the worker ``pid`` was given (the runner's own when unknown)."""
        return self.levels.get(pid, self.base)

    def reweigh(self, offsets: Mapping[int, int], ceiling: int = LOW_NICE) -> dict[int, int]:
        """New weights for some workers, as nice offsets under the heaviest of them (pid ->
        offset): under ``slices`` they rank the slices; otherwise each gets ``top + offset``, where
        ``top`` is the lowest level that lowers nobody (a level cannot be taken back), at most
        ``ceiling`` levels above the runner's own (and ``LOW_NICE``): so that the workers with a
        low demand stay well under the others. Workers with a low demand are left out. Returns the
        levels set (pid -> level; under ``slices``, the offsets)."""
        offsets = {pid: off for pid, off in offsets.items() if pid not in self.low}
        if self.policy == "slices":
            for pid, off in offsets.items():
                self.weights[pid] = share_of(off)
            return dict(offsets)
        top = max([self.level(pid) - off for pid, off in offsets.items()] + [self.base])
        out = {}
        for pid, off in offsets.items():
            level = min(LOW_NICE, self.base + ceiling, top + off)
            if level > self.level(pid):
                self._set_level(pid, level)
            out[pid] = self.level(pid)
        return out

    def _set_level(self, pid: int, level: int) -> None:
        """The worker's whole process group to nice ``level`` (never below what it has)."""
        if level <= self.levels.get(pid, self.base) and pid not in self.low:
            return
        self.levels[pid] = max(level, self.levels.get(pid, self.base))
        try:
            os.setpriority(os.PRIO_PGRP, pid, self.levels[pid])
        except (OSError, AttributeError):
            pass

    def tick(self, now: float, running: Iterable[tuple[int, float]]) -> None:
        """``running``: (pid, cpu seconds so far) of live workers. Rotates slices when due."""
        if self.policy != "slices" or now < self.next_slice:
            return
        self.next_slice = now + SLICE
        ranked = sorted(running, key=lambda pc: (pc[0] in self.low,
                                                 pc[1] / self.weights.get(pc[0], 1.0)))
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
