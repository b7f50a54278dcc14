"""A selector file: per candidate schedule, a model of its expected score from an instance's cheap
features and the log of the budget; the candidate predicted best is the run's schedule.

What the file holds (docs/selection.md has the layout): the format and its version, the features
it reads (:data:`portfolio.features.FEATURES_VERSION`, their names in the order of a sample, the
value standing for an undefined feature), the candidates (a :class:`.Schedule` each, with its
:class:`.trees.Forest`), which candidate is the default, and the record of its training (runs,
commits, instances, budgets, the model's parameters, the cross-validation).

Two kinds of trouble, told apart on purpose: a file that cannot be read as a selector (not JSON,
a field missing or malformed) is :class:`.SelectorError` (one line, ``solve`` exits 2); a good
file that does not fit this installation (features of another version, a candidate naming a
backend that is not installed) is :meth:`Selector.unusable_here`'s one-line note, and the run
goes on with the default schedule.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from ..features import CHEAP_FEATURES, FEATURES_VERSION
from .schedule import Schedule, SelectorError
from .trees import Forest

FORMAT = "portfolio-selector"
FORMAT_VERSION = 1
BUDGET_FEATURE = "log10_budget"
"""The last input of every model: log10 of the run's time limit in seconds."""
MISSING = -1.0
"""What an undefined feature (None) is given to the model: below every feature's range (all
are counts, shares, ratios or log spreads, so at least 0), so a tree can tell it apart."""


def feature_vector(names: Sequence[str], values: Mapping[str, Any], budget: float,
                   missing: float = MISSING) -> np.ndarray:
    """A model's input: the named features' values (``missing`` where undefined) and, for
    :data:`BUDGET_FEATURE`, log10 of ``budget`` seconds."""
    row = []
    for name in names:
        if name == BUDGET_FEATURE:
            row.append(math.log10(max(float(budget), 1e-3)))
            continue
        value = values.get(name)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value)
        row.append(float(value) if ok else missing)
    return np.asarray(row, dtype=np.float64)


@dataclass(frozen=True)
class Candidate:
    """A schedule and the model of its expected score."""

    schedule: Schedule
    model: Forest
    cells: int = 0
    """(instance, budget) cells it was trained on."""


@dataclass(frozen=True)
class Choice:
    """What a selector chose: the schedule predicted best and every candidate's prediction."""

    schedule: Schedule
    predicted: dict[str, float]


MARGIN = 0.003
"""The default margin of ``portfolio learn``: a candidate replaces the default only when its
predicted score is higher by more than 0.003 (0.3 points of a contest score). Three seeds of one
configuration on the large shared graphs spread by 0.5-4 points at 10 and 60 s
(docs/benchmarks/), and the models learn from means of three seeds: a smaller predicted gain is
inside the noise they were trained on, and leaving the default for it risks its proofs (its exact
backends) for nothing measurable."""


DOMAIN_FEATURES = ("nodes", "edges")
"""The sizes a selector records the range of over its training graphs (``domain``)."""
BUDGET_DOMAIN = "budget_seconds"
"""The ``domain`` entry of the training budgets (:func:`outside_budgets`)."""


def below_domain(domain: Mapping[str, Sequence[float]], values: Mapping[str, Any]) -> Optional[str]:
    """Why a graph lies below the training graphs' sizes (one line), or None. A forest answers
    for a graph smaller than all it learned from with the leaves of unlike graphs, so the
    default runs there (its exact backends settle small graphs); above the largest, the leaves of
    the largest answer, which is where the measurements are."""
    for name, (low, _high) in domain.items():
        if name == BUDGET_DOMAIN:
            continue
        value = values.get(name)
        if isinstance(value, (int, float)) and value < low:
            return (f"{name} {value:,.0f} is below the smallest training graph's {low:,.0f}: "
                    f"the selector does not extrapolate to smaller graphs")
    return None


def outside_budgets(domain: Mapping[str, Sequence[float]], budget: float) -> Optional[str]:
    """Why a budget lies outside the training budgets (one line), or None. The forests' budget
    input saturates at the largest and smallest budget they saw: a 240 s run would be answered as
    a 60 s one, and on S at its limit the 60 s choice measured worse than the default
    (docs/benchmarks/selection.md), so the default runs there."""
    span = domain.get(BUDGET_DOMAIN)
    if span and not span[0] <= budget <= span[1]:
        return (f"a budget of {budget:g} s is outside the training budgets ({span[0]:g}-"
                f"{span[1]:g} s): the selector does not extrapolate in time")
    return None


