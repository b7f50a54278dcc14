"""``portfolio.solve``: the CLI's ``portfolio solve`` as a function a host program can call.

The CLI and this function share :func:`choose_backends` and :func:`run`, and both build one
:class:`~portfolio.options.RunOptions` with the same defaults (presolve, scoring every plan of a
tiny instance, the runner's fallback plan), so both pick the same backends and give the same
answers; a cluster solve goes through :mod:`portfolio.distributed.session` for both. What the
function adds is for a host: nothing on stdout, warnings through :mod:`logging`, one exception type for bad input, improving plans
handed to a callback in the caller's thread, and one run at a time per process.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from ..errors import ProblemError
from ..options import RunOptions
from ..problem import Problem
from .inputs import ProblemLike, as_conversion
from .selecting import (DEFAULT, SelectorLike, UserChoice, config_names_backends, open_selector,
                        select_run)
from .warm import PlanLike, WarmChoice, given_warm_start

if TYPE_CHECKING:
    from ..adapters.naming import NodeNaming
    from ..configure import ConfigPaths
    from ..backend import BackendLike
    from ..distributed.session import ClusterSession
    from ..options import ClusterOptions
    from ..runner import Portfolio, PortfolioResult

log = logging.getLogger("portfolio")

OnImprove = Callable[[int, list, str, float], Any]
"""``on_improve(cost, plan, backend, seconds)``: a cheaper verified plan, seconds since the call."""

_ONE_RUN = threading.Lock()
"""One portfolio run at a time in a process: a run adopts and sweeps every process its workers
leave behind (see ``portfolio.runner.contain``), which would reach into a concurrent run's workers.
A second caller waits for the first run to end."""


def choose_backends(names: Union[str, Sequence[Any], None], time_limit: Optional[float] = None,
                    warn: Callable[[str], None] = log.warning,
                    deterministic: bool = False, registry: Any = None,
                    add_to_default: Sequence[str] = ()) -> list[BackendLike]:
    """The backends to run: the default set (``Registry.select(None)``, as ``portfolio solve``,
    with the outside backends a config adds, ``add_to_default``) when ``names`` is None, else the
    named ones, each available here. ``available()`` checks may take a
    tenth of ``time_limit``. Unknown or unavailable names raise :class:`ProblemError` (one line).

    ``deterministic``: a named backend that does not support the mode is refused (one line); from
    the default set such backends are named in one ``warn`` line, and the runner leaves them out
    (:func:`portfolio.runner.exchange.deterministic_split`); none that supports it is an error."""
    from ..registry import AVAILABLE_TIMEOUT, Registry, RegistryError, parse_backend_list

    if registry is None:
        registry = Registry()
        for warning in registry.warnings:
            warn(warning)
    try:
        if time_limit is not None:
            registry.check_timeout = min(AVAILABLE_TIMEOUT, max(0.5, 0.1 * time_limit))
        registry.check_added(add_to_default)
        if names is None:
            chosen = registry.select(None, add_to_default)
        elif not isinstance(names, str) and any(not isinstance(n, str) for n in names):
            chosen = _with_objects(list(names), registry)
        else:
            if not isinstance(names, str):
                names = ",".join(names)
            chosen = registry.resolve(parse_backend_list(names, registry))
    except RegistryError as exc:
        raise ProblemError(str(exc)) from None
    if not chosen:
        raise ProblemError("no backend is available; see `portfolio backends`")
    if deterministic:
        _deterministic_choice(registry, chosen, named=names is not None, warn=warn)
    return chosen


@dataclass(frozen=True)
class Chosen:
    """The backends of a run and their options, chosen and checked before anything runs."""

    backends: list
    options: dict
    config: Optional[str] = None
    """The config files, in merge order, joined by ``os.pathsep`` (a record)."""
    outside: tuple = ()
    """The chosen backends that are not built-ins (:meth:`portfolio.registry.Registry.outside`)."""
    plugins_env: Optional[str] = None
    """``PORTFOLIO_PLUGINS`` as the registry read it (None: not set): recorded with the run."""

    def took_part(self, result: PortfolioResult) -> list[dict]:
        """:attr:`outside`, less the backends that did not run (deterministic mode leaves some of
        the default set out; a tiny instance settled first starts none)."""
        ran = {run.backend for run in result.runs.values()}
        return [dict(o) for o in self.outside if o["name"] in ran]
    registry: Any = field(default=None, repr=False, compare=False)
    """The registry they were chosen from (a second choice in the same run reuses it)."""


def choose(names: Union[str, Sequence[Any], None], time_limit: Optional[float] = None, *,
           warn: Callable[[str], None] = log.warning, deterministic: bool = False,
           config: ConfigPaths = None,
           backend_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
           assignments: Sequence[str] = (), cold: Optional[Sequence[str]] = None,
           registry: Any = None) -> Chosen:
    """:func:`choose_backends` and the run's backend options (:mod:`portfolio.configure`): the
    config files' (merged in order; their ``[portfolio] backends`` when ``names`` is None, their
    ``add_to_default`` for the default set), then ``backend_options``, then the command line's
    ``BACKEND.NAME=VALUE`` texts. Every problem is one :class:`ProblemError` line (an
    :class:`~portfolio.backend_options.OptionError`), before anything runs; options for a backend
    the run does not use are checked, then named in one ``warn`` line each. ``cold`` (a warm
    start's cold part): each name a known backend, checked as ``--backends`` is (one line); one
    the run does not use is named in a ``warn`` line. ``registry``: one already loaded (its warnings were told then)."""
    from ..configure import config_from, not_in_run, run_options_given
    from ..registry import PLUGINS_ENV, Registry, RegistryError

    settings = config_from(config)
    if registry is None:
        registry = Registry()
        for warning in registry.warnings:
            warn(warning)
    if names is None and settings is not None and settings.backends is not None:
        names = list(settings.backends)
    added = () if settings is None else settings.add_to_default or ()
    try:
        registry.check_added(added)
    except RegistryError as exc:
        raise ProblemError(f"{settings.path}: [portfolio] {exc}") from None
    chosen = choose_backends(names, time_limit, warn, deterministic, registry=registry,
                             add_to_default=added)
    given = run_options_given(registry, chosen, config=settings, given=backend_options,
                              assignments=assignments)
    for name in not_in_run(given, chosen):
        warn(f"options for {name} are set, but {name} is not in this run: they have no effect")
    _check_cold(cold, registry, chosen, warn)
    return Chosen(chosen, given, None if settings is None else settings.path,
                  tuple(registry.outside(chosen)), os.environ.get(PLUGINS_ENV), registry)


def _check_cold(cold: Optional[Sequence[str]], registry: Any, chosen: Sequence[BackendLike],
                warn: Callable[[str], None]) -> None:
    """``cold``'s names checked as ``--backends``' are: an unknown one is one
    :class:`ProblemError` line naming the known ones; a known one outside the run, a note."""
    from ..registry import RegistryError, parse_backend_list

    if cold is None or not cold:
        return
    running = {b.name for b in chosen}
    try:
        names = parse_backend_list(",".join(cold), registry)
    except RegistryError as exc:
        raise ProblemError(f"cold: {str(exc).removeprefix('--backends ')}") from None
    unknown = [n for n in names if n not in running and registry.info(n) is None]
    if unknown:
        word = "backend" if len(unknown) == 1 else "backends"
        known = sorted(running | set(registry.names()))
        raise ProblemError(f"cold: unknown {word} {', '.join(map(repr, unknown))}; known "
                           f"backends: {', '.join(known)}")
    for name in names:
        if name not in running:
            warn(f"cold: {name} is not in this run: naming it has no effect")


def _with_objects(items: list, registry: Any) -> list[BackendLike]:
    """``backends`` holding backend objects (a plugin's backend that is not installed, as in its
    own tests), names among them resolved by the registry, in the given order."""
    from ..registry import _junk_reason, parse_backend_list

    for item in items:
        why = "" if isinstance(item, str) else _junk_reason(item)
        if why:
            raise ProblemError(f"backends: {why}, neither a backend name nor a backend object")
    names = [n for n in items if isinstance(n, str)]
    found = iter(registry.resolve(parse_backend_list(",".join(names), registry)) if names else [])
    chosen = [next(found) if isinstance(item, str) else item for item in items]
    seen = [b.name for b in chosen]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise ProblemError(f"backends: more than one backend named {', '.join(twice)}")
    return chosen


def _deterministic_choice(registry: Any, chosen: list[BackendLike], named: bool,
                          warn: Callable[[str], None]) -> None:
    """Deterministic mode's rule on the chosen backends (see :func:`choose_backends`)."""
    from ..runner.exchange import deterministic_split

    kept, left_out = deterministic_split(chosen)
    able = [i.backend.name for i in registry.infos()
            if i.meta.deterministic and not i.meta.test_only]
    offer = f"backends that support it: {', '.join(able) or '(none)'} (docs/determinism.md)"
    if named and left_out:
        word = "does" if len(left_out) == 1 else "do"
        raise ProblemError(f"deterministic mode: {', '.join(left_out)} {word} not support it; {offer}")
    if not kept:
        raise ProblemError(f"deterministic mode: no backend of the default set supports it; {offer}")
    if left_out:
        warn(f"deterministic mode: left out {', '.join(sorted(left_out))} (not deterministic)")


def run(problem: Problem, backends: Sequence[BackendLike], options: RunOptions, *,
        on_update: Optional[Callable[[Portfolio], None]] = None,
        cluster: Optional[ClusterSession] = None, explain: bool = True,
        naming: Optional[NodeNaming] = None) -> PortfolioResult:
    """One portfolio run, on this machine or with a cluster session's shards
    (:func:`portfolio.distributed.session.open_session`): what ``portfolio solve`` and
    :func:`solve` both call. The caller then ends the session (``finish``, ``close``).

    ``options.objective == "peak"`` runs the least-peak search instead
    (:func:`portfolio.memory.objective.solve_least_peak`). With ``explain``, a run that ends
    without a plan that fits (none, or only plans with forbidden choices) gets ``memory``: why
    (:func:`portfolio.memory.explain.explain`, docs/budgets.md), computed after the run.
    ``naming`` (the conversion's, :class:`~portfolio.adapters.naming.NodeNaming`): the numbering
    those documents name nodes in, the file's (the problem's own when None)."""
    from ..runner import run_portfolio

    if options.objective == "peak":
        from ..memory.objective import solve_least_peak

        return solve_least_peak(problem, backends, options, on_update=on_update, naming=naming)
    called = time.monotonic()
    if cluster is None:
        result = run_portfolio(problem, backends, options, on_update=on_update)
    else:
        result = run_portfolio(problem, backends, cluster.run_options(options),
                               **cluster.hooks(on_update))
    if explain and (result.solution is None or result.evaluation.has_forbidden) \
            and _seconds_left(options, called) >= EXPLAIN_SECONDS:
        from ..memory.explain import explain as explain_memory

        result.memory = explain_memory(problem, result, deterministic=options.deterministic,
                                       naming=naming)
    return result


EXPLAIN_SECONDS = 1.0
"""The explanation of a run without a plan that fits (its bound, its least-memory plan) is computed
after the run, within the time limit: only when at least this much of it is left, so that the
answer is never late (``memory`` stays None otherwise; a run that proves infeasibility ends early)."""


def _seconds_left(options: RunOptions, called: float) -> float:
    from ..options import DETERMINISTIC_TIME_LIMIT, TIME_LIMIT

    limit = options.time_limit if options.time_limit is not None else (
        DETERMINISTIC_TIME_LIMIT if options.deterministic else TIME_LIMIT)
    start = options.start if options.start is not None else called
    return start + limit - time.monotonic()


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
    """Proven optimal and verified: by the runner's own proof or an ``exact`` backend's bound (a
    lone backend's claim about its own plan is not enough, nor a backend that is not exact)."""
    winner: Optional[str]
    elapsed: float
    """Seconds from the call to the end of the run, loading included."""
    proof: Optional[str]
    status: str
    """``optimal``, ``feasible``, ``infeasible`` (claimed by an exact backend, unrefuted) or ``none``."""
    interrupted: Optional[str]
    """``SIGINT``/``SIGTERM`` when a signal (Ctrl-C, a Jupyter interrupt) ended the run early."""
    plan_hash: Optional[str]
    """A short fingerprint of the plan (SHA-256 of its int64 bytes in the problem's node order, 16
    hex digits): two runs gave the same plan when their hashes agree."""
    deterministic: Optional[dict]
    """A deterministic run's word on itself (None for a timed run): ``complete`` is False when the
    answer is not the deterministic one (``reason``: the safety net fired, a worker died), with
    ``work``, ``points`` and ``left_out`` (docs/determinism.md)."""
    run: PortfolioResult = field(repr=False, compare=False)
    cluster: Optional[dict] = field(default=None, repr=False, compare=False)
    """A cluster solve's summary (scheduler, state, shards, traffic), as the CLI's ``--json``
    document has it under ``cluster``; None for a solve on this machine only."""
    warm_start: Optional[dict] = field(default=None, repr=False, compare=False)
    """The warm start's fate, as ``--json`` has it under ``warm_start``: ``source`` (the caller's
    plan, its file, the request's ``s_hint``, a re-solve's previous plan), ``status`` (``as
    given``, ``repaired``, ``hint only``), its ``cost`` (None when infeasible) or ``why`` not, the
    ``repair``, ``start_cost``, ``improvement`` and ``improvement_percent`` of the answer on it, and
    for a re-solve the ``mapping``; None without a warm start."""
    outside_backends: list = field(default_factory=list, repr=False, compare=False)
    """The backends of the run that are not this project's built-ins (another distribution's, a
    ``PORTFOLIO_PLUGINS`` module's, an object given in ``backends``), each ``name``,
    ``distribution``, ``version`` and ``via`` (how it came); empty when only built-ins ran."""
    plugins_env: Optional[str] = field(default=None, repr=False, compare=False)
    """``PORTFOLIO_PLUGINS`` when the backends were chosen (None: not set)."""
    callback_error: Optional[dict] = field(default=None, repr=False, compare=False)
    """What ``on_improve`` raised (``hook``, ``error``, ``traceback``; the runner's
    ``callback_error``): it ended the run, whose best verified plan is this result's all the
    same. None when it did not raise."""
    selection: Optional[dict] = field(default=None, repr=False, compare=False)
    """What a selector chose for this run (docs/selection.md): its file and hash, the schedule,
    every candidate's predicted score, the features' and the model's seconds, and whether it was
    ``applied`` (``why`` not); None without a selector."""
    memory: Optional[dict] = field(default=None, repr=False, compare=False)
    """Memory budgets (docs/budgets.md): when no plan fits, why, about one time point (``time``;
    ``bound``: the certified least peak, ``best``: the least-memory plan found, its peak and its top
    nodes at ``time``, ``verdict``: ``proven infeasible`` or ``not found in time``, ``text``); with
    ``objective="peak"``, the least peak found (``least_peak``), its ``bound``, ``gap`` and
    ``proven``; None otherwise. Nodes in the file's own numbering, with instruction names."""

    def to_dict(self) -> dict:
        """A JSON-serialisable summary (with ``engines``: the solver versions that ran), with the
        CLI's whole result document under ``run`` (and a cluster solve's summary under
        ``cluster``)."""
        return {"plan": list(self.plan), "cost": self.cost, "feasible": self.feasible,
                "lower_bound": self.lower_bound, "optimal": self.optimal, "winner": self.winner,
                "elapsed": round(self.elapsed, 3), "proof": self.proof, "status": self.status,
                "interrupted": self.interrupted, "plan_hash": self.plan_hash,
                "deterministic": self.deterministic, "engines": dict(self.run.engines),
                "warm_start": self.warm_start, "selection": self.selection, "memory": self.memory,
                "outside_backends": [dict(o) for o in self.outside_backends],
                "plugins_env": self.plugins_env, "run": self.run.to_dict(), "cluster": self.cluster,
                "callback_error": self.callback_error}


def _summary(result: PortfolioResult, elapsed: float, expand: Callable[[Any], Any],
             cluster: Optional[dict], warm: Optional[WarmChoice] = None,
             picked: Optional[Chosen] = None, selection: Optional[dict] = None) -> SolveResult:
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
        interrupted=result.interrupted, plan_hash=result.plan_hash,
        deterministic=result.deterministic, run=result, cluster=cluster,
        warm_start=None if warm is None else warm.describe(result.warm_start), memory=result.memory,
        outside_backends=[] if picked is None else picked.took_part(result),
        plugins_env=None if picked is None else picked.plugins_env,
        callback_error=result.callback_error, selection=selection)


