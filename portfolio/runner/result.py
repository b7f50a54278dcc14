"""What a portfolio run hands back: one row per backend run, the verified incumbents, the answer.

Kept apart from the run's machinery so that reports, benchmarks and the CLI can read results
without importing process code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..backend import Status
from ..evaluate import Evaluation
from .claims import PROVEN, Claim


PLAN_HASH_CHARS = 16


def plan_hash(plan: Optional[np.ndarray]) -> Optional[str]:
    """The first ``PLAN_HASH_CHARS`` hex digits of the SHA-256 of the plan's int64 little-endian
    bytes (None for no plan): two runs gave the same plan when their hashes agree."""
    if plan is None:
        return None
    data = np.ascontiguousarray(np.asarray(plan, dtype="<i8")).tobytes()
    return hashlib.sha256(data).hexdigest()[:PLAN_HASH_CHARS]


@dataclass
class Incumbent:
    """One verified improving plan, as seen by the parent."""

    time: float          # seconds since the run started
    cost: int
    backend: str
    note: str = ""


@dataclass
class BoundPoint:
    """One improving lower bound a backend sent during its run (a claim; ``false`` once a verified
    plan costs less)."""

    time: float          # seconds since the run started
    value: int
    backend: str
    note: str = ""


@dataclass
class BackendRun:
    """Everything the portfolio knows about one backend's run: a row of the final table.

    ``lower_bound`` is the backend's *claimed* bound (validated, not contradicted); ``claims`` keeps
    every claim with its fate. ``disqualified`` means the backend sent something false or malformed;
    its earlier verified plans stay eligible all the same (a verified plan is verified). In a run,
    only :class:`.rows.Rows` writes a row (its named transitions).
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
    phase: str = ""                # "prepare", "ready" (set up, its problem to come) or "solve"
    searching: Optional[float] = None   # seconds since the start when its solve() began
    bounds: list[BoundPoint] = field(default_factory=list)   # in-run bounds, as received
    demand: str = "normal"         # CPU demand the backend declared last ("low": nice 19)
    demand_note: str = ""
    safety_net: bool = False
    """Deterministic mode: the backend said it stopped on its wall-clock safety net before its
    work was done (``SolveResult.safety_net``): the run's answer is not the deterministic one."""
    traceback: Optional[str] = None
    """The whole traceback of an exception the backend raised in ``solve`` or ``prepare`` (its
    note shows the last line); ``--json`` has it per backend, ``--debug`` prints it."""

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
            "searching": self.searching,
            "demand": self.demand,
            "demand_note": self.demand_note,
            "traceback": self.traceback,
            "safety_net": self.safety_net,
            "claims": [c.to_dict() for c in self.claims],
            "incumbents": [{"time": i.time, "cost": i.cost, "note": i.note} for i in self.incumbents],
            "bounds": [{"time": b.time, "value": b.value, "note": b.note} for b in self.bounds],
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
    engines: dict[str, str] = field(default_factory=dict)
    """The installed version of each engine the run's backends declare (``BackendMeta.engines``)."""
    warm_start: Optional[dict] = None
    """The given plan's fate (:meth:`.warmstart.WarmStart.report`): cost or why it was not usable,
    the repair, and the improvement on it; None for a run without one."""
    deterministic: Optional[dict] = None
    """Deterministic mode's word on the run (None in a timed run): ``complete`` (the answer is the
    deterministic one), ``reason`` when it is not (the safety net fired, a worker died, a signal),
    ``work``, ``work_per_backend``, ``exchange``, ``points`` settled, ``left_out`` (backends that
    do not support the mode)."""
    memory: Optional[dict] = None
    """Memory budgets (:mod:`portfolio.memory`, docs/budgets.md): why no plan fits (the certified
    least peak, the best plan's peak, proven or not), or an ``objective="peak"`` run's least peak
    and its bound; None otherwise. Filled by the caller after the run, never by the runner."""
    options: dict[str, dict] = field(default_factory=dict)
    """Every option in effect, per backend of the run: given or default, a budget-aware default
    as resolved for this run's budget (:mod:`portfolio.backend_options`)."""
    config: Optional[str] = None
    """The config file the options came from (``--config``, ``$PORTFOLIO_CONFIG``), if any."""
    options_given: dict[str, dict] = field(default_factory=dict)
    """The options the caller set (a config file, ``--option``, ``backend_options``), per backend,
    including those of backends the run did not use."""
    callback_error: Optional[dict] = None
    """What a caller's callback raised (``hook``: ``on_update``, or the API's ``on_improve``;
    ``error``: its type and message; ``traceback``): it ended the run, which answered with its
    best verified plan all the same. None when no callback raised."""

    @property
    def plan_hash(self) -> Optional[str]:
        """A short fingerprint of the answer (:func:`plan_hash`), to compare runs."""
        return plan_hash(self.solution)

    @property
    def cost(self) -> Optional[int]:
        return None if self.evaluation is None else self.evaluation.cost

    @property
    def proven_optimal(self) -> bool:
        """The verified answer is proven optimal: by the runner itself, or by a bound of an
        ``exact`` backend other than the plan's finder (or of two independent exact ones) that
        meets its cost. A lone claim, or a bound from a backend that is not exact, does not count."""
        return self.solution is not None and (self.proof or "").startswith(PROVEN)

    @property
    def incumbents(self) -> list[Incumbent]:
        found = [i for run in self.runs.values() for i in run.incumbents]
        return sorted(found, key=lambda i: i.time)

    @property
    def bound_trace(self) -> list[BoundPoint]:
        """Every in-run bound of every backend, by time, that still stands (not contradicted)."""
        false = {(c.source, c.value) for c in self.claims if c.false}
        found = [b for run in self.runs.values() for b in run.bounds
                 if (b.backend, b.value) not in false]
        return sorted(found, key=lambda b: b.time)

    def gap_trace(self) -> list[tuple[float, Optional[int], Optional[int]]]:
        """(time, best verified cost, best standing bound) at every change of either: the gap over
        time. Final bounds and the runner's own proofs count from the time they were claimed."""
        events: list[tuple[float, str, int]] = [(i.time, "cost", i.cost) for i in self.incumbents]
        events += [(b.time, "bound", b.value) for b in self.bound_trace]
        events += [(c.time, "bound", c.value) for c in self.claims
                   if not c.false and c.value is not None]
        cost = bound = None
        out: list[tuple[float, Optional[int], Optional[int]]] = []
        for at, kind, value in sorted(events, key=lambda e: e[0]):
            if kind == "cost" and (cost is None or value < cost):
                cost = value
            elif kind == "bound" and (bound is None or value > bound):
                bound = value
            else:
                continue
            out.append((at, cost, bound))
        return out

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
        by = f"by {bound.source}" if bound.exact else f"claimed by {bound.source} (not exact)"
        return (f"lower bound {bound.value:,} {by}"
                + ("" if gap is None else f", gap to bound {100 * gap:.3f} %"))

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
            "engines": dict(self.engines),
            "deterministic": self.deterministic,
            "plan_hash": self.plan_hash,
            "memory": self.memory,
            "evaluation": None if self.evaluation is None else self.evaluation.to_dict(),
            "backends": [run.to_dict() for run in self.runs.values()],
            "incumbents": [{"time": i.time, "cost": i.cost, "backend": i.backend, "note": i.note}
                           for i in self.incumbents],
            "bounds": [{"time": b.time, "value": b.value, "backend": b.backend, "note": b.note}
                       for b in self.bound_trace],
            "gap_trace": [{"time": t, "cost": c, "bound": b,
                           "gap": None if c is None or b is None or c <= 0 else (c - b) / c}
                          for t, c, b in self.gap_trace()],
            "solution": None if self.solution is None else [int(s) for s in self.solution],
            "warm_start": self.warm_start,
            "options": {k: dict(v) for k, v in self.options.items()},
            "options_given": {k: dict(v) for k, v in self.options_given.items()},
            "config": self.config,
            "callback_error": self.callback_error,
        }
