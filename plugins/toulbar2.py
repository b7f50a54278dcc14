"""The ``toulbar2`` backend: the 2025 contest winner's penalty method, made better with what the
project has (exact mode on small instances, Lagrangian-priced memory, every plan repaired and
polished by the kernels). The engine is the library's :mod:`portfolio.toulbar2`
(:class:`~portfolio.toulbar2.PenaltySearch`); this module is its backend: metadata, its options,
the requirement check, and ``solve`` handed to the engine (timed, or deterministic when
``report.work`` is set; the warm start is its first incumbent and toulbar2's initial solution).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult,
                               options_of)
from portfolio.backend_options import TUNED_SHORT, TUNED_SHORT_WHY, Budgeted, Option
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem
from portfolio.toulbar2 import (DEFAULT_RULE, FIRST_LIMIT, LIMIT_STEP, VECTORS, WARM_FOLLOW_MODES,
                                PenaltySearch, Settings, penalised_child)

REQUIREMENT = "pytoulbar2>=1.4"
"""The pip requirement that brings toulbar2 (also in pyproject.toml)."""

WARM_FOLLOW_SHORT = 120.0
"""Budgets up to this many seconds let only the first round's last solve follow the warm start
(``last``); longer ones let the whole round follow it (``round``). Measured on A, K, M, N, S at
60 s and at the contest limits, three seeds alternated: docs/benchmarks/options.md."""

OPTIONS = (
    Option("warm_follow", "choice", "round", choices=WARM_FOLLOW_MODES,
           by_budget=(Budgeted(TUNED_SHORT, "none", TUNED_SHORT_WHY),
                      Budgeted(WARM_FOLLOW_SHORT, "last", "docs/benchmarks/options.md")),
           help="which first-round solves start from the warm start's values: every one "
                "(round), the round's last (last) or none"),
    Option("first_limit", "float", FIRST_LIMIT, low=1.0, high=120.0,
           by_budget=(Budgeted(TUNED_SHORT, 3.42, TUNED_SHORT_WHY),), unit="seconds",
           help="seconds of each toulbar2 search in the first round"),
    Option("limit_step", "float", LIMIT_STEP, low=0.0, high=30.0,
           by_budget=(Budgeted(TUNED_SHORT, 4.41, TUNED_SHORT_WHY),), unit="seconds",
           help="seconds a round adds to the search limit (at most 20 s a search)"),
    Option("vectors", "int", VECTORS, low=1, high=16,
           by_budget=(Budgeted(TUNED_SHORT, 1, TUNED_SHORT_WHY),),
           help="weight vectors (penalised solves) a round"),
    Option("exact", "bool", True,
           help="first try to prove small reduced instances optimal with toulbar2's exact mode"),
)


class Toulbar2Backend(Backend):
    name = "toulbar2"
    description = ("The contest winner's penalty method: whole penalised networks solved by toulbar2 "
                   "with Lagrangian-priced memory, plans repaired and polished; exact on small instances")
    capabilities = Capabilities(exact=True, anytime=True, warm_start=True, reduced=True,
                                randomized=True)
    meta = BackendMeta(engines=("pytoulbar2", "numba", "numpy"), requires=("pytoulbar2",),
                       requirement=REQUIREMENT, deterministic=True, work_share=3.0,
                       options=OPTIONS)
    # Deterministic mode (report.work): backtrack limits and counted work units instead of
    # seconds (portfolio/toulbar2/pace.py); a warm start is toulbar2's initial solution.
    # In the default portfolio since issue 21's measurement (docs/benchmarks/toulbar2.md, "Default
    # portfolio": N's worst run at 60 s 0.877 -> 0.965 with it).
    rule = DEFAULT_RULE   # the weight rule (tests set "nodes": the rule used where prices fail)
    child: Callable = staticmethod(penalised_child)

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        engine = PenaltySearch(Settings.of(options_of(self, report)), self.rule, self.child)
        return engine.solve(problem, deadline, seed, warm_start, report)


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [Toulbar2Backend()]
