"""What one solve is asked to do, in one object: :class:`RunOptions`, with the cluster part in
:class:`ClusterOptions`.

The CLI (``portfolio solve``, ``iopddl``), the Python API (``portfolio.solve``), ``bench``, a
cluster's shard process and the Alpa adapter each build one; the runner
(:func:`portfolio.runner.run_portfolio`) and the cluster's life cycle
(:mod:`portfolio.distributed.session`) read it. Why one object: the same settings used to be
threaded as 19 positional parameters through four layers, and a new one meant editing each.

An object is checked when it is made (:meth:`RunOptions.check`): a bad value raises
:class:`~portfolio.errors.ProblemError` with one line naming the field, the line ``portfolio.solve``
gives and the CLI prints. Callbacks and live objects of one run (``on_update``, the cluster's
``hold`` and ``keep_open``, an already ``presolved`` problem) are not options: they are arguments of
``run_portfolio`` of their own.

Deterministic mode (``deterministic=True``, docs/determinism.md) swaps the time budget for a work
budget (``work`` units, :mod:`portfolio.work`); ``time_limit`` is then only the wall-clock safety
net, ``DETERMINISTIC_TIME_LIMIT`` unless given.

The defaults are the runner's: nothing is done that the caller did not ask for. ``portfolio solve``
and ``portfolio.solve`` ask for presolve and for settling a tiny instance by scoring every plan
(``presolve=True, exhaustive=True``); a test of a backend leaves them off so that its backend runs.
Floor 2: imports nothing of the project but ``errors`` (floor 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from .errors import ProblemError

POLICIES = ("share", "pin", "slices")
"""How backends share the cores (:mod:`portfolio.runner.schedule`)."""

DEFAULT_POLICY = "share"

TIME_LIMIT = 60.0
"""Seconds of a timed run when none is given."""

DEFAULT_WORK = 110_000
"""Work units of a deterministic run when none is given (:mod:`portfolio.work`: about a millisecond
of one core of the reference machine each), split among the run's backends in proportion to their
``work_share``: about 60 s with the default portfolio on the reference machine (2 cores;
docs/benchmarks/determinism.md, "The default budget")."""

WORK_PER_SECOND = DEFAULT_WORK / 60.0
"""Work units a nominal second: the default work budget takes about 60 s with the default
portfolio on the reference machine, so a budget-aware option reads it as a 60 s run."""

DETERMINISTIC_TIME_LIMIT = 600.0
"""The wall-clock safety net of a deterministic run when no time limit is given: generous, so that
the work budget, not the clock, ends the run."""

TRANSFERS = ("auto", "path", "scatter")
"""How a cluster's workers get the problem: the same path, its bytes sent once, or whichever works."""

UNREACHABLE = ("local", "fail")
"""What to do when the scheduler cannot be reached at the start: run here only, or raise."""

OBJECTIVES = ("cost", "peak")
"""What a solve minimises: the plan's cost under the memory limit, or its peak memory (ties broken
by cost; :mod:`portfolio.memory.objective`, docs/budgets.md)."""

MemoryLimit = Union[int, str, None]
"""Bytes per backend (everything it starts included), None for no cap, ``"default"`` for a share of
the RAM (:func:`portfolio.runner.contain.default_memory_limit`)."""


def _positive_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ProblemError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True)
class ClusterOptions:
    """One solve across a Dask cluster (docs/distributed.md): the scheduler's address, or a local
    cluster of ``workers`` processes; exactly one of the two. The API's keywords and the CLI's flags
    are ``dask_scheduler`` (``--dask-scheduler``), ``dask_workers``, ``dask_problem`` (this
    ``transfer``) and ``dask_unreachable``."""

    scheduler: Optional[str] = None
    workers: Optional[int] = None
    transfer: str = "auto"
    unreachable: str = "local"

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """One line naming the field for a value that cannot be used (:class:`ProblemError`)."""
        if self.scheduler is not None and self.workers is not None:
            raise ProblemError("dask_scheduler and dask_workers exclude each other: give one")
        if self.scheduler is None and self.workers is None:
            raise ProblemError("dask_scheduler or dask_workers: give one for a cluster solve")
        if self.scheduler is not None and (not isinstance(self.scheduler, str) or not self.scheduler):
            raise ProblemError(f"dask_scheduler: expected an address such as tcp://HOST:PORT, "
                               f"got {self.scheduler!r}")
        if self.workers is not None and not _positive_int(self.workers):
            raise ProblemError(f"dask_workers: expected a positive integer, got {self.workers!r}")
        _choice("dask_problem", self.transfer, TRANSFERS)
        _choice("dask_unreachable", self.unreachable, UNREACHABLE)


