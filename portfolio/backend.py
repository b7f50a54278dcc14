"""The contract between the portfolio and a solver backend, in one place.

A backend is any object with a ``name``, a one-line ``description``, ``capabilities``, an
``available()`` check and a ``solve(problem, deadline, seed, warm_start, report)`` method; what else
it declares about itself (in the default set or not, the engines it runs on, the modules it needs)
is one typed :class:`BackendMeta`, read through :func:`declared` only. Subclassing :class:`Backend`
is the easy way to get one. Backends know nothing of processes, terminals or the CLI: they receive a
problem and a deadline, stream improving plans through ``report`` (a :class:`Reporter`) and return a
:class:`SolveResult`. The runner re-verifies everything they say.
"""

from __future__ import annotations

import functools
import os
import re
import time
import types
import typing
import warnings
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, Iterable, Mapping, Optional, Protocol, runtime_checkable

import numpy as np

from .backend_options import Option
from .prices import PriceExchange, SharedPrices
from .problem import Problem
from .work import Work


class Status(str, Enum):
    """How a backend's run ended (the first six may be returned by a backend)."""

    OPTIMAL = "optimal"                       # solution proven optimal
    FEASIBLE = "feasible"                     # a feasible solution, optimality not proven
    INFEASIBLE_PROVEN = "infeasible-proven"   # proof that no feasible plan exists
    NO_SOLUTION = "no-solution"               # gave up without a feasible plan
    UNSUPPORTED = "unsupported"               # cannot handle this instance (size, shape); says why
    ERROR = "error"                           # failed (the runner also uses it for exceptions)
    # Set only by the runner:
    TIMEOUT = "timeout"                       # still running at the deadline, terminated
    CRASHED = "crashed"                       # the worker process died (signal, abort, exit)
    REJECTED = "rejected"                     # returned or reported something that failed verification
    PENDING = "pending"                       # waiting for a free worker
    RUNNING = "running"


@dataclass(frozen=True)
class Capabilities:
    """What the runner may expect of a backend."""

    exact: bool = False          # can prove optimality (and infeasibility)
    anytime: bool = False        # reports improving plans while it runs
    warm_start: bool = False     # uses a given starting plan (and fresh incumbents, via report.best())
    reduced: bool = False        # accepts a presolved (multi-interval, time-varying capacity) problem
    max_nodes: Optional[int] = None  # refuses larger instances with Status.UNSUPPORTED
    threads: bool = False        # uses several cores: give it spare ones (it reads allotted_cores())
    randomized: bool = False     # another seed searches differently: worth a copy on an idle core

    def labels(self) -> list[str]:
        out = [name for name in ("exact", "anytime", "warm_start", "reduced", "threads", "randomized")
               if getattr(self, name)]
        if self.max_nodes is not None:
            out.append(f"nodes<={self.max_nodes:,}")
        return out


@dataclass
class SolveResult:
    """A backend's final word. ``solution`` is an int64 array, or None."""

    status: Status
    solution: Optional[np.ndarray] = None
    lower_bound: Optional[int] = None
    note: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    safety_net: bool = False
    """Deterministic mode: the backend stopped on its wall-clock safety net before its work budget
    was spent. The run's answer is then not the deterministic one (its ``complete`` is False)."""


def no_nodes_result(num_nodes: int) -> Optional[SolveResult]:
    """The answer when there is nothing to decide (the empty plan), else None: the search kernels
    draw among n >= 1 nodes, so their backends return this first."""
    if num_nodes:
        return None
    return SolveResult(Status.FEASIBLE, np.zeros(0, dtype=np.int64), note="no nodes")


LOW, NORMAL, PROOF = "low", "normal", "proof"
DEMANDS = (NORMAL, LOW, PROOF)
"""CPU demand levels a backend may declare through ``report.demand`` (see :class:`Reporter`)."""


