"""``--space FILE.toml``: narrow or fix parts of a tune's space, checked against the declarations.

The file has the shape of a config file (one table per backend, a ``[portfolio]`` table), so a
written config can be turned into a space by editing it::

    [portfolio]
    backends = ["greedy", "localsearch", "toulbar2"]   # exactly these run: the set is not tuned
    always = ["localsearch"]                            # on in every configuration
    only_listed = true                                  # options not named below keep their defaults

    [toulbar2]
    warm_follow = "last"                      # fixed
    first_limit = { low = 2.0, high = 20.0 }  # narrowed (within the declared range)
    vectors = { low = 1, high = 8, log = false }
    exact = { tune = false }                  # kept at its default

    [maxsat]
    solver = { choices = ["g3", "g4"] }

Every problem is one :class:`TuneError` line naming the file, the table and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..backend_options import Option, OptionError, unknown_option
from ..configure import read_toml
from .space import Narrowing, TuneError

RUN_KEYS = ("backends", "always", "only_listed")
ENTRY_KEYS = ("low", "high", "log", "choices", "tune")


@dataclass(frozen=True)
class SpaceFile:
    path: str
    backends: Optional[tuple[str, ...]] = None
    always: tuple[str, ...] = ()
    only_listed: bool = False
    entries: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The raw tables: ``{backend: {option: value or entry table}}``."""


def read_space(path: str | Path) -> SpaceFile:
    """The space file at ``path``, its shape checked (names are checked by :func:`narrowing`)."""
    where = str(path)
    data = read_toml(path, "space file", TuneError)
    run = data.pop("portfolio", {})
    if not isinstance(run, dict):
        raise TuneError(f"{where}: portfolio = {run!r}: expected a table [portfolio]")
    for key in run:
        if key not in RUN_KEYS:
            raise TuneError(f"{where}: [portfolio] {key}: unknown key; allowed: {', '.join(RUN_KEYS)}")
    lists = {}
    for key in ("backends", "always"):
        value = run.get(key)
        if value is not None and (not isinstance(value, list) or not value
                                  or not all(isinstance(v, str) and v for v in value)):
            raise TuneError(f"{where}: [portfolio] {key}: expected a list of backend names, "
                            f"got {value!r}")
        lists[key] = None if value is None else tuple(value)
    only = run.get("only_listed", False)
    if not isinstance(only, bool):
        raise TuneError(f"{where}: [portfolio] only_listed: expected true or false, got {only!r}")
    for table, body in data.items():
        if not isinstance(body, dict):
            raise TuneError(f"{where}: {table} = {body!r}: expected a table [{table}] of "
                            f"OPTION = VALUE or OPTION = {{ low = .., high = .. }}")
    return SpaceFile(where, lists["backends"], lists["always"] or (), only, data)


def narrowing(space_file: SpaceFile, declared: Mapping[str, tuple[Option, ...]],
              chosen: Sequence[str]) -> dict[str, dict[str, Narrowing]]:
    """The file's tables as :class:`Narrowing` entries, each checked against its backend's
    declared option (a name that does not exist, a value it does not take, bounds outside its
    range: one line naming the file, table and key)."""
    where = space_file.path
    for key, names in (("backends", space_file.backends or ()), ("always", space_file.always)):
        for name in names:
            if name not in chosen:
                raise TuneError(f"{where}: [portfolio] {key}: {name} is not in this tune's "
                                f"backend set ({', '.join(chosen)})")
    out: dict[str, dict[str, Narrowing]] = {}
    for backend, body in space_file.entries.items():
        if backend not in declared:
            raise TuneError(f"{where}: [{backend}]: {backend} is not in this tune's backend set "
                            f"({', '.join(chosen)})")
        options = {o.name: o for o in declared[backend]}
        for name, value in body.items():
            option = options.get(name)
            if option is None:
                raise TuneError(f"{where}: [{backend}] {name}: "
                                f"{unknown_option(backend, name, declared[backend])}")
            out.setdefault(backend, {})[name] = _entry(f"{where}: [{backend}] {name}", option, value)
    return out


def _check(what: str, option: Option, value: Any) -> Any:
    try:
        return option.check(value)
    except OptionError as exc:
        raise TuneError(f"{what}: {exc}") from None


def _entry(what: str, option: Option, value: Any) -> Narrowing:
    """One option's entry: a plain value fixes it; a table narrows it."""
    if not isinstance(value, dict):
        return Narrowing(fixed=_check(what, option, value), is_fixed=True)
    for key in value:
        if key not in ENTRY_KEYS:
            raise TuneError(f"{what}.{key}: unknown key; allowed: {', '.join(ENTRY_KEYS)}")
    tune = value.get("tune", True)
    if not isinstance(tune, bool):
        raise TuneError(f"{what}.tune: expected true or false, got {tune!r}")
    choices = value.get("choices")
    if choices is not None:
        if not isinstance(choices, list) or not choices:
            raise TuneError(f"{what}.choices: expected a list of values, got {choices!r}")
        choices = tuple(dict.fromkeys(_check(f"{what}.choices", option, c) for c in choices))
    numeric = option.kind in ("int", "float")
    bounds = {}
    for key in ("low", "high"):
        if key in value:
            if not numeric:
                raise TuneError(f"{what}.{key}: {option.kind} option {option.name} has no range; "
                                f"use choices")
            bounds[key] = _check(f"{what}.{key}", option, value[key])
    if "low" in bounds and "high" in bounds and bounds["low"] >= bounds["high"]:
        raise TuneError(f"{what}: low {bounds['low']!r} is not below high {bounds['high']!r}")
    log = value.get("log")
    if log is not None and (not isinstance(log, bool) or not numeric):
        raise TuneError(f"{what}.log: expected true or false on an int or float option, got {log!r}")
    if choices is not None and (bounds or log is not None):
        raise TuneError(f"{what}: give choices or a range (low, high, log), not both")
    return Narrowing(low=bounds.get("low"), high=bounds.get("high"), log=log, choices=choices,
                     tune=tune)
