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
from typing import Optional, Sequence

PORTFOLIO_CONFIGURATION = "portfolio"
PLUGINS_ENV = "PORTFOLIO_PLUGINS"


class BenchError(ValueError):
    """Bad sweep input (no instances, unknown backend, existing run folder...): one line for the user."""



@dataclass(frozen=True)
class Instance:
    name: str
    path: str
    time_limit: float


@dataclass(frozen=True)
class Configuration:
    """A named set of backends run together as one portfolio."""

    name: str
    backends: tuple[str, ...]

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


def parse_configuration(spec: str) -> tuple[str, tuple[str, ...]]:
    """One ``--backends`` item: ``greedy`` (one backend), ``mine+greedy+localsearch`` (a set run
    together as one portfolio, named as written) or ``fast=greedy+localsearch`` (a set with a name)."""
    label, _, members_text = spec.partition("=") if "=" in spec else (spec, "", spec)
    label = label.strip()
    members = tuple(m.strip() for m in members_text.split("+"))
    if not label or "/" in label or not all(members):
        raise BenchError(f"bad configuration {spec!r}: use a backend name, a set a+b+c, or NAME=a+b")
    if len(set(members)) != len(members):
        raise BenchError(f"configuration {spec!r} names a backend twice")
    return label, members


def resolve_configurations(backends: Optional[Sequence[str]], portfolio: bool) -> list[Configuration]:
    """``backends`` -> one configuration per item (a backend, or a set ``a+b`` run together, see
    :func:`parse_configuration`); ``portfolio`` -> all available backends as one."""
    from ..registry import Registry, RegistryError

    registry = Registry()
    configs: list[Configuration] = []
    for spec in backends or ():
        label, members = parse_configuration(spec)
        for name in members:
            try:
                registry.get(name)
            except RegistryError as exc:
                raise BenchError(str(exc)) from None
        configs.append(Configuration(label, members))
    if portfolio:
        names = tuple(b.name for b in registry.select(None))
        if not names:
            raise BenchError("--portfolio: no backend is available; see `portfolio backends`")
        if PORTFOLIO_CONFIGURATION in {c.name for c in configs}:
            raise BenchError(f"a backend is named {PORTFOLIO_CONFIGURATION!r}; it clashes with --portfolio")
        configs.append(Configuration(PORTFOLIO_CONFIGURATION, names))
    if not configs:
        raise BenchError("nothing to run: pass --backends a,b and/or --portfolio")
    if len({c.name for c in configs}) != len(configs):
        raise BenchError("a configuration is listed twice in --backends")
    return configs


def portfolio_workers(config: Configuration, jobs: int) -> int:
    """Worker processes for one task: 1 for a single backend, else the CPU count / jobs (at least 1)."""
    if not config.is_portfolio:
        return 1
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def plan_tasks(instances: Sequence[Instance], configurations: Sequence[Configuration],
               seeds: Sequence[int], repeat: int, jobs: int, distributed: bool = False) -> list[Task]:
    plugins = os.environ.get(PLUGINS_ENV)
    tasks = []
    for inst in instances:
        for config in configurations:
            for seed in seeds:
                for rep in range(repeat):
                    workers = None if distributed and config.is_portfolio else portfolio_workers(config, jobs)
                    tasks.append(Task(inst.name, inst.path, config.name, config.backends, seed, rep,
                                      inst.time_limit, workers, plugins, jobs))
    return tasks