class _Improvements:
    """The runner's ``on_update`` hook (called in the caller's thread at every turn of its loop):
    passes each cheaper verified plan to ``on_improve``, so the costs it sees strictly decrease."""

    def __init__(self, on_improve: OnImprove, start: float, expand: Callable[[Any], Any]) -> None:
        self.on_improve, self.start, self.cost, self.expand = on_improve, start, None, expand
        self.raised = False   # on_improve raised (the runner ends the run and keeps the error)

    def _tell(self, cost: int, plan: Any, source: str) -> None:
        self.cost = cost
        try:
            self.on_improve(cost, [int(s) for s in self.expand(plan)], source,
                            time.monotonic() - self.start)
        except Exception:
            self.raised = True
            raise

    def __call__(self, runner: Portfolio) -> None:
        found = runner.incumbent()
        if found is not None and (self.cost is None or found[0] < self.cost):
            self._tell(*found)

    def last(self, result: PortfolioResult) -> None:
        """The answer, when the loop ended before it could be told (a tiny instance settled first,
        a plan accepted in the last turn); what ``on_improve`` raised, in the result either way
        (``callback_error``, named ``on_improve``): the answer is never lost to it."""
        if result.callback_error is None and result.cost is not None and (
                self.cost is None or result.cost < self.cost):
            try:
                self._tell(result.cost, result.solution, result.winner or "runner")
            except Exception as exc:  # noqa: BLE001 -- the caller's code; kept with the answer
                result.callback_error = {"hook": "on_improve", "error": f"{type(exc).__name__}: "
                                         f"{exc}", "traceback": traceback.format_exc()}
        elif result.callback_error is not None and self.raised:   # the runner caught it
            result.callback_error["hook"] = "on_improve"


