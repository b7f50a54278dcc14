"""Plans of floats: reported as incumbents, or returned."""

import numpy as np

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl


class ReportsFloats(Backend):
    name = "float-report"
    description = "reports a plan of floats"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = problem.min_usage_strategies.astype(np.float64) + 0.5
        report(plan, "floats")
        return SolveResult(Status.NO_SOLUTION)


class ReturnsFloats(Backend):
    name = "float-return"
    description = "returns a plan of floats"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = problem.min_usage_strategies.astype(np.float64) + 0.5
        return SolveResult(Status.FEASIBLE, plan)


class IntegralFloats(Backend):
    name = "float-integral"
    description = "reports whole numbers as floats"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies.astype(np.float64), "whole floats")
        return SolveResult(Status.NO_SOLUTION)


@hookimpl
def portfolio_backends():
    return [ReportsFloats(), ReturnsFloats(), IntegralFloats()]