def domain_of(features: Mapping[str, Mapping[str, Any]],
              budgets: Sequence[float] = ()) -> dict[str, list[float]]:
    """The training graphs' range of each of :data:`DOMAIN_FEATURES` (``features``: per graph),
    and of the training budgets in seconds (:data:`BUDGET_DOMAIN`)."""
    out = {}
    for name in DOMAIN_FEATURES:
        seen = [float(f[name]) for f in features.values() if isinstance(f.get(name), (int, float))]
        if seen:
            out[name] = [min(seen), max(seen)]
    if budgets:
        out[BUDGET_DOMAIN] = [float(min(budgets)), float(max(budgets))]
    return out


def pick(predicted: Mapping[str, float], default: Optional[str], margin: float) -> str:
    """The chosen name among ``predicted`` (name -> predicted score, in the file's order): the
    highest (ties: the first), unless the default is predicted within ``margin`` of it."""
    names = list(predicted)
    best = max(range(len(names)), key=lambda i: (predicted[names[i]], -i))
    top = names[best]
    if default in predicted and top != default and predicted[top] <= predicted[default] + margin:
        return default
    return top


@dataclass
class Selector:
    """A loaded selector file (see the module)."""

    features_version: int
    feature_names: tuple[str, ...]
    candidates: list[Candidate]
    default: Optional[str] = None
    training: dict = field(default_factory=dict)
    cv: Optional[dict] = None
    missing: float = MISSING
    domain: dict = field(default_factory=dict)
    """The training graphs' size range per feature (:func:`domain_of`); below it the default
    runs (:func:`below_domain`). Files without one: no check."""
    margin: float = 0.0
    """How much better (in score) another candidate must be predicted than the default to be
    chosen (:func:`pick`); files written before it was recorded: 0."""
    path: Optional[str] = None
    sha256: Optional[str] = None

    def vector(self, values: Mapping[str, Any], budget: float) -> np.ndarray:
        """The model's input for an instance's feature values and a budget in seconds."""
        return feature_vector(self.feature_names, values, budget, self.missing)

    def predict(self, values: Mapping[str, Any], budget: float) -> dict[str, float]:
        """Every candidate's predicted score, by name, in the file's order."""
        x = self.vector(values, budget)
        return {c.schedule.name: c.model.predict(x) for c in self.candidates}

    def outside_domain(self, values: Mapping[str, Any], budget: float) -> Optional[str]:
        """Why this graph is smaller than every training graph (:func:`below_domain`) or the
        budget outside the training budgets (:func:`outside_budgets`), or None."""
        return below_domain(self.domain, values) or outside_budgets(self.domain, budget)

    def choose(self, values: Mapping[str, Any], budget: float) -> Choice:
        """The candidate :func:`pick` chooses from the predicted scores (the default unless
        another is predicted better by more than :attr:`margin`)."""
        predicted = self.predict(values, budget)
        name = pick(predicted, self.default, self.margin)
        return Choice(next(c.schedule for c in self.candidates if c.schedule.name == name),
                      predicted)

    def backends(self) -> list[str]:
        """Every backend any candidate names, in first-seen order."""
        return list(dict.fromkeys(b for c in self.candidates for b in c.schedule.backends))

    def unusable_here(self, installed: Iterable[str]) -> Optional[str]:
        """Why this selector does not fit this installation (one line), or None when it does:
        features of another version, or a candidate naming a backend not installed."""
        if self.features_version != FEATURES_VERSION:
            return (f"features of version {self.features_version}, this installation computes "
                    f"version {FEATURES_VERSION}")
        have = set(installed)
        missing = [b for b in self.backends() if b not in have]
        if missing:
            names = [c.schedule.name for c in self.candidates
                     if any(b in missing for b in c.schedule.backends)]
            return (f"backend{'s' if len(missing) > 1 else ''} {', '.join(missing)} not "
                    f"installed (named by {', '.join(names)})")
        return None

    def schedule(self, name: str) -> Optional[Schedule]:
        return next((c.schedule for c in self.candidates if c.schedule.name == name), None)

    def to_json(self) -> dict:
        return {"format": FORMAT, "format_version": FORMAT_VERSION,
                "features": {"version": self.features_version,
                             "names": list(self.feature_names), "missing": self.missing},
                "default": self.default, "margin": self.margin, "domain": self.domain,
                "candidates": [{**c.schedule.to_json(), "cells": c.cells,
                                "model": c.model.to_json()} for c in self.candidates],
                "training": self.training, "cv": self.cv}

    def dumps(self) -> str:
        """The file's text: compact arrays, one candidate's model per line at most."""
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=False) + "\n"