class Reporter(PriceExchange, Protocol):
    """What a backend gets as ``report``: call it with each improving plan; ``best``, ``bound``,
    ``demand``, ``work``, ``options`` and the two price methods of :class:`PriceExchange`
    (``publish_prices``, ``shared_prices``) are part of it too. Every member is declared here and
    every reporter has it: the runner's reporter and :class:`NullReporter` (for calling ``solve``
    directly, in tests), whose ``best``, ``work`` and price methods offer nothing. A backend calls
    them and reads them as they are, never through ``getattr`` with a default; a reporter of
    one's own subclasses ``NullReporter`` and overrides what it offers."""

    def __call__(self, solution: np.ndarray, note: str = "") -> None: ...

    def best(self) -> Optional[np.ndarray]:
        """The best verified plan the portfolio knows right now (from any backend), or None."""
        ...

    def bound(self, value: Optional[int], note: str = "") -> None:
        """A proven lower bound on the optimal cost, found during the run (a claim, checked like
        ``SolveResult.lower_bound``; an exact backend's bound that meets a verified cost ends the
        run). Send each improvement (None is ignored); the runner records them with their time
        (gap over time)."""
        ...

    def demand(self, level: str, why: str = "") -> None:
        """How much CPU the phase starting now deserves: ``"low"`` (a phase that rarely pays, such
        as an exact backend's LNS windows when its full model does not fit), ``"normal"``, or
        ``"proof"`` (an exact search on a model that fits, which may end the run with a proof:
        the runner's adaptive rule keeps its share whatever it finds, until it declares another
        level). The runner gives a low-demand worker the lowest priority (nice 19): it runs on
        cores nobody else wants. (A worker cannot raise its priority again without privileges:
        the runner treats ``"low"`` as final for the run.)"""
        ...

    work: Optional[Work]
    """Deterministic mode's budget (:mod:`portfolio.work`), None in a timed run: a backend that
    declares ``meta.deterministic`` counts its work through it and reads no clock."""

    options: Mapping[str, Any]
    """The values of the options the backend declares (``BackendMeta.options``), given or default
    (a budget-aware default resolved for the run's budget; empty on a direct call). Read them
    through :func:`options_of`, which fills in the defaults of those not given."""


class NullReporter:
    """A reporter for direct calls outside the runner: remembers plans, bounds and demands, shares
    nothing. Every member of :class:`Reporter` is here, so a reporter of one's own that subclasses
    it (overriding ``best`` to hand out a plan, say) is a whole reporter."""

    work: Optional[Work] = None
    """Set it to a :class:`~portfolio.work.CountingWork` to call a backend in deterministic mode."""
    options: Mapping[str, Any] = types.MappingProxyType({})
    """The options a direct call gives the backend (missing ones: their defaults)."""

    def __init__(self, options: Optional[Mapping[str, Any]] = None) -> None:
        self.reports: list[tuple[float, np.ndarray, str]] = []
        self.bounds: list[tuple[float, int, str]] = []
        self.demands: list[tuple[str, str]] = []
        self.options = dict(options or {})

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        self.reports.append((time.monotonic(), np.array(solution, dtype=np.int64), note))

    def best(self) -> Optional[np.ndarray]:
        return None

    def bound(self, value: Optional[int], note: str = "") -> None:
        if value is not None:
            self.bounds.append((time.monotonic(), value, note))

    def demand(self, level: str, why: str = "") -> None:
        self.demands.append((level, why))

    def publish_prices(self, key: str, prices: np.ndarray, bound: int, note: str = "") -> None:
        """Shares nothing (see :meth:`Reporter.publish_prices`)."""

    def shared_prices(self, key: str) -> Optional[SharedPrices]:
        return None


DISTRIBUTION = "iopddl-portfolio"
"""This package's distribution: its backends are the built-ins, its dependencies the bundled engines."""

PLAIN_ATTRIBUTES_REMOVED_IN = "0.3.0"
"""The release from which a declaration set as a plain class attribute without ``meta`` (the
older contract: ``default = False`` on the class) is ignored like any other attribute. Deprecated
since 0.2.0, honoured until then with a warning (CHANGELOG.md)."""


