"""Several seeds of one configuration: how sure a total is, and who wins when two are paired.

* :func:`bootstrap_interval`: a percentile bootstrap interval of the mean of per-seed totals
  (fixed resampling seed, so a report is the same every time it is drawn);
* :func:`paired`: the paired win/loss count of two configurations over the (instance, seed, repeat)
  tasks both ran: the same seed on the same instance is compared with itself, which removes the
  instance's difficulty from the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 20250101


def bootstrap_interval(values: Sequence[float], level: float = 0.95,
                       draws: int = BOOTSTRAP_DRAWS) -> Optional[tuple[float, float]]:
    """The ``level`` percentile bootstrap interval of the mean of ``values`` (None below 2 values)."""
    import numpy as np

    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = data[rng.integers(0, len(data), size=(draws, len(data)))].mean(axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


@dataclass
class Pairing:
    """``a`` against ``b`` on the tasks both ran: fewer cost wins; no plan loses to any plan."""

    a: str
    b: str
    wins: int = 0
    losses: int = 0
    ties: int = 0
    instances_won: int = 0
    instances_lost: int = 0

    @property
    def n(self) -> int:
        return self.wins + self.losses + self.ties

    def text(self) -> str:
        return (f"{self.a} vs {self.b}: {self.wins} wins, {self.losses} losses, {self.ties} ties "
                f"over {self.n} paired tasks (instance, seed)")


def _beats(x: Optional[int], y: Optional[int]) -> int:
    if x == y:
        return 0
    if y is None:
        return 1
    if x is None:
        return -1
    return 1 if x < y else -1


def paired(a, b) -> Pairing:
    """Pair the outcomes of two entries (``Entry``) by instance and (seed, repeat)."""
    result = Pairing(a.label, b.label)
    for instance, outs in a.outcomes.items():
        other = {o.trial: o.cost for o in b.outcomes.get(instance, []) if o.trial}
        score = 0
        for o in outs:
            if not o.trial or o.trial not in other:
                continue
            verdict = _beats(o.cost, other[o.trial])
            score += verdict
            if verdict > 0:
                result.wins += 1
            elif verdict < 0:
                result.losses += 1
            else:
                result.ties += 1
        result.instances_won += score > 0
        result.instances_lost += score < 0
    return result
