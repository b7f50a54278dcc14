"""The exact engine contract: what an engine estimates, what it answers, what it must supply.

An exact *engine* (CP-SAT, MaxSAT, ...) knows one thing: build a model of a :class:`Problem` and
solve it within a time limit, starting from a hint, calling back with each improving plan, and
saying what it proved (:class:`ExactOutcome`). The driver (:mod:`.driver`) and the LNS loop
(:mod:`.lns`) speak to engines through these types only. In deterministic mode an engine call also
gets a :class:`~.meter.WorkLimit`: its limit in work units, counted by the engine's own measure
(CP-SAT's deterministic time, SAT conflicts), never by a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from ..problem import Problem
from .meter import WorkLimit

OutcomeStatus = str
"""One of ``"optimal"``, ``"feasible"``, ``"infeasible"``, ``"unknown"``, ``"too-big"``."""


@dataclass
class ModelSize:
    """An engine's estimate of its model before building it (cheap: from array sizes only)."""

    variables: int
    constraints: int
    terms: int                       # non-zeros of linear rows, or literals of clauses

    def within(self, budget: "ModelSize") -> bool:
        return (self.variables <= budget.variables and self.constraints <= budget.constraints
                and self.terms <= budget.terms)


@dataclass
class ExactOutcome:
    """What an engine says about one problem (a full instance or an LNS window).

    ``plan`` is a plan of the problem it was given (int64), ``cost`` its exact cost as
    :func:`portfolio.evaluate.evaluate` computes it (``cost_offset`` included); ``bound`` is a valid
    lower bound on that problem's optimum over plans without forbidden choices (offset included).
    """

    status: OutcomeStatus
    plan: Optional[np.ndarray] = None
    cost: Optional[int] = None
    bound: Optional[int] = None
    note: str = ""
    stats: dict = field(default_factory=dict)


class ExactEngine(Protocol):
    """The one thing an exact backend supplies."""

    name: str

    def estimate(self, problem: Problem) -> ModelSize:
        """Model size without building it."""
        ...

    def budget(self) -> ModelSize:
        """Largest model this engine builds (above it the driver uses LNS windows)."""
        ...

    def solve(self, problem: Problem, time_limit: float, hint: Optional[np.ndarray],
              threads: int, seed: int, on_solution: Callable[[np.ndarray], None],
              work: Optional[WorkLimit] = None) -> ExactOutcome:
        """Solve ``problem`` within ``time_limit`` seconds (wall clock, build included).

        ``hint`` is a complete plan of ``problem`` (maybe infeasible); ``on_solution`` is called with
        each improving plan as the engine finds it. Never raises for an instance it cannot handle:
        returns ``ExactOutcome("too-big")`` or ``("unknown")`` with a note instead.

        ``work`` (deterministic mode only; the driver never passes it in a timed run): stop once
        ``work.spend`` returns False, spending the work as it is done (build included) in units of
        :mod:`portfolio.work`; ``time_limit`` is then only the wall-clock safety net, and
        ``threads`` a count that does not depend on the machine.
        """
        ...


def full_model_or_outcome(problem: Problem, size: ModelSize, budget: ModelSize):
    """What every engine does first with a full problem: the folded model
    (:func:`portfolio.exact.build_exact_model`), or the outcome that ends the call before any
    solver runs (the size estimate above the engine's budget, or infeasibility found while
    folding). Returns an :class:`ExactModel` or an :class:`ExactOutcome`."""
    from .model import build_exact_model

    if not size.within(budget):
        return ExactOutcome("too-big", note=f"model estimate {size} above budget")
    md = build_exact_model(problem)
    if md.infeasible is not None:
        return ExactOutcome("infeasible", note=md.infeasible, stats=dict(md.stats))
    return md
