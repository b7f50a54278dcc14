"""A schedule: what a selector chooses for one run (docs/selection.md).

Which backends run, with which options, the CPU weight of each (:attr:`RunOptions.cpu_weights`:
each worker's priority at its start, and its share of the work in deterministic mode), and
a re-solve's cold part (which backends start cold when a warm start is given; None keeps the
runner's measured default, :data:`portfolio.runner.warmstart.COLD`).

The candidates of a selector are bench configurations (``portfolio bench -b``): a backend set
and the options it gave, read back from the rows; :meth:`Schedule.spec` writes one in that
syntax again, so a candidate can be re-run as it was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..errors import ProblemError


class SelectorError(ProblemError):
    """A selector file that cannot be used as given (not JSON, a field missing or of the wrong
    type): one line naming the file and the field; ``portfolio solve`` exits 2 on it."""


def _text_list(doc: Any, where: str) -> tuple[str, ...]:
    if not isinstance(doc, list) or not all(isinstance(n, str) and n for n in doc):
        raise SelectorError(f"{where}: expected a list of names, got {doc!r}"[:300])
    return tuple(doc)


def _options(doc: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(doc, Mapping) or not all(
            isinstance(b, str) and isinstance(v, Mapping) and all(isinstance(k, str) for k in v)
            for b, v in doc.items()):
        raise SelectorError(f"{where}: expected {{backend: {{option: value}}}}, got {doc!r}"[:300])
    return {b: dict(v) for b, v in doc.items()}


def _weights(doc: Any, where: str, backends: tuple[str, ...]) -> Optional[dict[str, float]]:
    if doc is None:
        return None
    if not isinstance(doc, Mapping):
        raise SelectorError(f"{where}: expected {{backend: weight}} or null, got {doc!r}"[:300])
    out = {}
    for name, value in doc.items():
        if name not in backends:
            raise SelectorError(f"{where}.{name}: not a backend of this schedule "
                                f"({', '.join(backends)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value <= 0:
            raise SelectorError(f"{where}.{name}: expected a positive weight, got {value!r}")
        out[name] = float(value)
    return out


@dataclass(frozen=True)
class Schedule:
    """One candidate of a selector: a bench configuration and what it does to a run."""

    name: str
    backends: tuple[str, ...]
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    weights: Optional[dict[str, float]] = None
    """CPU weight per backend (None: equal shares). Recorded in the run's ``selection`` and
    applied as ``RunOptions.cpu_weights`` (:mod:`portfolio.runner.focus`)."""
    cold: Optional[tuple[str, ...]] = None
    """A re-solve's cold part (``RunOptions.cold``); None: the runner's measured default."""

    def spec(self) -> str:
        """The schedule as a ``portfolio bench -b`` item: ``NAME=a[x=1]+b``."""
        members = []
        for backend in self.backends:
            given = self.options.get(backend) or {}
            inner = ",".join(f"{k}={_text(v)}" for k, v in sorted(given.items()))
            members.append(f"{backend}[{inner}]" if inner else backend)
        joined = "+".join(members)
        return joined if joined == self.name else f"{self.name}={joined}"

    def to_json(self) -> dict:
        return {"name": self.name, "backends": list(self.backends),
                "options": {b: dict(v) for b, v in sorted(self.options.items()) if v},
                "weights": None if self.weights is None else dict(self.weights),
                "cold": None if self.cold is None else list(self.cold),
                "spec": self.spec()}

    @staticmethod
    def from_json(doc: Any, where: str) -> "Schedule":
        """A schedule from a selector file; ``where`` names its place in the file for errors."""
        if not isinstance(doc, Mapping):
            raise SelectorError(f"{where}: expected an object, got {type(doc).__name__}")
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            raise SelectorError(f"{where}.name: expected a non-empty text, got {name!r}")
        backends = _text_list(doc.get("backends"), f"{where}.backends")
        if not backends:
            raise SelectorError(f"{where}.backends: a schedule runs at least one backend")
        if len(set(backends)) != len(backends):
            raise SelectorError(f"{where}.backends: names a backend twice")
        options = _options(doc.get("options") or {}, f"{where}.options")
        foreign = [b for b in options if b not in backends]
        if foreign:
            raise SelectorError(f"{where}.options.{foreign[0]}: not a backend of this schedule "
                                f"({', '.join(backends)})")
        cold = doc.get("cold")
        return Schedule(name, backends, options,
                        _weights(doc.get("weights"), f"{where}.weights", backends),
                        None if cold is None else _text_list(cold, f"{where}.cold"))


def _text(value: Any) -> str:
    """An option value as bench brackets write it (``True`` as ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
