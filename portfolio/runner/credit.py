"""Who made the incumbent better: the credit the adaptive rule (:mod:`.focus`) moves CPU by.

Why not "whoever posted the improvement": backends cooperate through the incumbent's board. On S
the local search posts most improvements of the default portfolio's incumbent, many of them
polishing plans another backend found and it took from the board; crediting the poster would move
the cores toward the polisher and away from the backend whose plans it polishes
(docs/benchmarks/runner.md, "The adaptive rule"). So each plan gets a lineage from what the
parent sees (no backend has to say anything):

- its *parent* is the nearer, in nodes whose strategy differs, of the poster's own previous plan
  and the incumbent it could read when it posted (the board's plan: only for a backend that reads
  it, ``warm_start``; ties go to its own plan);
- its *finder* (the backend credited with the region of plans it lies in) is the parent's finder,
  unless the parent is more than ``NEW_REGION`` of the nodes away, has no finder, or its finder
  cannot own one (the safety net, the warm start, the fallback: ``can_own``): then the poster
  found a region of its own.

A plan that lowers the incumbent earns ``ln((old + 1) / (new + 1))`` (scale-free: a 1 % gain is
worth the same on every graph). When the poster is its finder, all of it is the poster's; when it
polished another's region, ``POLISH_SHARE`` is the poster's and the rest the finder's. The book
only counts; what the counts do to the cores is :mod:`.focus`'s. Deterministic mode feeds it the
plans settled at each exchange point in the point's fixed order, so its counts are the same in
every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

NEW_REGION = 0.1
"""A plan whose parent differs from it in more than this share of the nodes starts a region of its
poster's own. Measured on S (60 s, the default portfolio): a local-search report moved 18 to 860
of 28,526 nodes from its previous one, an exact backend's LNS window about 470 from the plan it
took, toulbar2's first plan 2,775 from the greedy plan it started from, and a local-search kick
into a new basin 10,721."""

POLISH_SHARE = 0.5
"""The poster's share of a gain made in another backend's region (the rest is the finder's)."""


@dataclass
class _Line:
    """A run's latest plan and the finder of its region."""

    plan: np.ndarray
    finder: Optional[str]


def gain(old: int, new: int) -> float:
    """The worth of lowering the incumbent from ``old`` to ``new`` (costs are at least 0)."""
    if new >= old:
        return 0.0
    return math.log((float(old) + 1.0) / (float(new) + 1.0))


def differ(a: np.ndarray, b: Optional[np.ndarray]) -> float:
    """The nodes whose strategy differs between two plans (infinite when ``b`` is missing or of
    another length)."""
    if b is None or len(a) != len(b):
        return math.inf
    return float(np.count_nonzero(a != b))


class CreditBook:
    """The counts above, per run name. ``can_own(name)``: whether run ``name`` may be a finder
    (the runs the rule may judge, see :mod:`.focus`)."""

    def __init__(self, can_own: Callable[[str], bool]) -> None:
        self._can_own = can_own
        self._lines: dict[str, _Line] = {}
        self._incumbent: Optional[tuple[int, Optional[str]]] = None   # (cost, finder) of ours
        self._credit: dict[str, float] = {}
        self._total: dict[str, float] = {}

    def finder_of(self, cost: int) -> Optional[str]:
        """The finder of the incumbent of ``cost`` when the book made it, else None (a plan from
        outside the book: the warm start, the fallback, a cluster's shard)."""
        if self._incumbent is not None and self._incumbent[0] == cost:
            return self._incumbent[1]
        return None

    def posted(self, name: str, plan: np.ndarray, cost: int,
               incumbent: Optional[tuple[np.ndarray, int]], reads_board: bool) -> Optional[str]:
        """A verified plan of run ``name`` of ``cost``; ``incumbent``: the verified incumbent
        (plan, cost) when it arrived, before it was taken; ``reads_board``: whether the run reads
        the incumbent. Returns the plan's finder."""
        plan = np.asarray(plan, dtype=np.int64)
        own = self._lines.get(name)
        parent_finder, distance = (None, math.inf) if own is None else (
            own.finder, differ(plan, own.plan))
        if reads_board and incumbent is not None:
            from_board = differ(plan, incumbent[0])
            if from_board < distance:
                parent_finder, distance = self.finder_of(incumbent[1]), from_board
        finder = parent_finder
        if (finder is None or not self._can_own(finder)
                or distance > NEW_REGION * max(1, len(plan))):
            finder = name
        self._lines[name] = _Line(plan, finder)
        if incumbent is None or cost < incumbent[1]:
            worth = 0.0 if incumbent is None else gain(incumbent[1], cost)
            self._incumbent = (cost, finder)
            if finder == name or not self._can_own(finder):
                self._add(name, worth)
            else:
                self._add(name, POLISH_SHARE * worth)
                self._add(finder, (1.0 - POLISH_SHARE) * worth)
        return finder

    def _add(self, name: str, worth: float) -> None:
        if worth > 0:
            self._credit[name] = self._credit.get(name, 0.0) + worth
            self._total[name] = self._total.get(name, 0.0) + worth

    def take(self) -> dict[str, float]:
        """The credit earned since the last call, per run name (then cleared)."""
        out, self._credit = self._credit, {}
        return out

    def totals(self) -> dict[str, float]:
        """The credit earned over the whole run, per run name."""
        return dict(self._total)