@dataclass(frozen=True)
class BackendMeta:
    """What a backend declares about itself besides its capabilities, as the class attribute
    ``meta``. Read only through :func:`declared`, which gives a backend without ``meta`` (a
    duck-typed one) every default and checks each field against its type: a new field is one
    line here, with its default."""

    default: bool = True
    """In the set a plain run (no ``--backends``) runs; ``False``: runs only when named."""
    test_only: bool = False
    """A test's backend: never in the default set, not offered in "available:" lists."""
    engines: tuple[str, ...] = ()
    """The distributions it computes with (``"ortools"``, ``"numba"``): their installed versions
    are recorded with results and runs (read from the package metadata: nothing is imported)."""
    requires: tuple[str, ...] = ()
    """Modules :meth:`Backend.available` looks for (``find_spec``, no import), each package level
    (``"pysat", "pysat.examples"``: one may be blocked alone)."""
    requirement: str = ""
    """The pip requirement that installs them (``"ortools>=9.10"``): the hint when one is missing."""
    deterministic: bool = False
    """Supports deterministic mode (:mod:`portfolio.work`): counts its work through
    ``report.work``, reads no clock, and gives the same plan for the same inputs and work."""
    work_share: float = 1.0
    """Deterministic mode: its part of the run's work units, relative to the other backends'
    (the run's budget is split in proportion). A timed run's cores go to the backends that use
    them; a deterministic run fixes the split in advance, so a backend that keeps the cores busy
    declares more, a one-shot or mostly idle one less."""
    options: tuple[Option, ...] = ()
    """The settings it takes (:class:`portfolio.backend_options.Option`: name, type, default or
    budget-aware default, allowed values, help, whether it can change the plan): set with
    ``--option NAME.OPTION=VALUE``, a config file, ``backend_options=`` or a bench configuration
    ``NAME[OPTION=VALUE]``, read in ``solve`` through :func:`options_of`."""

    @property
    def in_default(self) -> bool:
        """Whether a plain run runs the backend."""
        return self.default and not self.test_only

    @property
    def install_hint(self) -> str:
        """The pip command that brings the engine back (``pip install 'ortools>=9.10'``), or ''."""
        return f"pip install '{self.requirement}'" if self.requirement else ""


_FIELD_TYPES = typing.get_type_hints(BackendMeta)


