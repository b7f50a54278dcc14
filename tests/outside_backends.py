"""Backends from outside this project, for the tests of issue 47: one that declares ``default=True``
(which alone no longer puts an outside backend in the default set) and one whose option
declaration is invalid (shown as unavailable and never run, instead of failing every run with a
``KeyError`` on the option it reads).

Importable as a plugin module: ``PORTFOLIO_PLUGINS=outside_backends`` with this folder on PYTHONPATH.
"""

from __future__ import annotations

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, SolveResult, Status,
                               options_of)
from portfolio.backend_options import Option
from portfolio.hookspecs import hookimpl


class Outside(Backend):
    """The least-memory plan, at once; deterministic (it spends one unit)."""

    name = "outside"
    description = "test backend from another distribution that declares default=True"
    capabilities = Capabilities()
    meta = BackendMeta(default=True, deterministic=True, engines=("numpy",))

    def solve(self, problem, deadline, seed, warm_start, report):
        if report.work is not None:
            report.work.spend(1)
        return SolveResult(Status.FEASIBLE, np.asarray(problem.min_usage_strategies,
                                                       dtype=np.int64), note="least memory")


class BadDeclaration(Outside):
    """Reads an option whose declaration is invalid (its default is outside its range)."""

    name = "bad-declaration"
    description = "test backend with an invalid option declaration"
    meta = BackendMeta(default=True, options=(Option("rounds", "int", 0, low=1,
                                                     help="rounds to run"),))

    def solve(self, problem, deadline, seed, warm_start, report):
        rounds = options_of(self, report)["rounds"]
        return SolveResult(Status.FEASIBLE, np.asarray(problem.min_usage_strategies,
                                                       dtype=np.int64), note=f"{rounds} rounds")


@hookimpl
def portfolio_backends():
    return [Outside(), BadDeclaration()]
