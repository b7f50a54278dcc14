"""Backend options: the settings a backend declares (name, type, default, allowed values, one line
of help), checked where a user gives them and resolved once per run.

Why declared data and not environment variables: a setting that changes the plan must be visible
(``portfolio backends --verbose``), settable the same way everywhere (``--option``, a TOML file,
``portfolio.solve(backend_options=...)``, a bench configuration ``toulbar2[NAME=VALUE]``),
refused with one line when wrong, and recorded with every result, so that a run can be reproduced
from its ``--json`` and deterministic mode's identity includes it.

A backend declares its options in ``BackendMeta(options=(Option(...), ...))`` and reads the
resolved values in ``solve`` through ``report.options`` (:func:`portfolio.backend.options_of`
fills the defaults for a direct call). A default may follow the run's budget
(:class:`Budgeted`): the value for budgets up to ``upto`` seconds, the plain default above the
last threshold; a deterministic run's budget is its work budget in nominal seconds
(:attr:`portfolio.options.RunOptions.budget_seconds`).

Floor 1: imports nothing of the project but ``errors``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from .errors import ProblemError

KINDS = ("bool", "int", "float", "choice")
"""The types an option may have."""

UNITS = ("", "seconds")
"""What an int's or float's value may measure: nothing said (``""``), or ``seconds`` of the run,
which ``portfolio tune`` never samples beyond the run's budget."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class OptionError(ProblemError):
    """An option that cannot be used (unknown backend or name, bad value or type): one line naming
    it and what is allowed. A :class:`ProblemError`, so the CLI prints it and exits 2."""


TUNED_SHORT = 20.0
"""Budgets up to which the defaults that ``portfolio tune`` chose at 10 s apply (issue 44: K, N, S,
seeds 0-1; validated on the seven, seeds 2-7; docs/benchmarks/tune.md, "The shipped short-budget
defaults"). Above it the options keep the values measured at 60 s and at the contest limits; the
threshold sits below the geometric middle of 10 s and 60 s (24.5 s): nothing between was measured."""

TUNED_SHORT_WHY = "docs/benchmarks/tune.md (the 10 s tune)"


@dataclass(frozen=True)
class Budgeted:
    """Part of a budget-aware default: ``value`` for runs whose budget is at most ``upto``
    seconds. ``why`` names the measurement that chose the threshold (a docs page)."""

    upto: float
    value: Any
    why: str = ""


