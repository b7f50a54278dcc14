"""The search space of a tune, built from what the backends declare: every option that can change
the plan (``Option.changes_plan``), and the backend set itself (each backend on or off, at least
one on). ``--space FILE.toml`` narrows or fixes parts of it (:mod:`.spacefile`).

Why from the declarations and not from a list kept here: a third-party plugin's options are tuned
the moment it declares them, and a range is the one its author wrote down (``low``/``high``),
checked by the same code that checks ``--option``.

Ranges: a numeric option is tuned within its declared ``[low, high]``, on a log scale when
``low > 0`` and the range spans more than a decade. An open end is derived from the default at
the tune's budget: ``default / 4`` below, ``default * 4`` above (clipped to the declared end on
the other side), so the search stays within a factor of four of what the author chose; an option
whose default is 0 with an open end gives no scale (0 often means "unlimited") and stays at its
default unless the space file gives bounds. An option declared ``unit="seconds"`` (time of the run:
a search limit, a phase's least length) is never sampled beyond the tune's budget: its upper end
is clipped to the budget (the space file's too, said in the notes), and one whose whole range lies
past the budget stays at its default. Floats are rounded to three significant digits, so a
written config holds exactly what was evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from ..backend_options import Option
from ..errors import ProblemError

SWITCH = "on:"
"""The prefix of a backend's on/off parameter (``on:toulbar2``); an option's is ``backend.option``."""

DERIVE = 4.0
"""An open end of a numeric range: the default at the budget divided or multiplied by this."""

DIGITS = 3
"""Significant digits of a tuned float."""


class TuneError(ProblemError):
    """Bad tune input (the space, its file, the budget, a run folder): one line, exit 2."""


@dataclass(frozen=True)
class Param:
    """One dimension of the space: a backend's switch (``option is None``, a bool) or an option.
    ``default`` is the value at the tune's budget (a budget-aware default resolved)."""

    key: str
    backend: str
    option: Optional[str]
    kind: str
    default: Any
    low: Optional[float] = None
    high: Optional[float] = None
    log: bool = False
    choices: tuple = ()
    derived: str = ""
    """How an open range was closed (empty: declared or from the space file)."""

    def describe(self) -> dict:
        out: dict[str, Any] = {"key": self.key, "kind": self.kind, "default": self.default}
        if self.kind in ("int", "float"):
            out.update(low=self.low, high=self.high, log=self.log)
        else:
            out["choices"] = list(self.choices)
        if self.derived:
            out["derived"] = self.derived
        return out

    def value(self, raw: Any) -> Any:
        """A sampler's raw value as the option takes it (a float rounded, kept in range)."""
        if self.kind == "float":
            x = float(raw)
            if x != 0:
                x = round(x, DIGITS - 1 - int(math.floor(math.log10(abs(x)))))
            return min(max(x, float(self.low)), float(self.high))   # type: ignore[arg-type]
        if self.kind == "int":
            return int(raw)
        return raw


@dataclass(frozen=True)
class Candidate:
    """One configuration: the backends that run and the options given to them (only the values
    that differ from the defaults at the tune's budget, so that equal configurations are equal)."""

    backends: tuple[str, ...]
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    def option_dict(self) -> dict[str, dict[str, Any]]:
        return {b: dict(items) for b, items in self.options}

    @staticmethod
    def make(backends: Sequence[str], options: Mapping[str, Mapping[str, Any]]) -> "Candidate":
        kept = {b: dict(v) for b, v in options.items() if v and b in backends}
        return Candidate(tuple(backends),
                         tuple(sorted((b, tuple(sorted(v.items()))) for b, v in kept.items())))


