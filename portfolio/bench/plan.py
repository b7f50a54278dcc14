"""The sweep plan: which instances, configurations, seeds and repetitions become tasks.

Everything here runs before any task and fails with :class:`BenchError` (one line for the user),
so a sweep with bad input never creates a run folder.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

PORTFOLIO_CONFIGURATION = "portfolio"
PLUGINS_ENV = "PORTFOLIO_PLUGINS"


class BenchError(ValueError):
    """Bad sweep input (no instances, unknown backend, existing run folder...): one line for the user."""



@dataclass(frozen=True)
class Instance:
    name: str
    path: str
    time_limit: float


OptionSet = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
"""Backend options in a hashable form: ``((backend, ((option, value), ...)), ...)``, sorted."""


def option_set(options: dict[str, dict[str, Any]]) -> OptionSet:
    """``{backend: {option: value}}`` as an :data:`OptionSet`."""
    return tuple(sorted((b, tuple(sorted(v.items()))) for b, v in options.items() if v))


def option_dict(options: OptionSet) -> dict[str, dict[str, Any]]:
    """An :data:`OptionSet` as ``{backend: {option: value}}``."""
    return {b: dict(items) for b, items in options}


@dataclass(frozen=True)
class Configuration:
    """A named set of backends run together as one portfolio, with the options it gives them."""

    name: str
    backends: tuple[str, ...]
    options: OptionSet = ()
    checkout: Optional[Any] = None
    """A :class:`.checkout.Checkout`: another checkout's code runs its tasks (``LABEL=MEMBERS@PATH``, :mod:`.checkout`)."""
    command: Optional[Any] = None
    """A :class:`.command.Command`: a command runs its tasks, the contest's way (``LABEL=cmd:...``, :mod:`.command`)."""
    run: tuple[tuple[str, Any], ...] = ()
    """Run options given in the brackets of the member ``portfolio`` (``portfolio[adaptive=false]``:
    :data:`RUN_OPTIONS`), as (name, value) pairs."""
    prepare: Optional[Any] = None
    """A step each task applies to its run before it starts, given by the sweep's caller
    (``portfolio[selector=FILE]``: the selector's choice, ``portfolio.api.bench_selection.SelectorStep``;
    this floor does not import the selection): ``prepare(problem, registry, task, options)`` ->
    (backends, options, record)."""

    @property
    def is_portfolio(self) -> bool:
        return len(self.backends) > 1 or self.name == PORTFOLIO_CONFIGURATION


@dataclass(frozen=True)
class Task:
    instance: str
    path: str
    configuration: str
    backends: tuple[str, ...]
    seed: int
    repeat: int
    time_limit: float
    workers: Optional[int]          # None: decided where the task runs (Dask)
    plugins: Optional[str] = None   # PORTFOLIO_PLUGINS to use where the task runs
    jobs: int = 1                   # tasks running at once (for workers=None on a Dask worker)
    options: OptionSet = ()         # the configuration's backend options
    deterministic: bool = False     # deterministic mode (``--deterministic``)
    work: Optional[int] = None      # its work units (None: the runner's default)
    checkout: Optional[Any] = None  # a .checkout.Checkout: another checkout's code runs the task
    command: Optional[Any] = None   # a .command.Command: a command runs the task
    run: tuple[tuple[str, Any], ...] = ()   # run options (``portfolio[adaptive=false]``)
    prepare: Optional[Any] = None   # the configuration's step before the run (Configuration.prepare)

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.instance, self.configuration, self.seed, self.repeat)