def _features_part(doc: Any, where: str) -> tuple[int, tuple[str, ...], float]:
    if not isinstance(doc, Mapping):
        raise SelectorError(f"{where}.features: expected an object with version and names")
    version, names = doc.get("version"), doc.get("names")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SelectorError(f"{where}.features.version: expected an integer, got {version!r}")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SelectorError(f"{where}.features.names: expected a non-empty list of names")
    if version == FEATURES_VERSION:
        known = {*CHEAP_FEATURES, BUDGET_FEATURE}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SelectorError(f"{where}.features.names: {', '.join(unknown[:5])} "
                                f"{'is' if len(unknown) == 1 else 'are'} not a cheap feature of "
                                f"version {version} (docs/features.md)")
    missing = doc.get("missing", MISSING)
    if isinstance(missing, bool) or not isinstance(missing, (int, float)):
        raise SelectorError(f"{where}.features.missing: expected a number, got {missing!r}")
    return version, tuple(names), float(missing)


def selector_from_json(doc: Any, where: str) -> Selector:
    """A :class:`Selector` from a parsed file; ``where`` (the file's name) starts every error."""
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT:
        raise SelectorError(f"{where}: not a selector file (no \"format\": \"{FORMAT}\"; "
                            f"`portfolio learn` writes them)")
    if doc.get("format_version") != FORMAT_VERSION:
        raise SelectorError(f"{where}.format_version: {doc.get('format_version')!r}, this "
                            f"installation reads version {FORMAT_VERSION}")
    version, names, missing = _features_part(doc.get("features"), where)
    raw = doc.get("candidates")
    if not isinstance(raw, list) or not raw:
        raise SelectorError(f"{where}.candidates: expected a non-empty list of schedules")
    candidates = []
    for i, item in enumerate(raw):
        here = f"{where}.candidates[{i}]"
        schedule = Schedule.from_json(item, here)
        model = (item.get("model") or {}) if isinstance(item, Mapping) else {}
        if not isinstance(model, Mapping):
            raise SelectorError(f"{here}.model: expected an object with trees")
        forest = Forest.from_trees(model.get("trees"), len(names), f"{here}.model")
        cells = item.get("cells", 0)
        candidates.append(Candidate(schedule, forest, cells if isinstance(cells, int) else 0))
    seen = [c.schedule.name for c in candidates]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise SelectorError(f"{where}.candidates: {', '.join(twice)} named twice")
    default = doc.get("default")
    if default is not None and default not in seen:
        raise SelectorError(f"{where}.default: {default!r} is not a candidate")
    margin = doc.get("margin", 0.0)
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise SelectorError(f"{where}.margin: expected a score difference in [0, 1), got "
                            f"{margin!r}")
    domain = doc.get("domain", {})
    ok = isinstance(domain, Mapping) and all(
        isinstance(v, list) and len(v) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) and v[0] <= v[1]
        for v in domain.values())
    if not ok:
        raise SelectorError(f"{where}.domain: expected {{feature: [low, high]}}, got {domain!r}")
    training = doc.get("training") if isinstance(doc.get("training"), Mapping) else {}
    cv = doc.get("cv") if isinstance(doc.get("cv"), Mapping) else None
    return Selector(version, names, candidates, default, dict(training), cv, missing,
                    domain=dict(domain), margin=float(margin))


def load_selector(path: str | Path) -> Selector:
    """The selector file at ``path``; a file that cannot be used is one :class:`SelectorError`
    line naming it."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SelectorError(f"{path}: cannot read the selector: {exc.strerror or exc}") from None
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SelectorError(f"{path}: not JSON ({exc})") from None
    selector = selector_from_json(doc, str(path))
    selector.path = str(path)
    selector.sha256 = hashlib.sha256(data).hexdigest()[:16]
    return selector


def shipped_selector_path() -> Path:
    """Where the package's own selector lives (``portfolio/data/selector.json``)."""
    from ..data import example_path

    return example_path().with_name("selector.json")


DEFAULT_SELECTOR_ON = True
"""Whether a run without ``--selector`` uses the shipped selector (when the file is there). On
since the sweep of 2026-12-08 (docs/benchmarks/selection.md: the shared seven at 10 and 60 s,
three seeds, alternated against the fixed schedule); turning it off gives the fixed schedule back.
It changes only the backend set, their options and CPU weights (and a re-solve's cold part) of a
run that does not name them (``tests/test_selection_apply.py``)."""


def default_selector(on: Optional[bool] = None) -> Optional[Path]:
    """The shipped selector's path when the default uses it (``on``: None reads
    :data:`DEFAULT_SELECTOR_ON`) and it is there, else None."""
    path = shipped_selector_path()
    use = DEFAULT_SELECTOR_ON if on is None else on
    return path if use and path.is_file() else None