@dataclass(frozen=True)
class Space:
    """What a tune searches: ``backends`` (the set, in order), ``switches`` (those that may be
    off), ``params`` (the options tuned), ``fixed`` (options the space file sets), ``defaults``
    (every declared option's default at ``budget``), ``notes`` (options left out and why, ranges
    clipped to the budget)."""

    backends: tuple[str, ...]
    switches: tuple[str, ...]
    params: tuple[Param, ...]
    fixed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    budget: float = 0.0

    def switch_params(self) -> list[Param]:
        return [Param(SWITCH + b, b, None, "bool", True, choices=(False, True))
                for b in self.switches]

    def dimensions(self) -> int:
        return len(self.switches) + len(self.params)

    def baseline(self) -> Candidate:
        """The default configuration: the whole set, every option at its default (the space
        file's fixed values are not applied: the baseline is what a user gets without a config)."""
        return Candidate(self.backends)

    def baseline_raw(self) -> dict[str, Any]:
        """The baseline's parameter values, as a sampler would have given them."""
        return {**{p.key: True for p in self.switch_params()},
                **{p.key: p.default for p in self.params}}

    def sample(self, suggest: Callable[[Param], Any]) -> tuple[Candidate, dict[str, Any]]:
        """A configuration from ``suggest`` (the sampler), define-by-run: the switches in the
        set's order (the last switch is not asked, but on, when every other backend is off), then
        the options of the backends that are on. Returns it with the raw values asked."""
        raw: dict[str, Any] = {}
        on: list[str] = []
        switches = self.switch_params()
        last = switches[-1].backend if switches else None
        for name in self.backends:
            if name not in self.switches:
                on.append(name)
                continue
            if name == last and not on:
                on.append(name)
                continue
            param = next(p for p in switches if p.backend == name)
            raw[param.key] = suggest(param)
            if raw[param.key]:
                on.append(name)
        values: dict[str, dict[str, Any]] = {}
        for param in self.params:
            if param.backend in on:
                raw[param.key] = suggest(param)
                values.setdefault(param.backend, {})[param.option] = param.value(raw[param.key])
        return self.candidate(on, values), raw

    def candidate(self, on: Sequence[str], values: Mapping[str, Mapping[str, Any]]) -> Candidate:
        """The configuration running ``on`` with the space's fixed options and ``values``."""
        options: dict[str, dict[str, Any]] = {}
        for backend in on:
            merged = {**self.fixed.get(backend, {}), **values.get(backend, {})}
            defaults = self.defaults.get(backend, {})
            options[backend] = {k: v for k, v in merged.items() if defaults.get(k) != v}
        return Candidate.make([b for b in self.backends if b in on], options)

    def describe(self) -> dict:
        return {"backends": list(self.backends), "switches": list(self.switches),
                "params": [p.describe() for p in self.params],
                "fixed": {b: dict(v) for b, v in self.fixed.items()},
                "notes": list(self.notes), "budget_seconds": self.budget}


# ------------------------------------------------------------------------------------- building
@dataclass(frozen=True)
class Narrowing:
    """One option's entry in the space file: a fixed value, bounds, choices, or ``tune=False``."""

    fixed: Any = None
    is_fixed: bool = False
    low: Optional[float] = None
    high: Optional[float] = None
    log: Optional[bool] = None
    choices: Optional[tuple] = None
    tune: bool = True
    why: str = "the space file"
    """Who fixed it (a fixed value): the space file, or a config the tune starts from."""