def instance_name(path: str | Path) -> str:
    """The name an instance goes by in results: its file name without ``.json``/``.json.gz``."""
    name = Path(path).name
    for suffix in (".gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def _is_instance_file(path: Path) -> bool:
    return path.is_file() and (path.name.endswith(".json") or path.name.endswith(".json.gz"))


def expand_instances(specs: Sequence[str | Path]) -> list[Path]:
    """Files, folders (their ``*.json`` and ``*.json.gz``, not recursive) and globs, in a stable order."""
    found: list[Path] = []
    for spec in specs:
        text = str(spec)
        path = Path(text)
        if any(ch in text for ch in "*?["):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            files = [m for m in matches if _is_instance_file(m)]
            if not files:
                raise BenchError(f"{text}: the pattern matches no .json or .json.gz file")
            found.extend(files)
        elif path.is_dir():
            files = sorted(p for p in path.iterdir() if _is_instance_file(p))
            if not files:
                raise BenchError(f"{text}: the folder holds no .json or .json.gz file")
            found.extend(files)
        elif path.is_file():
            found.append(path)
        else:
            raise BenchError(f"{text}: no such file or folder")
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    names: dict[str, Path] = {}
    for resolved in unique:
        name = instance_name(resolved)
        if name in names:
            raise BenchError(f"two instances are named {name!r}: {names[name]} and {resolved}")
        names[name] = resolved
    return list(unique)


def parse_seeds(text: str) -> list[int]:
    """``"0"``, ``"0,3,7"`` or ``"0-4"`` (inclusive), combinable: ``"0-2,10"``."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        m = _SEED_RANGE.match(part)
        if m and int(m.group(2)) >= int(m.group(1)):
            seeds.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif re.fullmatch(r"-?\d+", part):
            seeds.append(int(part))
        else:
            raise BenchError(f"bad seed list {text!r}: use e.g. 0,1,2 or 0-4")
    if not seeds:
        raise BenchError("empty seed list")
    return list(dict.fromkeys(seeds))


_SEED_RANGE = re.compile(r"^(-?\d+)-(-?\d+)$")


def resolve_instances(paths: Sequence[Path], time_limit: Optional[float],
                      contest_timeouts: bool) -> list[Instance]:
    """Attach each instance's time limit: the fixed one, or the contest's own (``--contest-timeouts``).

    With contest timeouts, ``time_limit`` (when given) is the fallback for non-contest instances.
    """
    from ..data import contest

    out, unmatched = [], []
    for path in paths:
        name = instance_name(path)
        limit = time_limit
        if contest_timeouts:
            limit = contest.timeout_for(name)
            if limit is None:
                limit = time_limit
                if limit is None:
                    unmatched.append(name)
                    continue
        if limit is None or limit <= 0:
            raise BenchError("no time limit: pass --time-limit SECONDS or --contest-timeouts")
        out.append(Instance(name, str(path), float(limit)))
    if unmatched:
        raise BenchError(f"no contest timeout for {', '.join(unmatched)} (not a contest benchmark "
                         f"name); add --time-limit SECONDS as the fallback, or leave them out")
    return out


def split_configurations(text: str) -> list[str]:
    """A ``--backends`` value split at its commas, but not at those inside ``[...]``
    (``toulbar2[warm_follow=last,first_limit=6]+greedy,localsearch``: two configurations)."""
    items, depth, current = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise BenchError(f"--backends {text!r}: a ']' without its '['")
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise BenchError(f"--backends {text!r}: a '[' without its ']'")
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


LABELLED = re.compile(r"^([^\[\]+=]+)=(.+)$")
_MEMBER = re.compile(r"^([^\[\]]+?)(?:\[(.*)\])?$")


def parse_configuration(spec: str) -> tuple[str, tuple[str, ...], dict[str, dict[str, str]]]:
    """One ``--backends`` item: ``greedy`` (one backend), ``mine+greedy+localsearch`` (a set run
    together as one portfolio, named as written), ``fast=greedy+localsearch`` (a set with a name),
    each member with options in brackets (``toulbar2[warm_follow=last,first_limit=6]``, pip's
    extras syntax); the member ``portfolio`` is the default set, its brackets run options
    (``portfolio[adaptive=false]``, :data:`RUN_OPTIONS`). Returns (label, members, option texts
    per member)."""
    from ..backend_options import OptionError, parse_bracket_options

    spec = spec.strip()
    match = LABELLED.match(spec)
    label, members_text = (match.group(1).strip(), match.group(2)) if match else (spec, spec)
    members: list[str] = []
    options: dict[str, dict[str, str]] = {}
    for part in members_text.split("+"):
        found = _MEMBER.match(part.strip())
        if not found or not found.group(1).strip() or "=" in found.group(1):
            raise BenchError(f"bad configuration {spec!r}: use a backend name, a set a+b+c, "
                             f"NAME=a+b, options as b[NAME=VALUE,...]")
        name = found.group(1).strip()
        members.append(name)
        if found.group(2) is not None:
            try:
                options[name] = parse_bracket_options(found.group(2), name)
            except OptionError as exc:
                raise BenchError(f"configuration {spec!r}: {exc}") from None
    if not label or "/" in label:
        raise BenchError(f"bad configuration {spec!r}: use a backend name, a set a+b+c, or NAME=a+b")
    if len(set(members)) != len(members):
        raise BenchError(f"configuration {spec!r} names a backend twice")
    return label, tuple(members), options


RUN_OPTIONS = {"adaptive": bool, "selector": str}
"""Run options a configuration may give in the brackets of its member ``portfolio`` (the default
set), ``portfolio[adaptive=false]``, ``portfolio[selector=FILE]``: the
:class:`~portfolio.options.RunOptions` fields a comparison of the runner's own rules needs, and a
selector file (``portfolio learn``) applied as ``solve --selector FILE`` applies it
(``selector=default``: the one a run without ``--selector`` uses). A plain ``portfolio`` is the
default set itself, with no selector: the fixed schedule a selector is measured against."""


def _run_option(label: str, name: str, text: str) -> Any:
    """One run option's value, typed (one :class:`BenchError` line). A selector is a path made
    absolute, or ``default``; the caller's step checks the file (:func:`.sweep.run_sweep`)."""
    kind = RUN_OPTIONS.get(name)
    if kind is None:
        raise BenchError(f"configuration {label!r}: portfolio[{name}=...]: not a run option "
                         f"(run options: {', '.join(sorted(RUN_OPTIONS))})")
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise BenchError(f"configuration {label!r}: portfolio[{name}={text}]: expected true "
                             f"or false")
        return text.lower() == "true"
    return text if text == "default" else str(Path(text).expanduser().resolve())


def run_options(label: str, texts: dict[str, str]) -> tuple[tuple[str, Any], ...]:
    """The run options of ``portfolio[...]`` in configuration ``label``, typed (one line when a
    name is not a run option or a value does not parse)."""
    return tuple((name, _run_option(label, name, text)) for name, text in sorted(texts.items()))


COMMAND_PREFIX = "cmd:"


def is_command(spec: str) -> bool:
    """Whether a ``--backends`` item is a command configuration, ``LABEL=cmd:...`` (or a ``cmd:...``
    missing its label, refused by :func:`.command.command_configuration`)."""
    text = spec.strip()
    match = LABELLED.match(text)
    return text.startswith(COMMAND_PREFIX) or bool(match and match.group(2).lstrip().startswith(COMMAND_PREFIX))


def split_checkout(spec: str) -> tuple[str, Optional[str]]:
    """``LABEL=MEMBERS@PATH`` -> (``LABEL=MEMBERS``, ``PATH``); without an ``@`` outside brackets,
    (spec, None). Spaces around the ``@`` are allowed, as in pip's ``name @ url``."""
    depth = 0
    for i, ch in enumerate(spec):
        depth += (ch == "[") - (ch == "]")
        if ch == "@" and depth == 0:
            return spec[:i].strip(), spec[i + 1:].strip()
    return spec, None


def resolve_configurations(backends: Optional[Sequence[str]], portfolio: bool,
                           assignments: Sequence[str] = (),
                           config: Any = None,
                           deterministic: bool = False,
                           elsewhere: Optional[Callable[..., "Configuration"]] = None,
                           commands: Optional[Callable[..., "Configuration"]] = None) -> list[Configuration]:
    """``backends`` -> one configuration per item (a backend, or a set ``a+b`` run together, each
    member with options in brackets, see :func:`parse_configuration`; ``LABEL=MEMBERS@PATH`` runs
    another checkout's code, resolved there: :mod:`.checkout`; ``LABEL=@FILE.toml`` a config
    file's backends and options, :func:`config_configuration`); ``portfolio`` -> all
    available backends as one. ``config`` (a TOML file, or several merged in order) and
    ``assignments`` (``--option``) give options to every configuration, a member's brackets
    override them; a config file's ``[portfolio] backends`` is a configuration named after the
    file when nothing else is asked, its ``add_to_default`` joins the default set.
    Every option is checked against the backends' declarations here, before any task runs; with
    ``deterministic``, so is every named backend's support of the mode. ``elsewhere`` resolves a
    ``LABEL=MEMBERS@PATH`` item (:func:`.checkout.configuration_elsewhere`, handed in by the sweep),
    ``commands`` a ``LABEL=cmd:COMMAND`` item (:func:`.command.command_configuration`, likewise)."""
    from ..backend_options import OptionError
    from ..configure import config_from, gather, lookup_in
    from ..registry import Registry, RegistryError

    registry = Registry()
    try:
        settings = config_from(config)
        base = gather(lookup_in(registry), ", ".join(registry.names()), config=settings,
                      assignments=assignments)
    except OptionError as exc:
        raise BenchError(str(exc)) from None
    default_set = _default_set(registry, settings)
    local: list[str] = []
    others: dict[str, Configuration] = {}
    order: list[str] = []
    for raw in backends or ():
        if is_command(raw):
            if commands is None:
                raise BenchError(f"configuration {raw!r}: a command configuration runs only in a sweep")
            others[str(len(order))] = commands(raw, deterministic)
            order.append(str(len(order)))
            continue
        from_file = config_spec(raw)
        if from_file is not None:
            others[str(len(order))] = config_configuration(*from_file, registry, base,
                                                           assignments, deterministic)
            order.append(str(len(order)))
            continue
        spec, where = split_checkout(raw)
        if where is None:
            local.append(spec)
            order.append("")
            continue
        if elsewhere is None:
            raise BenchError(f"configuration {raw!r}: another checkout's code runs only in a sweep")
        others[str(len(order))] = elsewhere(spec, raw, where, assignments, config, deterministic)
        order.append(str(len(order)))
    specs = [parse_configuration(spec) for spec in local]
    if not specs and not others and not portfolio and settings is not None \
            and settings.backends is not None:
        stem = Path(settings.path or "config").name.removesuffix(".toml")
        specs = [(stem, settings.backends, {})]
        order = [""]
    made: list[Configuration] = []
    for label, members, texts in specs:
        names: list[str] = []
        for name in members:
            if name == PORTFOLIO_CONFIGURATION:
                names += [n for n in default_set if n not in names and n not in members]
                continue
            try:
                registry.get(name)
            except RegistryError as exc:
                raise BenchError(str(exc)) from None
            names.append(name)
        if deterministic:
            _check_deterministic(registry, label, [m for m in members if m != PORTFOLIO_CONFIGURATION],
                                 names)
        options = {k: dict(v) for k, v in base.items()}
        run = run_options(label, texts.pop(PORTFOLIO_CONFIGURATION, {}))
        try:
            for name, values in texts.items():
                extra = gather(lookup_in(registry), ", ".join(registry.names()),
                               assignments=[f"{name}.{k}={v}" for k, v in values.items()])
                for backend, vals in extra.items():
                    options.setdefault(backend, {}).update(vals)
        except OptionError as exc:
            raise BenchError(f"configuration {label!r}: {exc}") from None
        made.append(Configuration(label, tuple(names), option_set(options), run=run))
    local_made = iter(made)
    configs = [next(local_made) if key == "" else others[key] for key in order]
    if portfolio:
        if not default_set:
            raise BenchError("--portfolio: no backend is available; see `portfolio backends`")
        if PORTFOLIO_CONFIGURATION in {c.name for c in configs}:
            raise BenchError(f"a backend is named {PORTFOLIO_CONFIGURATION!r}; it clashes with --portfolio")
        if deterministic:
            _check_deterministic(registry, PORTFOLIO_CONFIGURATION, [], default_set)
        configs.append(Configuration(PORTFOLIO_CONFIGURATION, default_set, option_set(base)))
    if not configs:
        raise BenchError("nothing to run: pass --backends a,b and/or --portfolio")
    if len({c.name for c in configs}) != len(configs):
        raise BenchError("a configuration is listed twice in --backends")
    return configs


def _default_set(registry: Any, settings: Any) -> tuple[str, ...]:
    """The default set's names, with the outside backends a config adds (checked: one line)."""
    from ..registry import RegistryError

    added = () if settings is None else settings.add_to_default or ()
    try:
        registry.check_added(added)
    except RegistryError as exc:
        where = "" if settings is None else f"{settings.path}: "
        raise BenchError(f"{where}{exc}") from None
    return tuple(b.name for b in registry.select(None, added))


FROM_FILE = re.compile(r"^([^\[\]+=@]+)=\s*@(.*)$")
"""``LABEL=@FILE.toml``: a configuration made of a config file (nothing between ``=`` and ``@``,
which tells it from ``LABEL=MEMBERS@PATH``, another checkout's code)."""


def config_spec(raw: str) -> Optional[tuple[str, str]]:
    """(label, path) of a ``LABEL=@FILE.toml`` item, or None for any other kind."""
    match = FROM_FILE.match(raw.strip())
    if match is None:
        return None
    label, path = match.group(1).strip(), match.group(2).strip()
    if not path:
        raise BenchError(f"configuration {raw!r} names no config file: use LABEL=@FILE.toml")
    return label, path


def config_configuration(label: str, path: str, registry: Any, base: dict,
                         assignments: Sequence[str], deterministic: bool) -> Configuration:
    """The configuration ``LABEL=@FILE.toml``: the file's ``[portfolio] backends`` (else the default
    set, with its ``add_to_default``) and its options over ``--config``'s, ``--option`` last, all
    checked against the declarations before anything runs (one line naming the file)."""
    from ..backend_options import OptionError
    from ..configure import gather, lookup_in, read_config
    from ..registry import RegistryError

    if not label or "/" in label:
        raise BenchError(f"bad configuration {label}=@{path}: give it a name, NAME=@FILE.toml")
    try:
        own = read_config(path)
        mine = gather(lookup_in(registry), ", ".join(registry.names()), config=own,
                      assignments=assignments)
    except OptionError as exc:
        raise BenchError(f"configuration {label!r}: {exc}") from None
    names = own.backends
    if names is None:
        names = _default_set(registry, own)
    else:
        try:
            names = tuple(b.name for b in registry.resolve(list(names)))
        except RegistryError as exc:
            raise BenchError(f"configuration {label!r}: {path}: {exc}") from None
    if deterministic:
        _check_deterministic(registry, label, list(own.backends or ()), names)
    options = {k: dict(v) for k, v in base.items()}
    for backend, values in mine.items():
        options.setdefault(backend, {}).update(values)
    return Configuration(label, tuple(names), option_set(options))


def _check_deterministic(registry: Any, label: str, named: Sequence[str], names: Sequence[str]) -> None:
    """Deterministic mode: a named backend must support it, and the set must keep one that does
    (the runner leaves the default set's others out, as `portfolio solve --deterministic` does)."""
    able = {n for n in names if registry.meta(n).deterministic}
    lacking = [n for n in named if n not in able]
    if lacking:
        raise BenchError(f"configuration {label!r}: {', '.join(lacking)} "
                         f"{'does' if len(lacking) == 1 else 'do'} not support deterministic mode "
                         f"(docs/determinism.md)")
    if not able:
        raise BenchError(f"configuration {label!r}: no backend of it supports deterministic mode")


def portfolio_workers(config: Configuration, jobs: int) -> int:
    """Worker processes for one task: 1 for a single backend, else the CPU count / jobs (at least 1)."""
    if not config.is_portfolio:
        return 1
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def plan_tasks(instances: Sequence[Instance], configurations: Sequence[Configuration],
               seeds: Sequence[int], repeat: int, jobs: int, distributed: bool = False,
               deterministic: bool = False, work: Optional[int] = None) -> list[Task]:
    """The tasks, configurations alternated: for each instance and seed (and repetition) every
    configuration in turn, so that a drift of the machine spreads over all of them."""
    plugins = os.environ.get(PLUGINS_ENV)
    tasks = []
    for inst in instances:
        for seed in seeds:
            for rep in range(repeat):
                for config in configurations:
                    workers = None if distributed and config.is_portfolio else portfolio_workers(config, jobs)
                    tasks.append(Task(inst.name, inst.path, config.name, config.backends, seed, rep,
                                      inst.time_limit, workers, plugins, jobs, config.options,
                                      deterministic or work is not None, work, config.checkout,
                                      config.command, config.run, config.prepare))
    return tasks

