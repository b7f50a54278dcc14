"""What a portfolio run hands back: one row per backend run, the verified incumbents, the answer.

Kept apart from the run's machinery so that reports, benchmarks and the CLI can read results
without importing process code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..backend import Status
from ..evaluate import Evaluation
from .claims import Claim


@dataclass
class Incumbent:
    """One verified improving plan, as seen by the parent."""

    time: float          # seconds since the run started
    cost: int
    backend: str
    note: str = ""


@dataclass
class BackendRun:
    """Everything the portfolio knows about one backend's run: a row of the final table.

    ``lower_bound`` is the backend's *claimed* bound (validated, not contradicted); ``claims`` keeps
    every claim with its fate. ``disqualified`` means the backend sent something false or malformed;
    its earlier verified plans stay eligible all the same (a verified plan is verified).
    """

    name: str
    status: Status = Status.PENDING
    best_cost: Optional[int] = None
    best_solution: Optional[np.ndarray] = None
    time_to_best: Optional[float] = None
    lower_bound: Optional[int] = None
    note: str = ""
    incumbents: list[Incumbent] = field(default_factory=list)
    started: Optional[float] = None
    finished: Optional[float] = None
    exitcode: Optional[int] = None
    claimed_optimal: bool = False
    claims: list[Claim] = field(default_factory=list)
    backend: str = ""              # the registered backend name (differs for extra seed copies)
    seed: int = 0
    cores: int = 1                 # PORTFOLIO_CORES given to the worker
    cpu_seconds: Optional[float] = None   # user+system CPU of the worker's process, from /proc
    prepare_seconds: Optional[float] = None
    phase: str = ""                # "prepare" or "solve" while running

    def __post_init__(self) -> None:
        self.backend = self.backend or self.name

    @property
    def disqualified(self) -> bool:
        return self.status is Status.REJECTED

    def to_dict(self) -> dict:
        return {
            "backend": self.name,
            "status": self.status.value,
            "best_cost": self.best_cost,
            "time_to_best": self.time_to_best,
            "lower_bound": self.lower_bound,
            "note": self.note,
            "started": self.started,
            "finished": self.finished,
            "exitcode": self.exitcode,
            "seed": self.seed,
            "cores": self.cores,
            "cpu_seconds": self.cpu_seconds,
            "prepare_seconds": self.prepare_seconds,
            "claims": [c.to_dict() for c in self.claims],
            "incumbents": [{"time": i.time, "cost": i.cost, "note": i.note} for i in self.incumbents],
        }


@dataclass
class PortfolioResult:
    """The outcome of a portfolio run.

    ``proof`` says why the answer is known optimal (or infeasible), naming its sources; it is None
    when the answer is only the best plan found. ``stopped_early`` says why the run ended before its
    deadline, if it did.
    """

    problem: str
    time_limit: float
    runs: dict[str, BackendRun]
    solution: Optional[np.ndarray]
    evaluation: Optional[Evaluation]
    winner: Optional[str]
    elapsed: float
    infeasible_proven_by: Optional[str] = None
    proof: Optional[str] = None
    claims: list[Claim] = field(default_factory=list)
    stopped_early: Optional[str] = None
    presolve: Optional[dict] = None
    schedule: Optional[dict] = None
    interrupted: Optional[str] = None  # SIGINT/SIGTERM ended the run early

    @property
    def cost(self) -> Optional[int]:
        return None if self.evaluation is None else self.evaluation.cost

    @property
    def incumbents(self) -> list[Incumbent]:
        found = [i for run in self.runs.values() for i in run.incumbents]
        return sorted(found, key=lambda i: i.time)

    @property
    def best_bound(self) -> Optional[Claim]:
        """The highest standing lower-bound claim (an optimality claim counts), or None."""
        bounds = [c for c in self.claims if not c.false and c.value is not None]
        return max(bounds, key=lambda c: (c.value, c.exact), default=None)

    @property
    def gap(self) -> Optional[float]:
        """``(cost - best bound) / cost``: how far the answer can be from the optimum at most."""
        bound = self.best_bound
        if bound is None or self.cost is None:
            return None
        if self.cost == bound.value:
            return 0.0
        return (self.cost - bound.value) / self.cost if self.cost > 0 else None

    def bound_text(self) -> Optional[str]:
        """One line for the final table: the best bound, its source and the gap."""
        bound = self.best_bound
        if bound is None:
            return None
        gap = self.gap
        return (f"lower bound {bound.value:,} by {bound.source}"
                + ("" if gap is None else f", gap {100 * gap:.3f} %"))

    def to_dict(self) -> dict:
        return {
            "problem": self.problem,
            "time_limit": self.time_limit,
            "elapsed": round(self.elapsed, 3),
            "winner": self.winner,
            "cost": self.cost,
            "feasible": self.solution is not None,
            "infeasible_proven_by": self.infeasible_proven_by,
            "proof": self.proof,
            "stopped_early": self.stopped_early,
            "lower_bound": None if self.best_bound is None else self.best_bound.value,
            "lower_bound_source": None if self.best_bound is None else self.best_bound.source,
            "gap": self.gap,
            "interrupted": self.interrupted,
            "claims": [c.to_dict() for c in self.claims],
            "schedule": self.schedule,
            "evaluation": None if self.evaluation is None else self.evaluation.to_dict(),
            "backends": [run.to_dict() for run in self.runs.values()],
            "incumbents": [{"time": i.time, "cost": i.cost, "backend": i.backend, "note": i.note}
                           for i in self.incumbents],
            "solution": None if self.solution is None else [int(s) for s in self.solution],
        }
