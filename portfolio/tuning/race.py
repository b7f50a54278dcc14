"""Racing and adoption by a paired test, so that a tune does not chase noise.

Every configuration meets the pairs in the same order (seed by seed, the instances in the order
given), so after ``k`` pairs a challenger and the incumbent are compared on the same ``k``
(instance, seed) pairs, under the same references: a paired comparison. The test is Wilcoxon's
signed-rank test on the per-pair score differences (scores are cost / reference, so every
instance weighs the same), one-sided, at ``LEVEL``; pairs that tie exactly are left out
(Wilcoxon's own convention), and a comparison in which every pair ties has no verdict. SciPy
computes it (the exact distribution for small samples).

- **Dropped** (irace's and SMAC's intensification idea): a challenger is never dropped before
  ``MIN_PAIRS`` pairs, then only when the test says it is worse than the incumbent on the pairs
  both ran. A failed evaluation scores the penalty, so a configuration that finds no plan is
  dropped as soon as the test can say so.
- **Adopted**: a complete challenger replaces the incumbent only when the test says it is better.
- **Ties**: when every pair's cost ties, the anytime score (the area under the incumbent curve
  over the time limit, :func:`portfolio.report.tune_score.anytime_score`) decides, by the same
  test; a deterministic tune has none (it reads the clock), so there a tie keeps the incumbent.

What the level means for small training sets: with ``n`` pairs that differ, the smallest
one-sided p-value the test can give is ``2**-n``, so at 0.05 a verdict needs at least five pairs
that differ (:func:`pairs_needed`); with fewer the tune keeps the default, and says so when it
starts. The rule reads only results, never the clock (the tie-break reads the rows' traces, which
a deterministic tune leaves out), so a deterministic tune races the same way under any load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..report.tune_score import Pair, score
from .space import Candidate, TuneError

MIN_PAIRS = 3
"""No challenger is dropped before it ran this many pairs, whatever it scored on them."""

LEVEL = 0.05
"""The paired test's level, one-sided, for dropping a challenger and for adopting one."""

SCIPY_MISSING = ("portfolio tune needs SciPy for its paired test: pip install "
                 "'iopddl-portfolio[tune]'")


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


def pairs_needed(level: float = LEVEL) -> int:
    """The fewest pairs that differ with which the test can reach ``level`` (``2**-n < level``)."""
    return max(MIN_PAIRS, math.floor(-math.log2(level)) + 1)


def race_rule() -> dict:
    """The rule as plain data, for the run folder's ``meta.json``."""
    return {"test": "Wilcoxon signed-rank on the per-pair score differences, one-sided",
            "level": LEVEL, "min_pairs": MIN_PAIRS, "pairs_needed": pairs_needed(),
            "ties": "the anytime score, by the same test (timed tunes)"}


def few_pairs_note(pairs: int) -> Optional[str]:
    """What a training set of ``pairs`` pairs cannot show (None when it can show a difference)."""
    need = pairs_needed()
    if pairs >= need:
        return None
    return (f"{pairs} run(s) per configuration: the paired test cannot tell a configuration "
            f"better or worse at level {LEVEL:g} with fewer than {need} runs that differ, so this "
            f"tune will keep the default; give more instances or seeds (--seeds)")


def p_lower(mine: Sequence[float], theirs: Sequence[float]) -> Optional[float]:
    """The one-sided p-value of "``mine`` is lower than ``theirs``" on paired values (Wilcoxon's
    signed-rank test, ties left out), or None when every pair ties."""
    diffs = [a - b for a, b in zip(mine, theirs) if a != b]
    if not diffs:
        return None
    return float(require_scipy().wilcoxon(diffs, alternative="less").pvalue)


def require_scipy() -> Any:
    """``scipy.stats``, or :class:`TuneError` naming the pip command (checked before a tune
    starts, so a missing SciPy never stops one at its first decision)."""
    try:
        from scipy import stats
    except ImportError:
        raise TuneError(SCIPY_MISSING) from None
    return stats


def _scores(costs: Sequence[Optional[int]], pairs: Sequence[Pair],
            refs: Mapping[str, int]) -> list[float]:
    return [score(c, refs.get(p.instance)) for c, p in zip(costs, pairs)]


def beaten(challenger: Sequence[Optional[int]], incumbent: Sequence[Optional[int]],
           pairs: Sequence[Pair], refs: Mapping[str, int], level: float = LEVEL) -> bool:
    """Whether the challenger, still racing (``k = len(challenger)`` pairs, fewer than all),
    is worse than the incumbent on the same ``k`` pairs by the test at ``level``; never before
    ``MIN_PAIRS`` pairs."""
    k = len(challenger)
    if k < MIN_PAIRS or k >= len(pairs) or len(incumbent) < k:
        return False
    p = p_lower(_scores(incumbent[:k], pairs, refs), _scores(challenger, pairs, refs))
    return p is not None and p < level


def better(challenger: Sequence[Optional[int]], incumbent: Sequence[Optional[int]],
           pairs: Sequence[Pair], refs: Mapping[str, int],
           anytime: Optional[tuple[Sequence[float], Sequence[float]]] = None,
           level: float = LEVEL) -> bool:
    """Whether a complete challenger is better than the incumbent by the test at ``level``;
    when every pair's cost ties, by the same test on ``anytime`` (the challenger's and the
    incumbent's anytime scores per pair; None: the tie keeps the incumbent)."""
    p = p_lower(_scores(challenger, pairs, refs), _scores(incumbent, pairs, refs))
    if p is None and anytime is not None:
        p = p_lower(*anytime)
    return p is not None and p < level
