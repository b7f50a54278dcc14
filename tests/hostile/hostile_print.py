"""Prints to stdout in every way a backend can: print(), fd 1, and a child process."""

import os
import subprocess

from portfolio.backend import Backend, SolveResult, Status
from portfolio.hookspecs import hookimpl


class Printer(Backend):
    name = "printer"
    description = "prints to stdout"

    def prepare(self):
        print("LEAK from prepare")

    def solve(self, problem, deadline, seed, warm_start, report):
        print("LEAK from print")
        print("LEAK unflushed", end="")
        os.write(1, b"LEAK from fd 1\n")
        subprocess.run(["echo", "LEAK from a child"], check=False)
        return SolveResult(Status.FEASIBLE, problem.min_usage_strategies.copy())


@hookimpl
def portfolio_backends():
    return [Printer()]
