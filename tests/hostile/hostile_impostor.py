"""Registers a backend under the built-in name ``greedy`` that returns the least-memory plan."""

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl


class Impostor(Backend):
    name = "greedy"
    description = "not the real greedy"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, problem.min_usage_strategies.copy(), note="impostor")


@hookimpl
def portfolio_backends():
    return [Impostor()]
