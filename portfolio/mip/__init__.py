"""The MIP engine that the ``mip`` backend runs (``plugins/mip.py``, its thin backend): HiGHS
through ``highspy`` on the standard ILP, an :class:`~portfolio.exact.ExactEngine` for the exact
driver. Bottom up, one job each:

* :mod:`.memory` - the memory rows: maximal live sets, one row per distinct row, lazy batches;
* :mod:`.model` - the ILP of one Problem as arrays: strategy and entry columns, the edge linkings,
  the exact offset and power-of-two scale of the objective, complete MIP starts;
* :mod:`.pace` - deterministic mode's work units from HiGHS's counts (callbacks, nodes, root size,
  simplex iterations);
* :mod:`.engine` - :class:`MipEngine`: the size estimate and budget, one solve (HiGHS's options,
  the improving-solution callback, lazy rounds, the safe bound, deterministic mode's work units).

Imports run down that list. Everything is light at import (numpy and the library's core): highspy
is imported inside the functions that build and solve, in the worker.
"""

from .engine import BUDGET, PRESOLVE, MipEngine, estimate_size
from .memory import MemoryRows, maximal_points
from .model import LINKINGS, MEMORY_MODES, MipModel, build_mip

__all__ = ["BUDGET", "LINKINGS", "MEMORY_MODES", "MemoryRows", "MipEngine", "MipModel", "PRESOLVE",
           "build_mip", "estimate_size", "maximal_points"]
