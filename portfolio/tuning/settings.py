"""A tune's settings, checked and resolved before anything runs: the instances and seeds (the
pairs every configuration meets), the backend set and its declared options, the budget that
budget-aware defaults read, the space, and the checks of bad input (one :class:`TuneError` line,
exit 2): an unknown file or backend, nothing to tune, a bad space file, a budget below what a
run needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..backend_options import Option
from ..bench.plan import BenchError, expand_instances, instance_name, parse_seeds
from ..report.tune_score import Pair
from .space import Narrowing, Space, TuneError, build_space, nothing_to_tune
from .spacefile import narrowing, read_space

MIN_SECONDS = 1.0
"""The least time limit a tune's run gets: loading, presolve and starting the backends take most
of a second on the reference machine, so a shorter run measures start-up, not configurations."""

DEFAULT_TRIALS = 20
"""Trials when neither ``--trials`` nor ``--hours`` is given (the default's evaluation included)."""


@dataclass(frozen=True)
class TuneSettings:
    """What ``portfolio tune`` and ``portfolio.tune`` take (see docs/tune.md)."""

    files: tuple[str, ...]
    time_limit: float
    backends: Optional[Sequence[str]] = None
    seeds: Any = 2
    seed: int = 0
    trials: Optional[int] = None
    hours: Optional[float] = None
    name: Optional[str] = None
    runs_dir: str = "runs"
    deterministic: bool = False
    work: Optional[int] = None
    dask_scheduler: Optional[str] = None
    jobs: int = 1
    validate: tuple[str, ...] = ()
    space: Optional[str] = None
    command: Optional[list[str]] = None
    config: tuple[str, ...] = ()
    """Config files the tune starts from (``--config``): the backend set, ``add_to_default``,
    and options kept fixed at their values (:func:`config_fixed`)."""


@dataclass(frozen=True)
class Resolved:
    """The settings resolved: the training and validation pairs, the space, the budget."""

    settings: TuneSettings
    pairs: tuple[Pair, ...]
    validation: tuple[Pair, ...]
    seeds: tuple[int, ...]
    space: Space
    budget: float
    trials: Optional[int]
    deterministic: bool
    identity: dict = field(default_factory=dict)


def seeds_of(value: Any) -> tuple[int, ...]:
    """``--seeds``: a count K (seeds 0..K-1), or a list (``0,3,7``, ``0-4``) as bench takes it."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise TuneError(f"--seeds {value}: give at least one seed")
        return tuple(range(value))
    if isinstance(value, (list, tuple)):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise TuneError(f"seeds: expected a count or a list of integers, got {value!r}")
        return tuple(dict.fromkeys(value))
    text = str(value).strip()
    if text.isdigit():
        return seeds_of(int(text))
    try:
        return tuple(parse_seeds(text))
    except BenchError as exc:
        raise TuneError(f"--seeds: {exc}") from None


def _pairs(files: Sequence[str], seeds: Sequence[int], what: str) -> tuple[Pair, ...]:
    try:
        paths = expand_instances(list(files))
    except BenchError as exc:
        raise TuneError(f"{what}{exc}") from None
    return tuple(Pair(instance_name(p), str(Path(p).resolve()), s) for s in seeds for p in paths)


def choose_set(registry: Any, names: Optional[Sequence[str]], deterministic: bool,
               added: Sequence[str] = ()) -> list[str]:
    """The backend set: the named ones (checked), else the default set (with a config's
    ``add_to_default``, ``added``); in deterministic mode a named backend without the mode is
    refused and the default set keeps those with it."""
    from ..registry import RegistryError, parse_backend_list

    if names:
        try:
            chosen = [b.name for b in registry.resolve(parse_backend_list(",".join(names),
                                                                          registry))]
        except RegistryError as exc:
            raise TuneError(str(exc)) from None
        if deterministic:
            lacking = [n for n in chosen if not registry.meta(n).deterministic]
            if lacking:
                raise TuneError(f"deterministic mode: {', '.join(lacking)} do(es) not support it "
                                f"(docs/determinism.md)")
        return chosen
    try:
        registry.check_added(added)
    except RegistryError as exc:
        raise TuneError(str(exc)) from None
    chosen = [b.name for b in registry.select(None, added)]
    if deterministic:
        chosen = [n for n in chosen if registry.meta(n).deterministic]
    if not chosen:
        raise TuneError("no backend to tune: none is available (`portfolio backends`)")
    return chosen


def _read_configs(paths: Sequence[str]) -> Any:
    """The tune's config files merged (:func:`portfolio.configure.read_configs`), None for none;
    a bad one is one :class:`TuneError` line naming it."""
    from ..backend_options import OptionError
    from ..configure import read_configs

    try:
        return read_configs(list(paths))
    except OptionError as exc:
        raise TuneError(str(exc)) from None


def config_fixed(registry: Any, base: Any, chosen: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The options the tune's configs set for backends of its set, checked against their
    declarations (one :class:`TuneError` line naming the file otherwise): kept fixed in every
    configuration."""
    from ..backend_options import OptionError
    from ..configure import gather, lookup_in

    if base is None:
        return {}
    try:
        given = gather(lookup_in(registry), ", ".join(registry.names()), config=base)
    except OptionError as exc:
        raise TuneError(str(exc)) from None
    return {b: dict(v) for b, v in given.items() if b in chosen}


def resolve(settings: TuneSettings) -> Resolved:
    """Check every setting and build the space; nothing runs before this returns."""
    from ..backend import declared
    from ..options import RunOptions
    from ..registry import Registry

    if not settings.files:
        raise TuneError("no instances: give the problem files to tune on")
    if settings.time_limit < MIN_SECONDS:
        raise TuneError(f"-t {settings.time_limit:g}: a run needs at least {MIN_SECONDS:g} s "
                        f"(loading, presolve and starting the backends)")
    if settings.trials is not None and settings.hours is not None:
        raise TuneError("--trials and --hours exclude each other: give one")
    if settings.trials is not None and settings.trials < 2:
        raise TuneError(f"--trials {settings.trials}: at least 2 (the default, then a challenger)")
    if settings.work is not None and (isinstance(settings.work, bool) or settings.work < 1):
        raise TuneError(f"--work {settings.work}: a positive number of work units")
    deterministic = settings.deterministic or settings.work is not None
    seeds = seeds_of(settings.seeds)
    pairs = _pairs(settings.files, seeds, "")
    validation = _pairs(settings.validate, seeds, "--validate: ") if settings.validate else ()
    space_file = read_space(settings.space) if settings.space else None
    registry = Registry()
    base = _read_configs(settings.config)
    names = list(settings.backends) if settings.backends else (
        list(space_file.backends) if space_file is not None and space_file.backends else
        list(base.backends) if base is not None and base.backends else None)
    chosen = choose_set(registry, names, deterministic,
                        () if base is None else base.add_to_default or ())
    declared_options: dict[str, tuple[Option, ...]] = {
        n: declared(registry.get(n))[0].options for n in chosen}
    run = RunOptions(settings.time_limit, deterministic=deterministic, work=settings.work)
    budget = run.budget_seconds
    narrowed = narrowing(space_file, declared_options, chosen) if space_file else {}
    fixed = config_fixed(registry, base, chosen)
    for backend, values in fixed.items():
        for option, value in values.items():
            narrowed.setdefault(backend, {}).setdefault(
                option, Narrowing(fixed=value, is_fixed=True, why=f"the config {base.path}"))
    space = build_space([(n, declared_options[n]) for n in chosen], budget,
                        fixed_set=bool(space_file and space_file.backends),
                        always=space_file.always if space_file else (), narrowing=narrowed,
                        only_listed=bool(space_file and space_file.only_listed))
    why = nothing_to_tune(space)
    if why:
        raise TuneError(why)
    trials = settings.trials
    if settings.hours is not None:
        need = len(pairs) * (settings.time_limit if not deterministic else budget)
        if settings.hours * 3600.0 < need:
            raise TuneError(f"--hours {settings.hours:g}: below one evaluation of the default "
                            f"({len(pairs)} runs of {need / len(pairs):g} s = {need:g} s); give "
                            f"more hours, fewer instances or seeds, or a shorter -t")
    elif trials is None:
        trials = DEFAULT_TRIALS
    identity = {"instances": [[p.instance, p.path] for p in pairs if p.seed == seeds[0]],
                "seeds": list(seeds), "time_limit": settings.time_limit, "seed": settings.seed,
                "deterministic": deterministic, "work": settings.work,
                "space": space.describe()}
    if base is not None:   # only then: the digest of a tune without one stays what it was
        identity["config"] = {"files": list(base.paths), "fixed": fixed}
    return Resolved(settings, pairs, validation, seeds, space, budget, trials, deterministic,
                    identity)