def _cluster(problem: ProblemLike, scheduler: Optional[str], workers: Optional[int],
             transfer: str, unreachable: str) -> Optional[ClusterOptions]:
    """The cluster part of the options, None without ``dask_scheduler`` or ``dask_workers``."""
    from ..options import ClusterOptions

    if scheduler is None and workers is None:
        return None
    cluster = ClusterOptions(scheduler, workers, transfer, unreachable)
    if not isinstance(problem, (str, os.PathLike)):
        name = "dask_scheduler" if scheduler is not None else "dask_workers"
        raise ProblemError(f"{name}: a cluster solve needs the problem as a file path (its workers "
                           f"read the file or get its bytes), got {type(problem).__name__}")
    return cluster


def solve(problem: ProblemLike, *, time_limit: Optional[float] = None,
          backends: Union[str, Sequence[Any], None] = None, seed: int = 0,
          on_improve: Optional[OnImprove] = None, workers: Optional[int] = None,
          presolve: bool = True, exhaustive: bool = True, early_stop: bool = True,
          memory_limit: Union[int, str, None] = "default", warm_start: Optional[PlanLike] = None,
          cost_scale: float = 1.0, dask_scheduler: Optional[str] = None,
          dask_workers: Optional[int] = None, dask_problem: str = "auto",
          dask_unreachable: str = "local", deterministic: bool = False,
          work: Optional[int] = None, objective: str = "cost",
          backend_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
          config: ConfigPaths = None,
          cold: Optional[Sequence[str]] = None, selector: SelectorLike = DEFAULT,
          adaptive: bool = RunOptions.adaptive) -> SolveResult:
    """Find the cheapest feasible plan for ``problem`` within ``time_limit`` seconds of this call
    (loading included; None: 60 s, or 600 s in deterministic mode), as ``portfolio solve`` does,
    and return it verified.

    ``deterministic=True`` (``--deterministic``) gives the same plan for the same problem, seed and
    ``work`` units (default ``options.DEFAULT_WORK``; giving ``work`` implies ``deterministic``),
    whatever the load or the cores: only backends that support the mode run (the others of the
    default set are left out with one warning; a named one is refused), and ``time_limit`` is the
    safety net only. The result's ``deterministic`` says whether the answer is the deterministic
    one (docs/determinism.md); ``plan_hash`` fingerprints the plan.

    ``problem``: a path, a :class:`Problem` or a dict in the contest layout. ``backends``: names
    (a list, or ``"greedy,localsearch"``), backend objects among them (a backend that is not
    installed); None, the CLI's default set. ``on_improve(cost, plan,
    backend, seconds)`` is called in this thread with each cheaper verified plan (plans, here and in
    the result, in the caller's node order: an XLA request's own, followers included); an exception it
    raises ends the run (every worker is ended), and the result comes back with its best verified
    plan and the error in ``callback_error``. ``memory_limit``: bytes per
    backend, None for no cap, ``"default"`` for the CLI's share of the RAM. ``warm_start``: a plan to
    start from (in the caller's node order), or the path of a file holding one (a JSON list, a
    ``--json`` result, contest output); an XLA request's own ``s_hint`` when None. The answer is
    never worse than it; one that is forbidden or over the memory limit is repaired first, and
    ``SolveResult.warm_start`` says what became of it; ``cold`` names the backends that do not start
    from it but as in a run without it (the warm plan stays an incumbent they see; None: the
    measured default, docs/benchmarks/resolve.md; ``()``: all start from it). ``cost_scale`` multiplies an XLA request's costs before rounding (docs/api.md, "XLA").
    ``objective="peak"`` (``--objective peak``) finds the plan with the least peak memory instead,
    ties broken by cost, whatever the file's limit; ``SolveResult.memory`` gives its peak beside
    the certified bound (docs/budgets.md). When no plan fits, ``memory`` says why.
    ``dask_scheduler`` (an address) or ``dask_workers`` (a local cluster of N processes) run the
    solve across a Dask cluster as ``--dask-scheduler``/``--dask-workers`` do (docs/distributed.md),
    ``problem`` then being a path; ``dask_problem`` and ``dask_unreachable`` are ``--dask-problem``
    and ``--dask-unreachable``. Messages about the cluster go to the ``portfolio`` logger.
    ``backend_options={"toulbar2": {"warm_follow": "last"}}`` sets backend options (``portfolio
    backends --verbose`` lists them; ``--option toulbar2.warm_follow=last``), over those of
    ``config``, a TOML file or a list of them merged in order (``--config``: one table per
    backend, ``[portfolio] backends`` used when ``backends`` is None, ``[portfolio]
    add_to_default`` for backends of other distributions, which join the default set only so);
    every option in effect is in ``result.run.options``. ``cold``'s names are checked as
    ``backends``' are. ``result.outside_backends`` names the backends of other distributions that
    took part.
    ``selector``: a selector file (``portfolio learn``) that chooses the schedule (backends,
    options, CPU weights) from the problem's cheap features and the budget; ``"default"``, the
    shipped one when the default uses it; None, none. Backends the caller names win over it;
    given options lie over its options; ``result.selection`` records its choice either way
    (docs/selection.md). ``adaptive=True`` (``--adaptive``) moves the CPU (the work, in
    deterministic mode) within the run toward the backends that improve the incumbent
    (``portfolio.runner.focus``); False (the default until it is measured, ``--no-adaptive``)
    keeps each backend's share as it started.
    Bad input raises :class:`ProblemError` (also a scheduler that cannot be reached with
    ``dask_unreachable="fail"``: ``ClusterUnavailable``, a subclass; an unknown option or a bad
    value: ``OptionError``, a subclass). Runs in this process serialise.
    """
    start = time.monotonic()
    options = RunOptions(time_limit, start=start, workers=workers, seed=seed, presolve=presolve,
                         exhaustive=exhaustive, early_stop=early_stop, memory_limit=memory_limit,
                         cluster=_cluster(problem, dask_scheduler, dask_workers, dask_problem,
                                          dask_unreachable),
                         deterministic=deterministic, work=work, objective=objective,
                         cold=None if cold is None else (cold,) if isinstance(cold, str)
                         else tuple(cold), adaptive=adaptive)
    time_limit = options.time_limit
    if on_improve is not None and not callable(on_improve):
        raise ProblemError(f"on_improve: expected a callable, got {type(on_improve).__name__}")
    if isinstance(cost_scale, bool) or not isinstance(cost_scale, (int, float)) or \
            not math.isfinite(cost_scale) or cost_scale <= 0:
        raise ProblemError(f"cost_scale: expected a positive number, got {cost_scale!r}")
    picked = choose(backends, time_limit, deterministic=options.deterministic, config=config,
                    backend_options=backend_options, cold=options.cold)
    options = replace(options, backend_options=picked.options, config=picked.config)
    selector_used = open_selector(selector)
    selection = None
    with ExitStack() as stack:
        session = None
        chosen = picked.backends
        if options.cluster is not None:
            from ..distributed.session import open_session

            # The whole session in the one run's time: its local cluster is a child of this
            # process that a concurrent run would end.
            stack.enter_context(_ONE_RUN)
            session = open_session(options.cluster, problem, chosen, options, float(cost_scale),
                                   say=log.warning)
            if session is not None:
                stack.callback(session.close)
        conversion = as_conversion(problem, float(cost_scale))
        if selector_used is not None:
            user = UserChoice(backends is not None or config_names_backends(config), cold is not None)
            picked, options, selection = select_run(
                selector_used, conversion.problem, picked, options, user=user, config=config,
                backend_options=backend_options, warn=log.warning, choose=choose)
            chosen = picked.backends
        warm = given_warm_start(conversion, warm_start)
        if warm is not None:
            options = replace(options, warm_start=warm.plan)
            log.info("warm start: %s", warm.source)
        if options.cluster is None:
            stack.enter_context(_ONE_RUN)
        told = None if on_improve is None else _Improvements(on_improve, start, conversion.expand)
        result = run(conversion.problem, chosen, options, on_update=told, cluster=session,
                     naming=conversion.naming)
        summary = None if session is None else session.finish(result)
    if told is not None:
        told.last(result)
    if result.deterministic is not None and not result.deterministic["complete"]:
        log.warning(f"not the deterministic answer: {result.deterministic['reason']}")
    return _summary(result, time.monotonic() - start, conversion.expand, summary, warm, picked,
                    selection)


def backends() -> list[dict]:
    """Every backend this installation knows: ``name``, ``available`` and why not (``reason``),
    ``default`` (in the set ``solve`` runs when none is named), ``deterministic`` (supports
    ``solve(deterministic=True)``), ``description``, ``capabilities``,
    ``engines`` (each engine it declares and its installed version, None when missing)."""
    from ..registry import Registry

    registry = Registry()
    for warning in registry.warnings:
        log.warning(warning)
    return registry.describe()
