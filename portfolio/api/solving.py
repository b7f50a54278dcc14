"""``portfolio.solve``: the CLI's ``portfolio solve`` as a function a host program can call.

The CLI and this function share :func:`choose_backends` and :func:`run`, so both pick the same
backends and run with the same defaults (presolve, scoring every plan of a tiny instance, the
runner's fallback plan): they give the same answers. What the function adds is for a host: nothing
on stdout, warnings through :mod:`logging`, one exception type for bad input, improving plans
handed to a callback in the caller's thread, and one run at a time per process.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from ..errors import ProblemError
from ..problem import Problem
from .inputs import ProblemLike, as_conversion

if TYPE_CHECKING:
    from ..backend import BackendLike
    from ..runner import Portfolio, PortfolioResult

log = logging.getLogger("portfolio")

OnImprove = Callable[[int, list, str, float], Any]
"""``on_improve(cost, plan, backend, seconds)``: a cheaper verified plan, seconds since the call."""

_ONE_RUN = threading.Lock()
"""One portfolio run at a time in a process: a run adopts and sweeps every process its workers
leave behind (see ``portfolio.runner.contain``), which would reach into a concurrent run's workers.
A second caller waits for the first run to end."""


def choose_backends(names: Union[str, Sequence[str], None], time_limit: Optional[float] = None,
                    warn: Callable[[str], None] = log.warning) -> list[BackendLike]:
    """The backends to run: the default set (``Registry.select(None)``, as ``portfolio solve``) when
    ``names`` is None, else the named ones, each available here. ``available()`` checks may take a
    tenth of ``time_limit``. Unknown or unavailable names raise :class:`ProblemError` (one line)."""
    from ..registry import AVAILABLE_TIMEOUT, Registry, RegistryError, parse_backend_list

    registry = Registry()
    for warning in registry.warnings:
        warn(warning)
    try:
        if time_limit is not None:
            registry.check_timeout = min(AVAILABLE_TIMEOUT, max(0.5, 0.1 * time_limit))
        if names is None:
            chosen = registry.select(None)
        else:
            if not isinstance(names, str):
                if not all(isinstance(n, str) for n in names):
                    raise ProblemError(f"backends: expected names (strings), got {list(names)!r}")
                names = ",".join(names)
            chosen = registry.resolve(parse_backend_list(names, registry))
    except RegistryError as exc:
        raise ProblemError(str(exc)) from None
    if not chosen:
        raise ProblemError("no backend is available; see `portfolio backends`")
    return chosen


def run(problem: Problem, backends: Sequence[BackendLike], time_limit: float, *,
        start: Optional[float] = None, workers: Optional[int] = None, seed: int = 0,
        presolve: bool = True, exhaustive: bool = True, early_stop: bool = True,
        memory_limit: object = "default", policy: Optional[str] = None, honour_demand: bool = True,
        warm_start: Any = None, on_update: Optional[Callable[[Portfolio], None]] = None,
        hold: Optional[Callable[[Any], Optional[str]]] = None,
        keep_open: Optional[Callable[[], bool]] = None) -> PortfolioResult:
    """One portfolio run with the defaults of ``portfolio solve`` (which calls this too): presolve
    under the deadline, a tiny instance settled by scoring every plan, the fallback plan held in
    reserve. Arguments as :func:`portfolio.runner.run_portfolio`."""
    from ..runner import run_portfolio

    kwargs: dict[str, Any] = dict(start=start, workers=workers, seed=seed, presolve=presolve,
                                  early_stop=early_stop, memory_limit=memory_limit, fallback=True,
                                  honour_demand=honour_demand, exhaustive=exhaustive,
                                  warm_start=warm_start, on_update=on_update, hold=hold,
                                  keep_open=keep_open)
    if policy:
        kwargs["policy"] = policy
    return run_portfolio(problem, backends, time_limit, **kwargs)


@dataclass(frozen=True)
class SolveResult:
    """What :func:`solve` returns; ``run`` holds everything the runner knows (per-backend rows,
    claims, incumbents over time), as the CLI's ``--json`` document shows it."""

    plan: list[int]
    """One strategy per node of the problem as given (an XLA request: in the request's own node
    order, followers included); ``[]`` when no feasible plan was found."""
    cost: Optional[int]
    feasible: bool
    lower_bound: Optional[int]
    """The best standing lower bound any source claimed (None when none did)."""
    optimal: bool
    """Proven optimal and verified (a lone backend's claim about its own plan is not enough)."""
    winner: Optional[str]
    elapsed: float
    """Seconds from the call to the end of the run, loading included."""
    proof: Optional[str]
    status: str
    """``optimal``, ``feasible``, ``infeasible`` (claimed by an exact backend, unrefuted) or ``none``."""
    interrupted: Optional[str]
    """``SIGINT``/``SIGTERM`` when a signal (Ctrl-C, a Jupyter interrupt) ended the run early."""
    run: PortfolioResult = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        """A JSON-serialisable summary (with ``engines``: the solver versions that ran), with the
        CLI's whole result document under ``run``."""
        return {"plan": list(self.plan), "cost": self.cost, "feasible": self.feasible,
                "lower_bound": self.lower_bound, "optimal": self.optimal, "winner": self.winner,
                "elapsed": round(self.elapsed, 3), "proof": self.proof, "status": self.status,
                "interrupted": self.interrupted, "engines": dict(self.run.engines),
                "run": self.run.to_dict()}


