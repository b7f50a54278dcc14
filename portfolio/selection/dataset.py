"""What a selector learns from: bench run folders read into cells (an instance at a budget) with
each candidate configuration's mean score there, and each instance's cheap features.

* **score** of a row: the contest's, reference / cost, where an instance's reference is the
  lower of the contest's best known cost (a contest benchmark) and the best usable cost any
  training row reached on it, at any budget (:func:`portfolio.report.tune_score.references`); a
  row without a usable plan (none, forbidden, late, failed) scores 0. So scores lie in [0, 1]
  and regret is 1 - score. A cell's score is the mean over its seeds and repeats.
* **candidates**: the configurations of the rows, one per distinct backend set and given options
  (two runs' ``portfolio`` with the same set are one candidate; a label reused for another set
  is told apart as ``RUN/LABEL``). Left out: rows of another checkout's code (``LABEL=...@PATH``:
  this code cannot run them), deterministic rows (their budget is work, not seconds), re-solve
  rows and rows whose backends are not named (converted from older tools).
* **features**: the cheap step's (docs/features.md), from the rows' ``features`` when they carry
  the current version, else computed from the instance file (``features_of``, as ``report
  --aslib`` does for old rows); an instance with neither is left out with a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from ..features import CHEAP_FEATURES, FEATURES_VERSION
from ..report.leaderboard import ReportError, load_run
from ..report.tune_score import references, usable_cost
from .schedule import Schedule, SelectorError

FeaturesOf = Callable[[str], Optional[dict]]
"""An instance file's path -> its cheap feature values (None: not computable)."""


@dataclass
class Cell:
    """One instance at one budget: each candidate's mean score there and how many rows made it."""

    instance: str
    budget: float
    scores: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)


@dataclass
class TrainingSet:
    """The cells, the candidates (in order: the default first, then by name), the features of
    each instance, and what the runs were."""

    cells: list[Cell]
    candidates: list[Schedule]
    features: dict[str, dict]
    runs: list[dict]
    default: Optional[str]
    notes: list[str] = field(default_factory=list)

    @property
    def instances(self) -> list[str]:
        return sorted({c.instance for c in self.cells})

    @property
    def budgets(self) -> list[float]:
        return sorted({c.budget for c in self.cells})

    def restricted(self, keep: Callable[[Cell], bool]) -> "TrainingSet":
        """The same set with only the cells ``keep`` accepts (a cross-validation fold)."""
        return TrainingSet([c for c in self.cells if keep(c)], self.candidates, self.features,
                           self.runs, self.default, [])


def _skip_reason(row: Mapping) -> Optional[str]:
    backends = row.get("backends") or ()
    if row.get("checkout"):
        return "another checkout's code"
    if row.get("work") is not None or row.get("deterministic"):
        return "deterministic"
    if row.get("resolve") is not None:
        return "a re-solve"
    if not backends or any(str(b).startswith("(") for b in backends):
        return "backends not named"
    if not row.get("time_limit"):
        return "no time limit"
    return None


def _own_options(row: Mapping) -> dict[str, dict]:
    """The options a configuration gave its own backends (a sweep's ``--option`` reaches every
    configuration's rows, also for backends the configuration does not run)."""
    backends = set(row["backends"])
    return {b: dict(v) for b, v in (row.get("options_given") or {}).items() if b in backends and v}


def _key(row: Mapping) -> tuple:
    """A configuration's identity: its backend set and the options it gave them."""
    return (tuple(sorted(row["backends"])), json.dumps(_own_options(row), sort_keys=True))


def _candidates(rows: list[tuple[str, dict]]) -> dict[tuple, Schedule]:
    """One schedule per configuration key, named by its first label (``RUN/LABEL`` when that
    label already names another key)."""
    out: dict[tuple, Schedule] = {}
    taken: set[str] = set()
    for run_name, row in rows:
        key = _key(row)
        if key in out:
            continue
        label = str(row["configuration"])
        name = label if label not in taken else f"{run_name}/{label}"
        taken.add(name)
        out[key] = Schedule(name, tuple(row["backends"]), _own_options(row))
    return out


