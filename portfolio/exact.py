"""What every exact engine (CP-SAT, MaxSAT, ...) shares: the engine contract and the driver.

An exact *engine* knows one thing: build a model of a :class:`Problem` and solve it within a time
limit, starting from a hint, calling back with each improving plan, and saying what it proved. The
*driver* (:func:`solve_with_engine`) owns everything else, once for all engines: the starting plan,
the choice between the full model and large-neighbourhood search (:mod:`portfolio.lns`) by the
engine's own size estimate, the time split, and the :class:`SolveResult` with its lower bound.

Why a window is just a Problem: the LNS fixes every node outside a window at the incumbent and
hands the engine the *window problem* (edges to fixed nodes folded into node costs, fixed usage
taken off the capacity, see :func:`portfolio.lns.build_window`). An engine that can solve a Problem
can therefore solve a window, with no second code path.

Claims: ``optimal`` means optimal among plans without forbidden choices (every such plan is cheaper
than any plan with one, since a forbidden entry alone costs 10**18); ``infeasible`` means no plan
without forbidden choices fits in memory, which is *not* a proof that the original instance has no
answer, so the driver reports it as ``no-solution``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from .problem import Problem

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
              threads: int, seed: int,
              on_solution: Callable[[np.ndarray], None]) -> ExactOutcome:
        """Solve ``problem`` within ``time_limit`` seconds (wall clock, build included).

        ``hint`` is a complete plan of ``problem`` (maybe infeasible); ``on_solution`` is called with
        each improving plan as the engine finds it. Never raises for an instance it cannot handle:
        returns ``ExactOutcome("too-big")`` or ``("unknown")`` with a note instead.
        """
        ...


def deadline_in(deadline: float) -> float:
    """Seconds left until an absolute ``time.time()`` deadline (never negative)."""
    return max(0.0, deadline - time.time())
