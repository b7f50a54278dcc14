"""A run's deadlines: when backends must finish, when stragglers are killed, when the answer is
due (:func:`deadline_plan`), and the :class:`Clock` that holds them for one run."""

from __future__ import annotations

import time
from dataclasses import dataclass


def deadline_plan(start: float, time_limit: float) -> tuple[float, float, float]:
    """(backend deadline, hard-kill time, answer deadline) on the scale of ``start`` (the runner uses
    ``time.monotonic()``).

    Backends are asked to finish ``soft`` seconds early, stragglers are killed ``hard`` seconds before
    the end, and the rest is the margin for collecting results and printing the answer. From
    ``MARGIN_FULL`` seconds on the margins are the contest limits' (a loaded machine needs about a
    second to stop and print); below, they shrink in proportion, so that a 10 s run uses 9.4 s of
    its budget instead of 8.6 (docs/benchmarks/runner.md, "Short budgets").
    """
    end = start + time_limit
    soft, hard = stop_margins(time_limit)
    return end - soft, end - hard, end


@dataclass(frozen=True)
class Clock:
    """A run's deadlines on the ``time.monotonic()`` scale (see :func:`deadline_plan`), fixed when
    the run is made: a value every part of the runner reads and none changes."""

    start: float
    soft_deadline: float
    """When backends must have finished (the deadline they are given)."""
    kill_time: float
    """When stragglers are killed."""
    end: float
    """When the answer is due."""

    @classmethod
    def of(cls, start: float, time_limit: float) -> "Clock":
        return cls(start, *deadline_plan(start, time_limit))

    def now(self) -> float:
        """Seconds since the run's start."""
        return time.monotonic() - self.start


MARGIN_FULL = 60.0
"""The budget from which the stop margins are the full ones (the contest limits: 60-300 s)."""

SHORT_SOFT, SHORT_HARD = 0.2, 0.15
"""The margins' floor for a tiny budget; between 0 and ``MARGIN_FULL`` they grow linearly to
the full ones (2.4 s and 2.0 s at 60 s)."""


def stop_margins(time_limit: float) -> tuple[float, float]:
    """(seconds before the end the backends are asked to stop, seconds before it stragglers are
    killed) for a run of ``time_limit`` seconds."""
    if time_limit >= MARGIN_FULL:
        return min(4.0, 1.2 + 0.02 * time_limit), min(2.0, 0.8 + 0.02 * time_limit)
    share = time_limit / MARGIN_FULL
    soft = SHORT_SOFT + share * (1.2 + 0.02 * MARGIN_FULL - SHORT_SOFT)
    hard = SHORT_HARD + share * (0.8 + 0.02 * MARGIN_FULL - SHORT_HARD)
    return soft, hard
