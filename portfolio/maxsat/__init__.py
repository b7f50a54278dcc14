"""The MaxSAT engine that the ``maxsat`` backend runs (``plugins/maxsat.py``, its thin backend), an
:class:`~portfolio.exact.ExactEngine` for the exact driver. Bottom up, one job each:

* :mod:`.diffusion` - integer min-sum diffusion: an exact reparametrisation of the folded two-node
  tables that raises the constant RC2 need not find;
* :mod:`.encoding` - the weighted partial CNF of one Problem, built from the shared exact model
  (soft costs, linking, memory rows as MDD clauses, lazy by default), every weight an exact int;
* :mod:`.engine` - :class:`MaxSatEngine`: the size estimate and budget, RC2 (stratified, with its
  counted oracle calls in deterministic mode), lazy rows added as models break them, the bound.

Imports run down that list, never back up. Everything is light at import (numpy and the library's
core): python-sat is imported inside the functions that encode and solve, in the worker. The names
below are the ones the backend, the tests and the benchmarks use.
"""

from .encoding import BUDGET, Encoding, Infeasible, OutOfTime, OutOfWork, TooBig, encode
from .engine import MaxSatEngine

__all__ = ["BUDGET", "Encoding", "Infeasible", "MaxSatEngine", "OutOfTime", "OutOfWork", "TooBig",
           "encode"]
