"""Allocates memory without end (100 MiB at a time, every page touched)."""

import time

import numpy as np

from portfolio.backend import Backend
from portfolio.hookspecs import hookimpl


class Hog(Backend):
    name = "memory-hog"
    description = "allocates without end"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies.copy(), "before the hog")
        hoard = []
        while True:
            hoard.append(np.ones(100 << 20, dtype=np.uint8))
            time.sleep(0.02)


@hookimpl
def portfolio_backends():
    return [Hog()]
