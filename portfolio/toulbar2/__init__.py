"""The toulbar2 engine: the ``toulbar2`` backend's penalty search and exact mode, and the priced
lower bound that the ``bound`` backend runs as its late phase. Bottom up, one job each:

* :mod:`.child` - every toulbar2 solve in a forked child, stopped at its limit, killed after;
* :mod:`.pace` - the engine's decisions by the clock (timed) or by work units (deterministic mode:
  backtrack limits, subgradient steps, units calibrated per count), one :class:`~.pace.Pace`
  protocol for both;
* :mod:`.cfn` - the one place that opens, posts and searches a pytoulbar2 network (in the child);
* :mod:`.scaling` - integer scaling of a network, or its refusal (never a wrap);
* :mod:`.network` - the penalised network (plain numpy); :mod:`.weights` - its per-node weights
  and their brackets; :mod:`.prices` - the Lagrangian-priced usage that the weights multiply;
* :mod:`.penalty` - one penalised solve in the child (limited discrepancy search);
* :mod:`.exact` - the exact mode: the constrained network (a knapsack per time point), proofs;
* :mod:`.bound` - toulbar2's certified bound of the Lagrangian-priced problem;
* :mod:`.settings` - the backend's options (:class:`Settings`) and their defaults;
* :mod:`.rounds` - the penalty search's rounds of penalised solves, each plan repaired and
  polished by the kernels;
* :mod:`.search` - :class:`PenaltySearch`, the engine's solve: exact mode, then the rounds.

Imports run down that list, never back up. Everything is light at import (numpy and the library's
core): pytoulbar2 is imported in the children only, the kernels (numba) inside the functions that
use them, in the worker. The names below are the ones plugins use.
"""

from .bound import PricedOutcome, priced_solve, priced_value
from .penalty import penalised_child
from .search import PenaltySearch
from .settings import (DEFAULT_RULE, FIRST_LIMIT, LIMIT_STEP, VECTORS, WARM_FOLLOW_MODES,
                       Settings)

__all__ = ["DEFAULT_RULE", "FIRST_LIMIT", "LIMIT_STEP", "PenaltySearch", "PricedOutcome",
           "Settings", "VECTORS", "WARM_FOLLOW_MODES", "penalised_child", "priced_solve",
           "priced_value"]
