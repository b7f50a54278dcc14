"""Where backend options come from, merged and checked once before anything runs: TOML config
files (``--config FILE.toml``, repeatable; ``config=``, a path or a list of them;
``$PORTFOLIO_CONFIG`` for ``iopddl``, a list separated by ``os.pathsep``), then
``--option BACKEND.NAME=VALUE`` or ``backend_options=`` on top.

A config file has one table per backend, and optionally a ``[portfolio]`` table naming the
backends a run uses (what ``portfolio tune`` writes) and the backends of other distributions the
user adds to the default set (:mod:`portfolio.registry`: an outside backend runs only when named
or added)::

    [portfolio]
    backends = ["greedy", "localsearch", "toulbar2"]
    add_to_default = ["example"]

    [toulbar2]
    warm_follow = "last"
    first_limit = 6.0

Every problem is one :class:`~portfolio.backend_options.OptionError` line naming the file, the
table and the key, or the backend and option, with what is allowed (the CLI exits 2 on it, before
any solving). Options of a backend that is installed but not in the run are checked and then
have no effect: a config file may serve several backend sets.

Several files merge in the order given, key by key (:func:`merge_configs`): a later file's
``[portfolio] backends`` or ``add_to_default`` replaces an earlier one's, a later file's
``[toulbar2] vectors`` replaces that one option and keeps the others; every file is read and
checked (a malformed one is an error even when a later one sets the same keys), and the run
records them all, in order (``Config.path``: joined by ``os.pathsep``, as ``PORTFOLIO_CONFIG``
takes them).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from .backend import BackendLike, declared
from .backend_options import (Option, OptionError, check_given, parse_assignment,
                              unknown_option)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover -- Python 3.10
    import tomli as tomllib

CONFIG_ENV = "PORTFOLIO_CONFIG"
"""The variable through which the contest drop-in ``iopddl`` (which takes only the contest's
arguments) gets config files: one path, or several separated by ``os.pathsep`` (merged in order,
as repeated ``--config``). Recorded with the run like any config. ``iopddl`` also reads
``PORTFOLIO_PLUGINS``, as every command that runs backends does (:mod:`portfolio.registry`)."""

RUN_TABLE = "portfolio"
"""The config table of run-level settings (``backends``, ``add_to_default``), not a backend's."""

RUN_KEYS = ("backends", "add_to_default")


@dataclass(frozen=True)
class Config:
    """Config files as read (one, or several merged): the run's backends (None: not set), the
    backends added to the default set (None: not set), and each backend's options (typed as TOML
    gives them, not yet checked against the backends' declarations)."""

    path: Optional[str] = None
    """The files, in merge order, joined by ``os.pathsep`` (a record: one file is its path)."""
    backends: Optional[tuple[str, ...]] = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    add_to_default: Optional[tuple[str, ...]] = None
    """``[portfolio] add_to_default``: backends of other distributions that join the default set
    (a built-in's ``default=False`` is overridden too: the user asked)."""
    paths: tuple[str, ...] = ()
    parts: tuple["Config", ...] = ()
    """The files merged, each as read (empty for one file): errors name the file of the key."""


def read_toml(path: str | os.PathLike, what: str, error: type[Exception]) -> dict:
    """The TOML file at ``path`` as a dict, or ``error`` naming the file and why (``what``: the
    kind of file, for the message: "config file", "space file")."""
    where = str(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise error(f"{where}: no such {what}") from None
    except OSError as exc:
        raise error(f"{where}: cannot read the {what} ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not a valid TOML file: {exc}") from None


def read_config(path: str | os.PathLike) -> Config:
    """The config file at ``path`` (TOML), or :class:`OptionError` naming the file and where."""
    where = str(path)
    data = read_toml(path, "config file", OptionError)
    lists: dict[str, tuple[str, ...]] = {}
    options: dict[str, dict[str, Any]] = {}
    for table, body in data.items():
        if not isinstance(body, dict):
            raise OptionError(f"{where}: {table} = {body!r}: expected a table [{table}] of "
                              f"NAME = VALUE (one per backend)")
        if table == RUN_TABLE:
            for key, value in body.items():
                if key not in RUN_KEYS:
                    raise OptionError(f"{where}: [{RUN_TABLE}] {key}: unknown key; allowed: "
                                      f"{', '.join(RUN_KEYS)}")
                if not isinstance(value, list) or not value or \
                        not all(isinstance(v, str) and v for v in value):
                    raise OptionError(f"{where}: [{RUN_TABLE}] {key}: expected a list of "
                                      f"backend names, got {value!r}")
                lists[key] = tuple(value)
            continue
        for key, value in body.items():
            if isinstance(value, dict):
                raise OptionError(f"{where}: [{table}] {key}: expected a value, got a table")
        options[table] = dict(body)
    return Config(where, lists.get("backends"), options, lists.get("add_to_default"), (where,))


def merge_configs(configs: Sequence[Config]) -> Optional[Config]:
    """``configs`` merged in order, key by key, the later winning (see the module); None for
    none."""
    if not configs:
        return None
    backends: Optional[tuple[str, ...]] = None
    added: Optional[tuple[str, ...]] = None
    options: dict[str, dict[str, Any]] = {}
    for config in configs:
        backends = config.backends if config.backends is not None else backends
        added = config.add_to_default if config.add_to_default is not None else added
        for backend, values in config.options.items():
            options.setdefault(backend, {}).update(values)
    paths = tuple(p for c in configs for p in (c.paths or ((c.path,) if c.path else ())))
    return Config(os.pathsep.join(paths), backends, options, added, paths, tuple(configs))


def read_configs(paths: Sequence[str | os.PathLike]) -> Optional[Config]:
    """The config files at ``paths`` read, each checked, and merged in order
    (:func:`merge_configs`); None for no path."""
    return merge_configs([read_config(p) for p in paths])


ConfigPaths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], None]
"""One config file, several (merged in order), or none: what ``config=`` and ``--config`` take."""


