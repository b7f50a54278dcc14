"""What ``portfolio tune`` minimises: the mean over (instance, seed) pairs of ``cost / reference``.

The reference of an instance is the contest's best known cost when the instance is a contest
benchmark (:mod:`portfolio.data.contest`), else the best cost any evaluation of the tune found on
it, whichever is lower; so every instance weighs the same whatever its cost's magnitude, and a
score of 1.02 reads "2 % above the best known". An evaluation without a usable plan (no plan, a
forbidden one, an infeasibility claim, late, failed, crashed) scores ``PENALTY``, and no score
exceeds it: one failure is clearly worse than any plan, but does not drown the other pairs.

References move as evaluations come in, so scores are recomputed from the rows whenever a
decision is made (racing compares a challenger with the incumbent on the same pairs, under the
same references); the costs behind them are what is stored.

Here, in ``report``, because both sides need it: the tuner (:mod:`portfolio.tuning`) races and
chooses with it, and ``portfolio report`` recomputes a tune's figures from its files alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

PENALTY = 10.0
"""The score of an evaluation without a usable plan (ten times the reference)."""

FORBIDDEN = 10 ** 18
"""Costs at or above this chose a forbidden entry."""

GOOD_STATUSES = ("optimal", "feasible")


@dataclass(frozen=True)
class Pair:
    """One (instance, seed) on which every configuration is evaluated."""

    instance: str
    path: str
    seed: int

    @property
    def label(self) -> str:
        return f"{self.instance} s{self.seed}"


def usable_cost(row: Optional[Mapping]) -> Optional[int]:
    """The row's cost when it is a usable plan (verified, feasible, on time, not forbidden, and
    for a deterministic row the deterministic answer: ``complete`` False means a safety net or a
    lost worker made its cost depend on the machine's load, which a tune must not race on)."""
    if row is None or row.get("status") not in GOOD_STATUSES or not row.get("feasible"):
        return None
    if row.get("complete") is False:
        return None
    cost = row.get("cost")
    if cost is None or cost >= FORBIDDEN:
        return None
    return int(cost)


def best_known(instance: str) -> Optional[int]:
    """The contest's best known cost of a contest benchmark, else None."""
    from ..data import contest

    bench = contest.match(instance)
    return None if bench is None else int(bench.best_known_cost)


def references(costs: Iterable[tuple[str, Optional[int]]]) -> dict[str, int]:
    """Each instance's reference from ``(instance, usable cost or None)`` items."""
    seen: dict[str, int] = {}
    for instance, cost in costs:
        if instance not in seen:
            known = best_known(instance)
            if known is not None:
                seen[instance] = known
        if cost is not None and (instance not in seen or cost < seen[instance]):
            seen[instance] = cost
    return seen


def score(cost: Optional[int], reference: Optional[int]) -> float:
    """One evaluation's score (1.0: the reference; ``PENALTY`` without a usable plan)."""
    if cost is None or reference is None:
        return PENALTY
    if reference <= 0:
        return 1.0 if cost <= reference else PENALTY
    return min(cost / reference, PENALTY)


def mean_score(costs: Sequence[Optional[int]], pairs: Sequence[Pair],
               refs: Mapping[str, int]) -> Optional[float]:
    """The mean score of the costs of the first ``len(costs)`` pairs (None: no pair yet)."""
    if not costs:
        return None
    return sum(score(c, refs.get(p.instance)) for c, p in zip(costs, pairs)) / len(costs)


def anytime_score(row: Optional[Mapping], reference: Optional[int]) -> float:
    """How early an evaluation held good plans: its primal integral against ``reference`` over its
    time limit, divided by the limit (:func:`.anytime.primal_integral`: the area under the primal
    gap of the incumbent curve), in [0, 1]; 1 for a failed or missing row. A tune breaks a tie of
    costs with it."""
    from .anytime import primal_integral

    if row is None or reference is None or not row.get("time_limit"):
        return 1.0
    area = primal_integral(dict(row), int(reference))
    return 1.0 if area is None else min(1.0, area / float(row["time_limit"]))