@dataclass(frozen=True)
class Option:
    """One setting a backend declares. ``kind`` is ``bool``, ``int``, ``float`` or ``choice``;
    ``choices`` the allowed values of a choice; ``low``/``high`` an int's or float's range
    (inclusive; None: open); ``changes_plan``: False for a setting that cannot change the answer
    (a log level, a report interval), which deterministic mode's identity then ignores;
    ``by_budget``: budget-aware defaults, thresholds in increasing order (see the module);
    ``unit``: ``seconds`` for a value that is time of the run (a search limit, a phase's least
    length), so a tune clips its range to the budget (one of ``UNITS``)."""

    name: str
    kind: str
    default: Any
    help: str
    choices: tuple = ()
    low: Optional[float] = None
    high: Optional[float] = None
    changes_plan: bool = True
    by_budget: tuple[Budgeted, ...] = field(default=())
    unit: str = ""

    # ---------------------------------------------------------------- declaration
    def problems(self) -> list[str]:
        """What is wrong with this declaration (empty: nothing): a backend's bad option is
        dropped with these lines as the registry's warnings."""
        out: list[str] = []
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            return [f"option name {self.name!r} is not lower_case_with_underscores"]
        if self.kind not in KINDS:
            return [f"option {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}"]
        if not isinstance(self.help, str) or not self.help.strip():
            out.append(f"option {self.name!r} has no help line")
        if self.kind == "choice":
            if not self.choices or not all(isinstance(c, str) for c in self.choices):
                return out + [f"option {self.name!r}: a choice needs choices, a tuple of strings"]
        if self.unit not in UNITS:
            out.append(f"option {self.name!r}: unit {self.unit!r} is not one of "
                       f"{', '.join(repr(u) for u in UNITS)}")
        elif self.unit and self.kind not in ("int", "float"):
            out.append(f"option {self.name!r}: a unit needs an int or a float, not a {self.kind}")
        for what, value in [("default", self.default)] + [
                (f"by_budget value for <= {b.upto:g} s", b.value) for b in self.by_budget]:
            try:
                self.check(value)
            except OptionError as exc:
                out.append(f"option {self.name!r}: {what}: {exc}")
        uptos = [b.upto for b in self.by_budget]
        if any(not isinstance(u, (int, float)) or isinstance(u, bool) or not u > 0 for u in uptos) \
                or uptos != sorted(set(uptos)):
            out.append(f"option {self.name!r}: by_budget thresholds must be positive and increasing")
        return out

    # ---------------------------------------------------------------- values
    def allowed(self) -> str:
        """What the option takes, for error lines and listings."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        word = "an integer" if self.kind == "int" else "a number"
        if self.low is not None and self.high is not None:
            return f"{word} from {self.low:g} to {self.high:g}"
        if self.low is not None:
            return f"{word} >= {self.low:g}"
        if self.high is not None:
            return f"{word} <= {self.high:g}"
        return word

    def check(self, value: Any) -> Any:
        """``value`` (from a TOML file or Python) as this option's type, or :class:`OptionError`.
        An int is a float here; nothing else is converted (a string is not a number)."""
        bad = OptionError(f"expected {self.allowed()}, got {value!r}")
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise bad
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if self.kind == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise bad
                value = int(value)
        else:
            value = float(value)
            if not math.isfinite(value):
                raise bad
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise bad
        return value

    def parse(self, text: str) -> Any:
        """``text`` from the command line (``--option toulbar2.first_limit=6``) as this option's
        type, or :class:`OptionError`."""
        raw = text.strip()
        if self.kind == "bool":
            low = raw.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise OptionError(f"expected {self.allowed()}, got {text!r}")
        if self.kind == "choice":
            return self.check(raw)
        try:
            number: Any = int(raw) if self.kind == "int" else float(raw)
        except ValueError:
            raise OptionError(f"expected {self.allowed()}, got {text!r}") from None
        return self.check(number)

    def default_for(self, budget: Optional[float]) -> Any:
        """The default for a run of ``budget`` seconds (None: unknown, the plain default)."""
        if budget is not None:
            for step in self.by_budget:
                if budget <= step.upto:
                    return step.value
        return self.default

    def describe(self) -> dict:
        """The declaration as plain data (``portfolio backends --json``)."""
        return {"name": self.name, "type": self.kind, "default": self.default,
                "allowed": self.allowed(), "choices": list(self.choices) or None,
                "low": self.low, "high": self.high, "help": self.help,
                "changes_plan": self.changes_plan, "unit": self.unit or None,
                "by_budget": [{"upto_seconds": b.upto, "value": b.value, "why": b.why}
                              for b in self.by_budget]}

    def default_text(self) -> str:
        """``round`` or ``last up to 120 s, else round``: the default as a listing shows it."""
        if not self.by_budget:
            return _show(self.default)
        steps = ", ".join(f"{_show(b.value)} up to {b.upto:g} s" for b in self.by_budget)
        return f"{steps}, else {_show(self.default)}"


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def by_name(declared: tuple[Option, ...]) -> dict[str, Option]:
    return {o.name: o for o in declared}


def check_given(backend: str, declared: tuple[Option, ...], given: Mapping[str, Any]) -> dict:
    """``given`` (one backend's options, typed values) checked against its declarations: the
    values in their types, or :class:`OptionError` naming the first problem."""
    if not isinstance(given, Mapping):
        raise OptionError(f"options of {backend}: expected a table of NAME = VALUE, "
                          f"got {type(given).__name__}")
    known = by_name(declared)
    out = {}
    for name, value in given.items():
        option = known.get(name)
        if option is None:
            raise OptionError(unknown_option(backend, str(name), declared))
        try:
            out[name] = option.check(value)
        except OptionError as exc:
            raise OptionError(f"option {backend}.{name}: {exc}") from None
    return out


def unknown_option(backend: str, name: str, declared: tuple[Option, ...]) -> str:
    names = ", ".join(o.name for o in declared)
    return (f"unknown option {backend}.{name}; "
            + (f"{backend} takes: {names}" if names else f"{backend} declares no options"))


def resolve(declared: tuple[Option, ...], given: Mapping[str, Any],
            budget: Optional[float]) -> dict[str, Any]:
    """Every declared option's value in a run of ``budget`` seconds: the given one (checked
    already), else the default for that budget."""
    return {o.name: given[o.name] if o.name in given else o.default_for(budget) for o in declared}


def plan_relevant(declared: tuple[Option, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the options that can change the plan (deterministic mode's identity)."""
    keep = {o.name for o in declared if o.changes_plan}
    return {k: v for k, v in values.items() if k in keep}


def parse_assignment(text: str) -> tuple[str, str, str]:
    """``BACKEND.NAME=VALUE`` -> (backend, name, value text), or :class:`OptionError`."""
    left, eq, value = text.partition("=")
    backend, dot, name = left.strip().rpartition(".")
    if not eq or not dot or not backend or not name:
        raise OptionError(f"--option {text!r}: expected BACKEND.NAME=VALUE, "
                          f"such as toulbar2.warm_follow=last")
    return backend.strip(), name.strip(), value


def parse_bracket_options(text: str, backend: str) -> dict[str, str]:
    """The inside of ``toulbar2[warm_follow=last,first_limit=6]`` -> {name: value text}."""
    out: dict[str, str] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise OptionError(f"{backend}[{text}]: expected NAME=VALUE items, got {item!r}")
        if name.strip() in out:
            raise OptionError(f"{backend}[{text}]: {name.strip()} is set twice")
        out[name.strip()] = value.strip()
    return out