def _summary(result: PortfolioResult, elapsed: float, expand: Callable[[Any], Any]) -> SolveResult:
    bound = result.best_bound
    if result.solution is not None:
        status = "optimal" if result.proven_optimal else "feasible"
    else:
        status = "infeasible" if result.infeasible_proven_by else "none"
    return SolveResult(
        plan=[] if result.solution is None else [int(s) for s in expand(result.solution)],
        cost=result.cost, feasible=result.solution is not None,
        lower_bound=None if bound is None else bound.value, optimal=result.proven_optimal,
        winner=result.winner, elapsed=elapsed, proof=result.proof, status=status,
        interrupted=result.interrupted, run=result)


class _Improvements:
    """The runner's ``on_update`` hook (called in the caller's thread at every turn of its loop):
    passes each cheaper verified plan to ``on_improve``, so the costs it sees strictly decrease."""

    def __init__(self, on_improve: OnImprove, start: float, expand: Callable[[Any], Any]) -> None:
        self.on_improve, self.start, self.cost, self.expand = on_improve, start, None, expand

    def _tell(self, cost: int, plan: Any, source: str) -> None:
        self.cost = cost
        self.on_improve(cost, [int(s) for s in self.expand(plan)], source,
                        time.monotonic() - self.start)

    def __call__(self, runner: Portfolio) -> None:
        found = runner.incumbent()
        if found is not None and (self.cost is None or found[0] < self.cost):
            self._tell(*found)

    def last(self, result: PortfolioResult) -> None:
        """The answer, when the loop ended before it could be told (a tiny instance settled first,
        a plan accepted in the last turn)."""
        if result.cost is not None and (self.cost is None or result.cost < self.cost):
            self._tell(result.cost, result.solution, result.winner or "runner")


def _check_options(time_limit: Any, seed: Any, on_improve: Any, workers: Any,
                   memory_limit: Any) -> None:
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or \
            not math.isfinite(time_limit) or time_limit <= 0:
        raise ProblemError(f"time_limit: expected a positive number of seconds, got {time_limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ProblemError(f"seed: expected an integer, got {seed!r}")
    if on_improve is not None and not callable(on_improve):
        raise ProblemError(f"on_improve: expected a callable, got {type(on_improve).__name__}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ProblemError(f"workers: expected a positive integer, got {workers!r}")
    if memory_limit not in ("default", None) and (isinstance(memory_limit, bool) or
                                                   not isinstance(memory_limit, int) or memory_limit < 1):
        raise ProblemError(f"memory_limit: expected bytes (a positive integer), None or \"default\", "
                           f"got {memory_limit!r}")


def solve(problem: ProblemLike, *, time_limit: float = 60.0,
          backends: Union[str, Sequence[str], None] = None, seed: int = 0,
          on_improve: Optional[OnImprove] = None, workers: Optional[int] = None,
          presolve: bool = True, exhaustive: bool = True, early_stop: bool = True,
          memory_limit: Union[int, str, None] = "default", warm_start: Optional[Sequence[int]] = None,
          cost_scale: float = 1.0) -> SolveResult:
    """Find the cheapest feasible plan for ``problem`` within ``time_limit`` seconds of this call
    (loading included), as ``portfolio solve`` does, and return it verified.

    ``problem``: a path, a :class:`Problem` or a dict in the contest layout. ``backends``: names
    (a list, or ``"greedy,localsearch"``); None, the CLI's default set. ``on_improve(cost, plan,
    backend, seconds)`` is called in this thread with each cheaper verified plan (plans, here and in
    the result, in the caller's node order: an XLA request's own, followers included); an exception it
    raises ends the run (every worker is ended) and propagates. ``memory_limit``: bytes per
    backend, None for no cap, ``"default"`` for the CLI's share of the RAM. ``warm_start``: a plan to
    start from. ``cost_scale`` multiplies an XLA request's costs before rounding (docs/api.md, "XLA").
    Bad input raises :class:`ProblemError`. Runs in this process serialise.
    """
    start = time.monotonic()
    _check_options(time_limit, seed, on_improve, workers, memory_limit)
    if isinstance(cost_scale, bool) or not isinstance(cost_scale, (int, float)) or \
            not math.isfinite(cost_scale) or cost_scale <= 0:
        raise ProblemError(f"cost_scale: expected a positive number, got {cost_scale!r}")
    conversion = as_conversion(problem, float(cost_scale))
    prob = conversion.problem
    hint = None
    if warm_start is not None:
        from ..evaluate import as_solution

        # SolutionError, a ProblemError, names the entry
        hint = as_solution(prob, conversion.restrict(warm_start) if conversion.maps_nodes else warm_start)
    chosen = choose_backends(backends, time_limit)
    told = _Improvements(on_improve, start, conversion.expand) if on_improve is not None else None
    with _ONE_RUN:
        result = run(prob, chosen, float(time_limit), start=start, workers=workers, seed=seed,
                     presolve=presolve, exhaustive=exhaustive, early_stop=early_stop,
                     memory_limit=memory_limit,
                     warm_start=hint, on_update=told)
    if told is not None:
        told.last(result)
    return _summary(result, time.monotonic() - start, conversion.expand)


def backends() -> list[dict]:
    """Every backend this installation knows: ``name``, ``available`` and why not (``reason``),
    ``default`` (in the set ``solve`` runs when none is named), ``description``, ``capabilities``,
    ``engines`` (each engine it declares and its installed version, None when missing)."""
    from ..registry import Registry

    registry = Registry()
    for warning in registry.warnings:
        log.warning(warning)
    return registry.describe()