def _conforms(value: object, kind: object) -> bool:
    """``value`` is of the annotated type ``kind`` (bool, int, str, Optional, tuple[X, ...])."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is tuple:
        return isinstance(value, tuple) and all(_conforms(v, args[0]) for v in value)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:   # an int is a float here (work_share = 3)
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind if isinstance(kind, type) else object)


def declared(backend: object) -> tuple[BackendMeta, list[str]]:
    """``backend``'s declarations and one line per problem with them: (meta, problems).

    No ``meta``: every default, except the fields a backend written against the older contract
    sets as plain attributes (``default = False`` on the class): deprecated, they are honoured
    until :data:`PLAIN_ATTRIBUTES_REMOVED_IN` (a plugin that kept itself out of the default set
    must not be pulled into it unannounced), with a line asking for ``meta`` and a
    ``DeprecationWarning``, both naming that release. A field of the wrong type (``engines="ortools"``), a ``meta`` that is not a
    :class:`BackendMeta`, or a plain attribute beside a ``meta`` is ignored and named in
    ``problems``, which the registry shows as warnings."""
    problems: list[str] = []
    outside: dict[str, object] = {}
    for f in fields(BackendMeta):
        try:
            if hasattr(backend, f.name):
                outside[f.name] = getattr(backend, f.name)
        except Exception:  # noqa: BLE001 -- a property that raises: something is set there
            outside[f.name] = None
    try:
        meta = getattr(backend, "meta", None)
    except Exception as exc:  # noqa: BLE001
        return BackendMeta(), problems + [f"meta could not be read ({type(exc).__name__}: {exc}); "
                                          f"defaults used"]
    if meta is None or meta == BackendMeta():   # nothing declared (Backend's own default)
        meta, honoured = BackendMeta(), {}
        for name, value in outside.items():
            if _conforms(value, _FIELD_TYPES[name]):
                honoured[name] = value
                problems.append(f"sets {name!r} outside meta (the older contract, deprecated), "
                                f"honoured until {PLAIN_ATTRIBUTES_REMOVED_IN}, which ignores "
                                f"it: declare meta = BackendMeta({name}=...)")
            else:
                problems.append(f"sets {name!r} outside meta to {repr(value)[:60]}, not "
                                f"{_type_name(_FIELD_TYPES[name])}; ignored")
        if honoured:
            cls = type(backend)
            warnings.warn(f"{cls.__module__}.{cls.__name__} declares {', '.join(honoured)} "
                          f"outside meta, as plain class attributes: a form deprecated since "
                          f"0.2.0 and ignored from {PLAIN_ATTRIBUTES_REMOVED_IN}; declare "
                          f"meta = BackendMeta(...) (CHANGELOG.md)", DeprecationWarning,
                          stacklevel=2)
        return replace(meta, **honoured), problems
    problems += [f"sets {name!r} outside meta, ignored: meta is declared, so declare "
                 f"meta = BackendMeta({name}=...)" for name in outside]
    if not isinstance(meta, BackendMeta):
        return BackendMeta(), problems + [f"meta is a {type(meta).__name__}, not a BackendMeta; "
                                          f"defaults used"]
    wrong: dict[str, object] = {}
    for f in fields(BackendMeta):
        value, kind = getattr(meta, f.name), _FIELD_TYPES[f.name]
        if not _conforms(value, kind):
            wrong[f.name] = f.default
            problems.append(f"meta.{f.name} = {repr(value)[:60]} is not {_type_name(kind)}; "
                            f"the default {f.default!r} is used")
    if "options" not in wrong:
        kept, dropped = _checked_options(meta.options)
        problems += dropped
        if len(kept) != len(meta.options):
            wrong["options"] = kept
    return (replace(meta, **wrong) if wrong else meta), problems


OPTIONS_PROBLEM = "meta.options"
"""How every line about a backend's option declaration starts (:func:`declared`'s problems)."""


def invalid_options(problems: list[str]) -> str:
    """Why a backend cannot run, from :func:`declared`'s ``problems``: its option declaration is
    invalid (an option left out, or all of them), and ``solve`` reading that option would fail on
    every run; '' when its options are fine. The registry then lists it as unavailable."""
    bad = [p for p in problems if p.startswith(OPTIONS_PROBLEM)]
    return ("invalid option declaration: " + "; ".join(bad)) if bad else ""


def _checked_options(options: tuple[Option, ...]) -> tuple[tuple[Option, ...], list[str]]:
    """The well-formed options of a declaration (a bad one, or a name declared twice, is left
    out with a line saying why: the backend still runs, with that setting at its own default)."""
    kept: list[Option] = []
    problems: list[str] = []
    for option in options:
        why = option.problems()
        if not why and option.name in {o.name for o in kept}:
            why = [f"option {option.name!r} is declared twice"]
        if why:
            problems += [f"{OPTIONS_PROBLEM}: {w}; left out" for w in why]
        else:
            kept.append(option)
    return tuple(kept), problems


def options_of(backend: object, report: Reporter) -> dict[str, Any]:
    """The values of ``backend``'s declared options for this solve: what the runner resolved
    (``report.options``), else each option's plain default (a direct call with a reporter that
    gives none). What ``solve`` reads instead of the environment or constructor arguments."""
    given = report.options
    return {o.name: given.get(o.name, o.default) for o in declared(backend)[0].options}


def _type_name(kind: object) -> str:
    return str(getattr(kind, "__name__", None) if isinstance(kind, type) else kind)


@functools.lru_cache(maxsize=None)
def distribution_version(name: str) -> Optional[str]:
    """The installed version of the distribution ``name``, from its metadata (nothing is
    imported), or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except (PackageNotFoundError, ValueError):
        return None


def engine_versions(backends: Iterable[object]) -> dict[str, str]:
    """The installed version of every engine the ``backends`` declare (``meta.engines``), by name:
    what a result or a run records, so that a leaderboard says which solver versions made it."""
    names = sorted({e for b in backends for e in declared(b)[0].engines})
    return {n: v for n in names if (v := distribution_version(n)) is not None}


