"""Backends whose available() raises, hangs, or answers nonsense."""

import time

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl


class _Base(Backend):
    description = "hostile available()"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, problem.min_usage_strategies.copy())


class Raises(_Base):
    name = "avail-raises"

    def available(self):
        raise RuntimeError("available exploded")


class Hangs(_Base):
    name = "avail-hangs"

    def available(self):
        while True:
            time.sleep(0.1)


class Nonsense(_Base):
    name = "avail-nonsense"

    def available(self):
        return "yes"


@hookimpl
def portfolio_backends():
    return [Raises(), Hangs(), Nonsense()]
