"""The CP-SAT engine that the ``cpsat`` backend runs (``plugins/cpsat.py``, its thin backend), an
:class:`~portfolio.exact.ExactEngine` for the exact driver. Bottom up, one job each:

* :mod:`.model` - the CP-SAT model of one Problem, built from the shared exact model: node and
  entry Booleans, marginal linking, the memory encodings, lazy memory rows, complete hints;
* :mod:`.engine` - :class:`CpSatEngine`: the size estimate and budget, the measured parameters,
  one solve (lazy rounds, the bound, deterministic mode's work units).

``engine`` imports ``model``, never the other way. Everything is light at import (numpy and the
library's core): OR-tools is imported inside the functions that build and solve, in the worker.
The names below are the ones the backend, the tests and the benchmarks use.
"""

from .engine import (BUDGET, LINKINGS, MEMORY_ENCODINGS, CpSatEngine, default_parameters,
                     estimate_size)
from .model import CpSatModel, LazyRows, build_model

__all__ = ["BUDGET", "CpSatEngine", "CpSatModel", "LINKINGS", "LazyRows", "MEMORY_ENCODINGS",
           "build_model", "default_parameters", "estimate_size"]
