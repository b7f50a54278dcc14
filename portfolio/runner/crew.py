"""The run's workers as the event loop sees them: each :class:`Worker` (a backend's process, its
pipe and row), the :class:`Crew` of them all, and the ways a worker is ended from outside
(:func:`kill`, :func:`refuse`). :mod:`.launch` starts workers; :mod:`.supervise` reads and ends
them."""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Iterator, Optional

from ..backend import BackendLike
from ..procstat import cpu_seconds
from . import contain
from .result import BackendRun

if TYPE_CHECKING:
    from .rows import Rows


@dataclass
class Worker:
    """One backend's worker process as the parent sees it."""

    run: BackendRun
    backend: BackendLike
    process: mp.process.BaseProcess
    conn: Connection
    key: Optional[str]
    """Its set-up's JIT cache (:func:`.worker.prepare_key`), None without a set-up."""
    done: bool = False
    solve_started: float = 0.0
    control: Optional[Connection] = None
    """An early set-up's go channel until the parent sent go (:mod:`.launch`)."""


class Crew:
    """The run's workers, every one started in the order it started, and the set-ups compiling now
    (a JIT cache key and the run compiling it). The event loop owns it: :class:`.launch.Launcher`
    adds workers, :class:`Supervisor` ends them, and the rules read it."""

    def __init__(self) -> None:
        self._workers: list[Worker] = []
        self._compiling: dict[str, str] = {}

    def __iter__(self) -> Iterator[Worker]:
        return iter(self._workers)

    def live(self) -> list[Worker]:
        return [w for w in self._workers if not w.done]

    def add(self, worker: Worker) -> None:
        if worker.key:
            self._compiling[worker.key] = worker.run.name
        self._workers.append(worker)

    def compiling(self, key: str) -> Optional[str]:
        """The run compiling the set-up ``key`` now, or None."""
        return self._compiling.get(key)

    def release(self, worker: Worker) -> None:
        """``worker``'s set-up is over (done, failed or dead): its cache may be loaded by others."""
        if worker.key is not None and self._compiling.get(worker.key) == worker.run.name:
            del self._compiling[worker.key]

    def pids(self) -> set[int]:
        return {w.process.pid for w in self._workers}


def sample_cpu(worker: Worker, rows: "Rows") -> None:
    """The CPU time of the worker's process and of what it started and reaped, into its row."""
    cpu = cpu_seconds(worker.process.pid, children=True)
    if cpu is not None:
        rows.cpu(worker.run, cpu)


def kill(worker: Worker, rows: "Rows") -> None:
    """SIGKILL the worker and everything it started: its process tree (frozen first, so nothing
    forks meanwhile), its process group, and any process still carrying its mark (its CPU time
    read first, into its row)."""
    sample_cpu(worker, rows)
    if worker.process.is_alive():
        contain.kill_tree(worker.process.pid)
    contain.kill_group(worker.process)
    contain.sweep(contain.worker_token(os.getpid(), worker.process.pid))


def refuse(worker: Worker, reason: str, rows: "Rows") -> None:
    """The worker sent something false or malformed: killed, then its row says why (once it is
    dead). Plans it sent before were verified and stay eligible."""
    kill(worker, rows)
    rows.rejected(worker.run, reason)
