"""Facts about the ASPLOS/EuroSys 2025 IOPDDL contest, shipped with the package as data.

Two CSV files beside this module (copies of the project's reference tables):

* ``contest_best_known.csv``: per benchmark (A..Y) its size, the contest timeout, the best known cost
  and who reached it, the 1st- and 3rd-place and XLA costs, and an approximate lower bound rounded to
  three significant digits.
* ``contest_results.csv``: every team's final cost on every benchmark (20 teams and the XLA baseline;
  an empty cell means the team gave no answer). Costs of 10**18 and above come from plans that chose
  forbidden (infinite-cost) entries; they are still scored as written, as the organisers did.

Official scoring (verified against the organisers' totals: 18.74 / 13.84 / 13.19 / 9.31, XLA 2.18):
on each of the 20 *private* benchmarks a team scores ``min_team_cost / its_cost`` (0 without an answer),
where the minimum is over the teams only; XLA is a baseline that is scored but never sets the minimum.
A, G, M, S and Y were public and did not count.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Optional

PUBLIC = ("A", "G", "M", "S", "Y")
"""Benchmarks released before the contest; the official score counts only the other twenty."""
BASELINE = "XLA"
"""The reference row that is scored but does not set the per-benchmark minimum."""

_NAME = re.compile(r"asplos-2025-iopddl-([A-Y])(?![A-Za-z0-9])", re.IGNORECASE)


@dataclass(frozen=True)
class Benchmark:
    """One contest benchmark (a row of ``contest_best_known.csv``)."""

    letter: str
    name: str
    nodes: int
    edges: int
    avg_strategies: float
    timeout: float
    best_known_cost: int
    best_known_by: str
    first_place_cost: Optional[int]
    third_place_cost: Optional[int]
    xla_cost: Optional[int]
    lower_bound_approx: Optional[float]   # three significant digits, as published
    public: bool

    @property
    def lower_bound(self) -> Optional[int]:
        """The approximate lower bound, capped at the best known cost (rounding can push it above)."""
        if self.lower_bound_approx is None:
            return None
        return min(int(round(self.lower_bound_approx)), self.best_known_cost)


def _int(text: str) -> Optional[int]:
    text = text.strip()
    return int(text) if text else None


def _read(filename: str) -> list[dict[str, str]]:
    with resources.files("portfolio.data").joinpath(filename).open("r", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@lru_cache(maxsize=1)
def benchmarks() -> dict[str, Benchmark]:
    """All 25 benchmarks by letter."""
    out = {}
    for row in _read("contest_best_known.csv"):
        letter = row["benchmark"].rsplit("-", 1)[-1]
        lb = row["lower_bound_3sig"].strip()
        out[letter] = Benchmark(
            letter=letter,
            name=row["benchmark"],
            nodes=int(row["nodes"]),
            edges=int(row["edges"]),
            avg_strategies=float(row["avg_strategies"]),
            timeout=float(row["timeout_s"]),
            best_known_cost=int(row["best_known_cost"]),
            best_known_by=row["best_known_by"],
            first_place_cost=_int(row["first_place_cost"]),
            third_place_cost=_int(row["third_place_cost"]),
            xla_cost=_int(row["xla_cost"]),
            lower_bound_approx=float(lb) if lb else None,
            public=letter in PUBLIC,
        )
    return out


@lru_cache(maxsize=1)
def team_costs() -> dict[str, dict[str, Optional[int]]]:
    """Final cost of every team (and ``XLA``) on every benchmark: ``{team: {letter: cost or None}}``."""
    out: dict[str, dict[str, Optional[int]]] = {}
    for row in _read("contest_results.csv"):
        team = row.pop("TEAM #").strip()
        out[team] = {letter: _int(value) for letter, value in row.items()}
    return out


def match(instance: str) -> Optional[Benchmark]:
    """The contest benchmark an instance name or path refers to (``...asplos-2025-iopddl-K.json.gz``)."""
    found = _NAME.findall(str(instance).rsplit("/", 1)[-1])
    if not found:
        return None
    return benchmarks().get(found[-1].upper())


def timeout_for(instance: str) -> Optional[float]:
    """The contest's time limit for an instance, or None when it is not a contest benchmark."""
    bench = match(instance)
    return None if bench is None else bench.timeout