def _features(rows: list[tuple[str, dict]], features_of: Optional[FeaturesOf],
              notes: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    paths: dict[str, str] = {}
    for _, row in rows:
        record = row.get("features") or {}
        if record.get("version") == FEATURES_VERSION and record.get("values"):
            found.setdefault(row["instance"], {n: record["values"].get(n) for n in CHEAP_FEATURES})
        paths.setdefault(row["instance"], str(row.get("path") or ""))
    computed, absent = [], []
    for name, path in sorted(paths.items()):
        if name in found:
            continue
        values = features_of(path) if features_of is not None and path else None
        if values is None:
            absent.append(name)
        else:
            found[name] = {n: values.get(n) for n in CHEAP_FEATURES}
            computed.append(name)
    if computed:
        notes.append(f"features computed from the instance files for {len(computed)} "
                     f"instance(s) whose rows carry none: {', '.join(computed)}")
    if absent:
        notes.append(f"left out (no features on the rows, and the file is not found): "
                     f"{', '.join(absent)}")
    return found


def read_training(run_paths: Sequence[str | Path], features_of: Optional[FeaturesOf] = None,
                  only: Optional[Sequence[str]] = None, default: str = "portfolio",
                  min_graphs: int = 2) -> TrainingSet:
    """The training set of ``run_paths`` (see the module). ``only``: the candidate names to keep
    (None: every one that ran on at least ``min_graphs`` graphs). ``default``: the candidate
    that stands for today's default run (the cross-validation's reference; None when absent)."""
    notes: list[str] = []
    runs, rows = [], []
    skipped: dict[str, int] = {}
    for path in run_paths:
        try:
            run = load_run(path)
        except ReportError as exc:
            raise SelectorError(str(exc)) from None
        commits = sorted({(r.get("git") or {}).get("commit") for r in run.rows} - {None})
        runs.append({"name": run.name, "path": str(path), "commits": commits,
                     "rows": len(run.rows)})
        for row in run.rows:
            why = _skip_reason(row)
            if why:
                skipped[why] = skipped.get(why, 0) + 1
            else:
                rows.append((run.name, row))
    if skipped:
        notes.append("rows left out: " + ", ".join(f"{n} ({why})" for why, n in skipped.items()))
    if not rows:
        raise SelectorError("no usable rows in these runs (timed bench rows of this code's "
                            "configurations are needed)")
    features = _features(rows, features_of, notes)
    rows = [(run, row) for run, row in rows if row["instance"] in features]
    by_key = _candidates(rows)
    refs = references((row["instance"], usable_cost(row)) for _, row in rows)
    sums: dict[tuple[str, float], Cell] = {}
    for _, row in rows:
        name = by_key[_key(row)].name
        cell = sums.setdefault((row["instance"], float(row["time_limit"])),
                               Cell(row["instance"], float(row["time_limit"])))
        cost, ref = usable_cost(row), refs.get(row["instance"])
        got = 0.0 if cost is None or ref is None else (1.0 if cost <= ref else ref / cost)
        cell.scores[name] = cell.scores.get(name, 0.0) + got
        cell.rows[name] = cell.rows.get(name, 0) + 1
    for cell in sums.values():
        cell.scores = {n: s / cell.rows[n] for n, s in cell.scores.items()}
    cells = sorted(sums.values(), key=lambda c: (c.instance, c.budget))
    schedules = _chosen(list(by_key.values()), cells, only, min_graphs, notes)
    names = {s.name for s in schedules}
    for cell in cells:
        cell.scores = {n: v for n, v in cell.scores.items() if n in names}
        cell.rows = {n: v for n, v in cell.rows.items() if n in names}
    cells = [c for c in cells if c.scores]
    first = default if default in names else None
    if first is None:
        notes.append(f"no candidate is named {default!r}: the cross-validation has no default row")
    schedules.sort(key=lambda s: (s.name != first, s.name))
    return TrainingSet(cells, schedules, features, runs, first, notes)


def _chosen(schedules: list[Schedule], cells: list[Cell], only: Optional[Sequence[str]],
            min_graphs: int, notes: list[str]) -> list[Schedule]:
    if only is not None:
        unknown = [n for n in only if n not in {s.name for s in schedules}]
        if unknown:
            raise SelectorError(f"--candidates: {', '.join(unknown)} not among the runs' "
                                f"configurations ({', '.join(s.name for s in schedules)})")
        return [s for s in schedules if s.name in only]
    graphs = {s.name: {c.instance for c in cells if s.name in c.scores} for s in schedules}
    kept = [s for s in schedules if len(graphs[s.name]) >= min_graphs]
    dropped = [s.name for s in schedules if len(graphs[s.name]) < min_graphs]
    if dropped:
        notes.append(f"candidates left out (ran on fewer than {min_graphs} graphs): "
                     f"{', '.join(dropped)}")
    if not kept:
        raise SelectorError(f"no configuration ran on {min_graphs} graphs or more; "
                            f"name candidates with --candidates or lower --min-graphs")
    return kept
