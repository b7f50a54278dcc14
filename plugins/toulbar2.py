"""The ``toulbar2`` backend: the 2025 contest winner's penalty method, made better with what the
project has (exact mode on small instances, Lagrangian-priced memory, every plan repaired and
polished by the kernels). The engine is the library's :mod:`portfolio.toulbar2`
(:class:`~portfolio.toulbar2.PenaltySearch`); this module is its backend: metadata, the
requirement check, and ``solve`` handed to the engine (timed, or deterministic when
``report.work`` is set; the warm start is its first incumbent and toulbar2's initial solution).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from portfolio.backend import Backend, BackendMeta, Capabilities, Reporter, SolveResult
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem
from portfolio.toulbar2 import DEFAULT_RULE, PARALLEL, VECTORS, PenaltySearch, penalised_child

REQUIREMENT = "pytoulbar2>=1.4"
"""The pip requirement that brings toulbar2 (also in pyproject.toml)."""


class Toulbar2Backend(Backend):
    name = "toulbar2"
    description = ("The contest winner's penalty method: whole penalised networks solved by toulbar2 "
                   "with Lagrangian-priced memory, plans repaired and polished; exact on small instances")
    capabilities = Capabilities(exact=True, anytime=True, warm_start=True, reduced=True,
                                randomized=True)
    meta = BackendMeta(engines=("pytoulbar2", "numba", "numpy"), requires=("pytoulbar2",),
                       requirement=REQUIREMENT, deterministic=True,
                       work_share=3.0)
    # Deterministic mode (report.work): backtrack limits and counted work units instead of
    # seconds (portfolio/toulbar2/pace.py); a warm start is toulbar2's initial solution.
    # In the default portfolio since issue 21's measurement (docs/benchmarks/toulbar2.md, "Default
    # portfolio": N's worst run at 60 s 0.877 -> 0.965 with it).
    vectors = VECTORS
    rule = DEFAULT_RULE
    parallel = PARALLEL   # solves at once in a timed run (portfolio/toulbar2/search.py, PARALLEL)
    child: Callable = staticmethod(penalised_child)

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        engine = PenaltySearch(self.vectors, self.rule, self.child, self.parallel)
        return engine.solve(problem, deadline, seed, warm_start, report)


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [Toulbar2Backend()]