@dataclass(frozen=True)
class RunOptions:
    """The settings of one portfolio run (see the module). Times are seconds; ``start`` is a
    ``time.monotonic()`` value (None: when the runner starts)."""

    time_limit: Optional[float] = None
    """Seconds from ``start`` to the answer (None: ``TIME_LIMIT``, or ``DETERMINISTIC_TIME_LIMIT``
    in deterministic mode, where it is the safety net only)."""
    start: Optional[float] = None
    """What the budget counts from: the command's start for the CLI, the call for the API."""
    workers: Optional[int] = None
    """Cores the backends share (None: this process's CPU affinity)."""
    seed: int = 0
    presolve: bool = False
    """Presolve in a child under the deadline; backends declaring ``reduced`` get its problem."""
    exhaustive: bool = False
    """Score every plan of a tiny instance first (:mod:`portfolio.exhaustive`)."""
    early_stop: bool = True
    """End the run on a proof or an exact backend's claim, before the deadline."""
    policy: str = DEFAULT_POLICY
    extra_seeds: bool = True
    """Start more seeds of randomized backends on idle cores."""
    memory_limit: MemoryLimit = "default"
    fallback: bool = True
    """The runner's least-memory plan may be the answer (``bench`` turns it off: a row is its
    backends' own)."""
    honour_demand: bool = True
    """A backend that declares a low CPU demand runs at the lowest priority."""
    warm_start: Any = field(default=None, compare=False)
    """A plan of the problem the run starts from (checked by the runner like any plan)."""
    cluster: Optional[ClusterOptions] = None
    """Run across a Dask cluster (read by :mod:`portfolio.distributed.session`, not the runner)."""
    deterministic: bool = False
    """The same plan for the same problem, seed and work, whatever the load or the cores
    (docs/determinism.md): backends count work units and exchange plans at fixed points."""
    work: Optional[int] = None
    """Work units of a deterministic run, split among its backends in proportion to their declared
    ``work_share`` (None: ``DEFAULT_WORK``).
    Given, it implies ``deterministic``: a work budget means nothing to a timed run."""
    objective: str = "cost"
    """``cost`` (the cheapest plan that fits) or ``peak`` (the plan with the least peak memory,
    ties broken by cost): read by :func:`portfolio.api.run`, which hands a ``peak`` solve to
    :func:`portfolio.memory.objective.solve_least_peak` (a search over budgets made of runs)."""
    cold: Optional[tuple[str, ...]] = None
    """In a run with a ``warm_start``: the backends that do not start from it but as in a cold run
    (from the best plan this run's backends found, or none); the warm plan stays an incumbent they
    can read (``report.best()``). None: the runner's measured default
    (:data:`portfolio.runner.warmstart.COLD`); ``()``: every backend starts from it."""
    cpu_weights: Mapping[str, float] = field(default_factory=dict)
    """CPU weight per backend, from a selector's schedule (docs/selection.md; empty: equal
    shares; a backend not named weighs 1). Applied at each worker's start: a priority under
    ``share`` and ``pin`` (nice levels, :mod:`portfolio.runner.schedule`), the slices' ranking
    under ``slices``, the choice of extra seed copies, and in deterministic mode each backend's
    share of the work (``work_share`` times its weight)."""
    adaptive: bool = False
    """The adaptive rule (:mod:`portfolio.runner.focus`): CPU (in deterministic mode, work) moves
    within the run toward the backends that improve the incumbent, above a floor that keeps the
    portfolio's guarantees. False: the shares stay as they started. Off by default until it is
    measured no worse than the fixed shares (docs/benchmarks/runner.md, "The adaptive rule")."""
    config: Optional[str] = field(default=None, compare=False)
    """The config files the backend options came from, in merge order, joined by ``os.pathsep``
    (a record: their options are in ``backend_options`` already)."""
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Options given for backends, ``{backend: {option: value}}`` (typed values, checked against
    the backends' declarations by :mod:`portfolio.configure` before a run; the runner resolves
    every declared option of each backend it runs, defaults included, and records them)."""

    def __post_init__(self) -> None:
        if self.work is not None and self.deterministic is False:
            object.__setattr__(self, "deterministic", True)
        if self.time_limit is None:
            object.__setattr__(self, "time_limit",
                               DETERMINISTIC_TIME_LIMIT if self.deterministic is True else TIME_LIMIT)
        self.check()
        object.__setattr__(self, "time_limit", float(self.time_limit))   # 10 and 10.0 alike

    @property
    def budget_seconds(self) -> float:
        """The budget a budget-aware option default reads (:class:`portfolio.backend_options.
        Budgeted`): the time limit, or in deterministic mode the work budget in nominal seconds
        (``WORK_PER_SECOND`` units a second, so the default work budget reads as 60 s)."""
        if self.deterministic:
            return float(self.work_budget or DEFAULT_WORK) / WORK_PER_SECOND
        return float(self.time_limit)

    @property
    def work_budget(self) -> Optional[int]:
        """The run's work units in deterministic mode (``work`` or ``DEFAULT_WORK``), else None."""
        if not self.deterministic:
            return None
        return DEFAULT_WORK if self.work is None else self.work

    def check(self) -> None:
        """One line naming the field for a value that cannot be used (:class:`ProblemError`)."""
        limit = self.time_limit
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or \
                not math.isfinite(limit) or limit <= 0:
            raise ProblemError(f"time_limit: expected a positive number of seconds, got {limit!r}")
        if self.start is not None and (isinstance(self.start, bool) or
                                       not isinstance(self.start, (int, float))):
            raise ProblemError(f"start: expected a time.monotonic() value, got {self.start!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ProblemError(f"seed: expected an integer, got {self.seed!r}")
        if self.workers is not None and not _positive_int(self.workers):
            raise ProblemError(f"workers: expected a positive integer, got {self.workers!r}")
        if self.memory_limit not in ("default", None) and not _positive_int(self.memory_limit):
            raise ProblemError(f"memory_limit: expected bytes (a positive integer), None or "
                               f"\"default\", got {self.memory_limit!r}")
        _choice("policy", self.policy, POLICIES)
        if self.cluster is not None and not isinstance(self.cluster, ClusterOptions):
            raise ProblemError(f"cluster: expected ClusterOptions, got {type(self.cluster).__name__}")
        if not isinstance(self.deterministic, bool):
            raise ProblemError(f"deterministic: expected True or False, got {self.deterministic!r}")
        if self.work is not None and not _positive_int(self.work):
            raise ProblemError(f"work: expected a positive integer number of work units, "
                               f"got {self.work!r}")
        _choice("objective", self.objective, OBJECTIVES)
        if self.objective == "peak" and self.deterministic:
            raise ProblemError("objective: 'peak' is not supported in deterministic mode (its "
                               "search over budgets is timed); use a timed run")
        if self.objective == "peak" and self.cluster is not None:
            raise ProblemError("objective: 'peak' is not supported in a cluster solve "
                               "(dask_scheduler, dask_workers); run it on one machine")
        if not isinstance(self.backend_options, Mapping) or not all(
                isinstance(k, str) and isinstance(v, Mapping) and all(isinstance(n, str) for n in v)
                for k, v in self.backend_options.items()):
            raise ProblemError(f"backend_options: expected {{backend: {{option: value}}}}, got "
                               f"{self.backend_options!r}"[:200])
        if not isinstance(self.cpu_weights, Mapping) or not all(
                isinstance(k, str) and not isinstance(v, bool) and isinstance(v, (int, float))
                and math.isfinite(v) and v > 0 for k, v in self.cpu_weights.items()):
            raise ProblemError(f"cpu_weights: expected {{backend: positive weight}}, got "
                               f"{self.cpu_weights!r}"[:200])
        if not isinstance(self.adaptive, bool):
            raise ProblemError(f"adaptive: expected True or False, got {self.adaptive!r}")
        if self.cold is not None and (not isinstance(self.cold, tuple)
                                      or not all(isinstance(n, str) for n in self.cold)):
            raise ProblemError(f"cold: expected a tuple of backend names, got {self.cold!r}")
        if self.deterministic and self.cluster is not None:
            raise ProblemError("deterministic: not supported in a cluster solve (dask_scheduler, "
                               "dask_workers); run it on one machine")