def config_paths(given: ConfigPaths) -> tuple[str, ...]:
    """``given`` as a tuple of paths (one path, a list of them, or None: none)."""
    if given is None:
        return ()
    if isinstance(given, (str, os.PathLike)):
        return (os.fspath(given),)
    return tuple(os.fspath(p) for p in given)


def env_config_paths(text: Optional[str]) -> tuple[str, ...]:
    """``$PORTFOLIO_CONFIG``'s files: one path or several separated by ``os.pathsep``, empty
    entries skipped."""
    return tuple(p for p in (text or "").split(os.pathsep) if p.strip())


Lookup = Callable[[str], Optional[tuple[str, tuple[Option, ...]]]]
"""A backend name (plain or qualified) -> (the name it runs under, its declared options), or None
for a name no backend has."""


def lookup_in(registry: Any, chosen: Sequence[BackendLike] = ()) -> Lookup:
    """A :data:`Lookup` over the run's chosen backends first (objects a caller passed that the
    registry may not know), then every backend the ``registry`` knows."""
    by_name = {b.name: b for b in chosen}

    def find(name: str) -> Optional[tuple[str, tuple[Option, ...]]]:
        backend = by_name.get(name)
        if backend is None and registry is not None:
            info = registry.info(name)
            backend = None if info is None else info.backend
        if backend is None:
            return None
        return backend.name, declared(backend)[0].options

    return find


def _known(registry: Any, chosen: Sequence[BackendLike]) -> str:
    names = sorted({b.name for b in chosen} | set(registry.names() if registry is not None else ()))
    return ", ".join(names) or "(none)"


def gather(lookup: Lookup, known: str, *, config: Optional[Config] = None,
           given: Optional[Mapping[str, Mapping[str, Any]]] = None,
           assignments: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The options of a run, ``{backend: {option: value}}``, typed and checked: the config file's,
    then ``given`` (Python values, as ``portfolio.solve(backend_options=...)`` takes them), then
    the command line's ``BACKEND.NAME=VALUE`` texts, each later one overriding. ``known``: the
    backend names an error line offers."""
    out: dict[str, dict[str, Any]] = {}

    def put(backend: str, values: Mapping[str, Any], where: str) -> None:
        found = lookup(backend)
        if found is None:
            raise OptionError(f"{where}unknown backend {backend!r}; known backends: {known}")
        name, declared_options = found
        try:
            checked = check_given(name, declared_options, values)
        except OptionError as exc:
            raise OptionError(f"{where}{exc}") from None
        out.setdefault(name, {}).update(checked)

    if config is not None:   # file by file, in order: an error names the file of the key
        for part in config.parts or (config,):
            for backend, values in part.options.items():
                put(backend, values, f"{part.path}: [{backend}]: ")
    if given is not None:
        if not isinstance(given, Mapping):
            raise OptionError(f"backend_options: expected {{backend: {{option: value}}}}, "
                              f"got {type(given).__name__}")
        for backend, values in given.items():
            put(str(backend), values, "backend_options: ")
    for text in assignments:
        backend, option, value = parse_assignment(text)
        found = lookup(backend)
        if found is None:
            raise OptionError(f"--option {text}: unknown backend {backend!r}; known backends: "
                              f"{known}")
        name, declared_options = found
        match = [o for o in declared_options if o.name == option]
        if not match:
            raise OptionError(f"--option {text}: {unknown_option(name, option, declared_options)}")
        try:
            out.setdefault(name, {})[option] = match[0].parse(value)
        except OptionError as exc:
            raise OptionError(f"--option {text}: option {name}.{option}: {exc}") from None
    return {k: v for k, v in out.items() if v}


def run_options_given(registry: Any, chosen: Sequence[BackendLike], *,
                      config: Optional[Config] = None,
                      given: Optional[Mapping[str, Mapping[str, Any]]] = None,
                      assignments: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """:func:`gather` over the chosen backends and the registry: what the CLI and the API call."""
    return gather(lookup_in(registry, chosen), _known(registry, chosen), config=config,
                  given=given, assignments=assignments)


def config_from(paths: ConfigPaths) -> Optional[Config]:
    """The config file(s) at ``paths`` read and merged in order, or None without one."""
    return read_configs([Path(p) for p in config_paths(paths)])


def not_in_run(options: Mapping[str, Mapping[str, Any]], chosen: Sequence[BackendLike]) -> list[str]:
    """The backends that options were given for but that the run does not use (one note each)."""
    running = {b.name for b in chosen}
    return sorted(name for name in options if name not in running)
