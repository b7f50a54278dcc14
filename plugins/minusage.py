"""Baseline backend: every node takes its least-memory allowed strategy.

On every contest instance this plan is feasible (the limit is about 1.1 x its peak), so it is the safety
net that guarantees the portfolio an answer within milliseconds.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from portfolio.backend import Backend, Capabilities, Reporter, SolveResult, Status
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem


class MinUsageBackend(Backend):
    name = "minusage"
    description = "Least-memory allowed strategy per node: instant, feasible on contest instances"
    capabilities = Capabilities()  # the safety net: always the original problem

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        plan = np.array(problem.min_usage_strategies, dtype=np.int64)
        if not evaluate(problem, plan).feasible:
            return SolveResult(Status.NO_SOLUTION, note="the min-usage plan exceeds the memory limit")
        report(plan, "min-usage plan")
        return SolveResult(Status.FEASIBLE, plan)


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [MinUsageBackend()]