def _requirement_name(requirement: str) -> str:
    """The distribution a pip requirement names (``"python-sat"`` for ``"python-sat>=1.8"``)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else ""


def _bundled(distribution: str) -> bool:
    """Whether this package's own install brings ``distribution`` (not an extra)."""
    from importlib.metadata import PackageNotFoundError, requires

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    try:
        wanted = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return False
    return any(norm(_requirement_name(r)) == norm(distribution) and "extra ==" not in r
               for r in wanted)


def requirement_available(requires: tuple[str, ...], package: str,
                          requirement: str) -> tuple[bool, str]:
    """``available()`` of a backend whose solver comes from pip: every module in ``requires`` found
    with ``find_spec`` (no import: this runs in the runner's process), else why and the pip command
    (``package``: the distribution to name)."""
    import importlib.util

    try:
        found = all(importlib.util.find_spec(name) is not None for name in requires)
        why = "ModuleNotFoundError"
    except Exception as exc:  # noqa: BLE001 -- any import failure means "not here"
        found, why = False, type(exc).__name__
    if found:
        return True, ""
    text = f"{package} is not installed ({why})"
    if _bundled(package):
        text += f"; it comes with {DISTRIBUTION}"
    return False, text + (f"; install it with: pip install '{requirement}'" if requirement else "")


@runtime_checkable
class BackendLike(Protocol):
    """What every backend has. Its declarations (``meta``, a :class:`BackendMeta`) are optional:
    read them with :func:`declared`, never with ``getattr``."""

    name: str
    description: str
    capabilities: Capabilities

    def available(self) -> tuple[bool, str]: ...

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult: ...


class Backend:
    """Convenience base class. Override ``solve``; set ``name``, ``description``, ``capabilities``
    and, when it declares anything, ``meta`` (a :class:`BackendMeta`).

    ``deadline`` is an absolute ``time.time()`` value: return (or at least report your best plan)
    before it. ``seed`` makes randomised backends reproducible.

    Clocks: the runner keeps its deadlines on ``time.monotonic()`` (system-wide on Linux, so the
    value it hands a forked worker holds there) and turns the backend's into this wall-clock value
    inside the worker, right before ``solve``: no wall-clock value crosses a process boundary. Read
    it once, through :func:`time_left`, and keep your own durations and inner deadlines on
    ``time.monotonic()`` (``stop = time.monotonic() + time_left(deadline)``), which a wall-clock step
    cannot move: never ``time.time()`` nor arithmetic on ``deadline`` (the clock rule).
    """

    name: str = ""
    description: str = ""
    capabilities: Capabilities = Capabilities()
    meta: BackendMeta = BackendMeta()

    def available(self) -> tuple[bool, str]:
        """(True, "") when usable here; otherwise (False, why), e.g. a missing optional dependency.
        This one: every module in ``meta.requires`` is found (without importing it)."""
        meta = declared(self)[0]
        if not meta.requires:
            return True, ""
        package = _requirement_name(meta.requirement) or meta.requires[0]
        return requirement_available(meta.requires, package, meta.requirement)

    def prepare(self) -> None:
        """Optional one-time set-up, run in the backend's worker process before ``solve``.

        Compile JIT code here (numba, with ``cache=True``): the runner starts one backend per
        ``prepare`` implementation first and the others sharing it once it returned, so they load
        the on-disk cache instead of compiling again. The time counts against the run's budget; a
        ``prepare`` that hangs or raises costs only this backend's row.
        """

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        raise NotImplementedError


CORES_ENV = "PORTFOLIO_CORES"
"""Environment variable through which the runner tells a worker how many cores it was given."""


def allotted_cores() -> int:
    """How many cores this backend may use (threads of a multi-threaded engine such as CP-SAT).

    The runner sets ``PORTFOLIO_CORES`` in each worker; outside the runner this is the number of
    cores this process may run on (its CPU affinity). Never less than 1.
    """
    value = os.environ.get(CORES_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def time_left(deadline: float) -> float:
    """Seconds until the run's ``deadline`` (negative once passed): the one place a backend reads
    the wall clock; turn the result into a ``time.monotonic()`` deadline of its own."""
    return deadline - time.time()

