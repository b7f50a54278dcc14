"""The base of the backends that search with the kernels (``greedy``, ``localsearch``).

Light on purpose, unlike the rest of this package: a plugin imports it when the registry lists the
backends, in the runner's process before the first fork, so nothing here imports numba at load.
The kernels are imported inside :meth:`KernelBackend.solve`, in the worker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..backend import Backend, BackendMeta, Reporter, SolveResult, no_nodes_result
from ..problem import Problem

if TYPE_CHECKING:
    from .engine import Prepared


class KernelBackend(Backend):
    """A backend on the kernels' reduced view of a problem: :meth:`solve` answers a problem without
    nodes at once (the kernels draw among n >= 1 nodes), otherwise prepares the view
    (:func:`portfolio.kernels.engine.prepare`) and hands it to :meth:`solve_prepared`."""

    meta = BackendMeta(engines=("numba", "numpy"))

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        t0 = time.perf_counter()
        if (empty := no_nodes_result(problem.num_nodes)) is not None:
            return empty
        from .engine import prepare  # numba: in the worker, not when the plugin is listed

        return self.solve_prepared(prepare(problem), problem, deadline, seed, warm_start, report,
                                   t0)

    def solve_prepared(self, prep: Prepared, problem: Problem, deadline: float, seed: int,
                       warm_start: Optional[np.ndarray], report: Reporter,
                       t0: float) -> SolveResult:
        """:meth:`solve` once ``prep`` is ready; ``t0`` is ``time.perf_counter()`` when it began."""
        raise NotImplementedError
