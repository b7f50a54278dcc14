"""What the exact engines (``cpsat``, ``maxsat``, ...) share, bottom up:

* :mod:`.meter` - deterministic mode's :class:`WorkLimit` (what one engine call may spend, over
  the backend's :class:`portfolio.work.Meter`);
* :mod:`.contract` - the engine contract: :class:`ModelSize`, :class:`ExactOutcome`,
  :class:`ExactEngine` (what an engine estimates, answers and supplies);
* :mod:`.model` - the engine-agnostic folded model of a Problem (:func:`build_exact_model`:
  domains, factors, memory) that every encoding starts from;
* :mod:`.lns` - large-neighbourhood search: windows as small Problems and the loop;
* :mod:`.driver` - the full-model-or-LNS driver (:func:`solve_with_engine`) and the base of the
  exact backends (:class:`ExactBackend`).

Inside the package imports run down that list (``driver`` uses ``lns`` and ``contract``, ``lns``
uses ``contract``, ``contract`` uses ``meter``; ``model`` stands alone). Everything here is light
at import (numpy and the library's core); the presolve routines and the search kernels (numba) are
imported inside the functions that use them, in the worker. The names below are the ones plugins use.
"""

from .contract import ExactEngine, ExactOutcome, ModelSize, OutcomeStatus, full_model_or_outcome
from .meter import WorkLimit
from .driver import BestPlan, ExactBackend, solve_with_engine
from .model import ExactModel, Factor, MemoryPart, build_exact_model

__all__ = ["BestPlan", "ExactBackend", "ExactEngine", "ExactModel", "ExactOutcome", "Factor",
           "MemoryPart", "ModelSize", "OutcomeStatus", "WorkLimit", "build_exact_model",
           "full_model_or_outcome",
           "solve_with_engine"]
