"""What every part of a run is given: one :class:`RunContext`, made once by the event loop
(:class:`.core.Portfolio`) before its parts, so that a part asks for the run's values by name
instead of taking a long list of arguments, and a new part is given the same thing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..backend import BackendLike
from ..options import RunOptions
from ..problem import Problem
from .crew import Crew
from .deadlines import Clock
from .points import WorkBoard
from .rows import Rows
from .schedule import Scheduler
from .worker import SharedBest


@dataclass(frozen=True)
class RunContext:
    """The run's values and shared objects (the parts themselves are given to each other
    explicitly, each part being another's business):

    ``problem`` (the original), ``backends`` (those of the run, in the caller's order),
    ``options`` and ``option_values`` (every declared option's value per backend), the ``clock``,
    the ``rows`` (their one writer), the workers (``crew``), the ``scheduler`` and the ``cores``
    it shares, the ``fork`` context workers are started from, ``memory_limit`` (bytes per
    backend, None: no cap), the incumbent's board ``shared`` (and ``shared_cold``, a timed
    re-solve's cold part's own), and ``work_of`` (deterministic mode: each run's work units; None
    in a timed run)."""

    problem: Problem
    backends: tuple[BackendLike, ...]
    options: RunOptions
    option_values: dict[str, dict]
    clock: Clock
    rows: Rows
    crew: Crew
    scheduler: Scheduler
    cores: int
    fork: Any
    memory_limit: Optional[int]
    shared: SharedBest
    shared_cold: Optional[SharedBest]
    work_of: Optional[dict[str, int]]
    work_board: Optional[WorkBoard] = None

    @property
    def by_name(self) -> dict[str, BackendLike]:
        return {b.name: b for b in self.backends}

    @property
    def deterministic(self) -> bool:
        return bool(self.options.deterministic)