def option_param(backend: str, option: Option, budget: float,
                 narrow: Optional[Narrowing] = None) -> tuple[Optional[Param], str]:
    """The dimension ``option`` gives and a note on its range (empty: nothing to say), or
    (None, why it stays at its default)."""
    default = option.default_for(budget)
    key = f"{backend}.{option.name}"
    if narrow is not None and not narrow.tune:
        return None, f"{key}: kept at its default {default!r} (the space file says tune = false)"
    if not option.changes_plan:
        return None, f"{key}: not tuned (declared changes_plan=False: it cannot change the plan)"
    if option.kind in ("bool", "choice"):
        choices = (False, True) if option.kind == "bool" else tuple(option.choices)
        if narrow is not None and narrow.choices is not None:
            choices = narrow.choices
        if len(choices) < 2:
            return None, f"{key}: one value left ({choices[0]!r}): fixed"
        return Param(key, backend, option.name, "choice" if option.kind == "choice" else "bool",
                     default, choices=choices), ""
    low, high, derived = option.low, option.high, ""
    if narrow is not None and narrow.choices is not None:
        return Param(key, backend, option.name, "choice", default, choices=narrow.choices), ""
    if narrow is not None and narrow.low is not None:
        low = narrow.low
    if narrow is not None and narrow.high is not None:
        high = narrow.high
    if low is None or high is None:
        if not isinstance(default, (int, float)) or default <= 0:
            return None, (f"{key}: kept at its default {default!r} (an open range and a default "
                          f"of 0 give no scale; give low and high in --space to tune it)")
        if low is None:
            low = default / DERIVE if high is None else min(default / DERIVE, high)
        if high is None:
            high = max(default * DERIVE, low)
        derived = f"from the default {default!r}: x1/{DERIVE:g} .. x{DERIVE:g}"
    clipped = ""
    if option.unit == "seconds" and budget > 0 and high > budget:
        if low >= budget:
            return None, (f"{key}: kept at its default {default!r} (its range {low:g}..{high:g} s "
                          f"lies past the {budget:g} s budget)")
        clipped = f"{key}: range clipped to {low:g}..{budget:g} s (seconds, the {budget:g} s budget)"
        high = budget
    if option.kind == "int":
        low, high = math.ceil(low), math.floor(high)
    if high <= low:
        return None, f"{key}: the range {low:g}..{high:g} holds one value: fixed"
    log = low > 0 and high / low > 10.0
    if narrow is not None and narrow.log is not None:
        if narrow.log and low <= 0:
            raise TuneError(f"{key}: log = true needs low > 0 (it is {low:g})")
        log = narrow.log
    return Param(key, backend, option.name, option.kind, default, low, high, log,
                 derived=derived), clipped


def build_space(declared: Sequence[tuple[str, tuple[Option, ...]]], budget: float, *,
                fixed_set: bool = False, always: Sequence[str] = (),
                narrowing: Optional[Mapping[str, Mapping[str, Narrowing]]] = None,
                only_listed: bool = False) -> Space:
    """The space over ``declared`` (each backend of the set with its declared options, in the
    set's order) at ``budget`` seconds: its switches (none with ``fixed_set`` or a single
    backend; ``always`` stay on), its options; ``narrowing`` from the space file, and
    ``only_listed``: options it does not name keep their defaults."""
    narrowing = narrowing or {}
    names = [name for name, _ in declared]
    switches = () if fixed_set or len(names) < 2 else tuple(n for n in names if n not in always)
    params: list[Param] = []
    fixed: dict[str, dict[str, Any]] = {}
    defaults: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name, options in declared:
        given = narrowing.get(name, {})
        defaults[name] = {o.name: o.default_for(budget) for o in options}
        for option in options:
            narrow = given.get(option.name)
            if narrow is not None and narrow.is_fixed:
                fixed.setdefault(name, {})[option.name] = narrow.fixed
                notes.append(f"{name}.{option.name}: fixed at {narrow.fixed!r} by {narrow.why}")
                continue
            if only_listed and narrow is None:
                continue
            param, why = option_param(name, option, budget, narrow)
            if param is not None:
                params.append(param)
            if why:
                notes.append(why)
    return Space(tuple(names), tuple(switches), tuple(params), fixed, defaults, tuple(notes),
                 budget)


def nothing_to_tune(space: Space) -> Optional[str]:
    """Why ``space`` has nothing to search, or None."""
    if space.params or space.switches:
        return None
    names = ", ".join(space.backends)
    return (f"nothing to tune: no option of {names} is left to tune (none declared, declared "
            f"changes_plan=False, or fixed by the space file) and the backend set is fixed; "
            f"`portfolio backends --verbose` lists the options")
