"""The toulbar2 engine's settings: the ``toulbar2`` backend's declared options
(``plugins/toulbar2.py``) and their defaults, never environment variables, so that they are
recorded with every result. The engine's fixed schedule and its work units are :mod:`.pace`'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VECTORS = 3
"""Weight vectors a round (K), solved one after another: each solve's upper bound comes from the
plans of the ones before it. (Solving a round's vectors at once, P children on CPU-time limits,
measured worse at 60 s on S, 0.9523 against 0.9586, and N, 0.970 against 1.012, and was removed
in issue 41: docs/benchmarks/toulbar2.md, "Solves of a round at once".)"""

FIRST_LIMIT, LIMIT_STEP = 10.0, 2.0
"""Wall-clock seconds per toulbar2 search: the first round's and the growth per round, up to
:attr:`.pace.Schedule.limit_max` (the original starts at 12 s). Measured on N at 60 s
(docs/benchmarks/toulbar2.md, one run each on a busy machine): first 2 s 0.878, 4 s 0.905, 10 s
0.948; a shorter solve is not worth its posting. Deterministic mode reads them as work units
(:data:`.pace.UNITS_PER_SECOND`)."""

RULES = ("prices", "nodes")
"""Weight rules (issue 21): ``prices`` multiplies the Lagrangian priced usage (:mod:`.prices`) by
per-node bracketed weights; ``nodes`` is the original's per-node bracketing of plain usage above
the least, the rule when prices cannot be had (the kernels not compiled)."""

DEFAULT_RULE = "prices"

WARM_FOLLOW_MODES = ("round", "last", "none")
"""Which solves of the first round follow the warm start's values: every one (``round``), the
round's last (``last``) or none."""


@dataclass(frozen=True)
class Settings:
    """The engine's settings, the ``toulbar2`` backend's options: which first-round solves follow
    the warm start, the first round's solve limit and its growth per round (wall-clock seconds),
    weight vectors a round, and whether the exact mode runs first on small instances."""

    warm_follow: str = "round"
    first_limit: float = FIRST_LIMIT
    limit_step: float = LIMIT_STEP
    vectors: int = VECTORS
    exact: bool = True

    @classmethod
    def of(cls, values: dict) -> "Settings":
        """The settings from a backend's resolved options (names it does not know are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def follows_warm(self, index: int, vectors: int) -> bool:
        """Whether the first round's solve number ``index`` (of ``vectors``) follows the warm
        start (when there is one)."""
        return self.warm_follow == "round" or (self.warm_follow == "last" and index == vectors - 1)
