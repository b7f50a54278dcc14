"""Racing: a challenger clearly worse than the incumbent on the first pairs is dropped before it
costs a full evaluation (irace's and SMAC's intensification idea, in its simplest paired form).

Every configuration meets the pairs in the same order (seed by seed, the instances in the order
given), so after ``k`` pairs a challenger and the incumbent are compared on the same ``k``
(instance, seed) pairs, under the same references. The challenger is dropped when its mean score
there exceeds the incumbent's by more than ``MARGIN`` (relative); a failed evaluation scores the
penalty, so a configuration that finds no plan is dropped at its first pair. The rule reads only
results, never the clock, so a deterministic tune races the same way under any load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from ..report.tune_score import Pair, mean_score
from .space import Candidate

MARGIN = 0.01
"""How much worse (relative, on the pairs shared so far) a challenger may be before it is dropped:
1 %. Timed runs are noisy, so a challenger within noise of the incumbent stays in the race; one
that finds no plan (the penalty) or a plan 1 % dearer on the same pairs is dropped. (On the
target case, B and G at 3 s, the default portfolio's runs reach the best known cost on every
seed, docs/benchmarks/tune.md, so anything dropped there was dearer than the best known.)"""


@dataclass
class Contender:
    """A configuration in the race: its costs on the pairs so far (None: no usable plan)."""

    number: int
    candidate: Candidate
    raw: dict
    costs: list = field(default_factory=list)
    state: str = "running"
    """``running``, ``complete`` (every pair) or ``pruned`` (dropped by the racing rule)."""

    @property
    def name(self) -> str:
        return trial_name(self.number)

    @property
    def finished(self) -> bool:
        return self.state != "running"


def trial_name(number: int) -> str:
    """``t0007``: a trial's configuration name in the rows."""
    return f"t{number:04d}"


def beaten(challenger: Sequence[Optional[int]], incumbent: Sequence[Optional[int]],
           pairs: Sequence[Pair], refs: Mapping[str, int], margin: float = MARGIN) -> bool:
    """Whether the challenger's first ``k`` costs are clearly worse than the incumbent's on the
    same ``k`` pairs (``k = len(challenger)``, less than every pair)."""
    k = len(challenger)
    if k == 0 or k >= len(pairs) or len(incumbent) < k:
        return False
    mine = mean_score(challenger, pairs, refs)
    theirs = mean_score(list(incumbent[:k]), pairs, refs)
    assert mine is not None and theirs is not None
    return mine > theirs * (1.0 + margin)


def better(challenger: Sequence[Optional[int]], incumbent: Sequence[Optional[int]],
           pairs: Sequence[Pair], refs: Mapping[str, int]) -> bool:
    """Whether a complete challenger beats the incumbent (strictly: ties keep the incumbent, the
    default first of all)."""
    mine = mean_score(challenger, pairs, refs)
    theirs = mean_score(incumbent, pairs, refs)
    return mine is not None and theirs is not None and mine < theirs
