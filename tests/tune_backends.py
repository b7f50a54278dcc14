"""Test backends with options, for portfolio tune's tests (``PORTFOLIO_PLUGINS=tune_backends``
with this folder on PYTHONPATH; test-only, so they run only when named).

``knob`` improves the least-memory plan by single-node moves until none helps, unless its option
``worse`` is on: then it reports the least-memory plan itself, which on the tests' generated
instances costs clearly more (twice to seventeen times), so racing has a configuration made to
be worse. ``level`` changes nothing but gives the space a numeric
dimension; ``chatty`` is declared ``changes_plan=False`` and must not be tuned. Deterministic
(counts one work unit a plan, reads no clock), so a deterministic tune can use it.
"""

from __future__ import annotations

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, SolveResult, Status,
                               options_of)
from portfolio.backend_options import Option
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl


class Knob(Backend):
    name = "knob"
    description = "test backend: a 1-opt descent, or clearly worse with worse=true"
    capabilities = Capabilities()
    meta = BackendMeta(test_only=True, deterministic=True, options=(
        Option("worse", "bool", False, "report the least-memory plan instead of the optimum"),
        Option("level", "int", 3, "does nothing (a numeric dimension)", low=1, high=8),
        Option("chatty", "bool", False, "does nothing (not tuned)", changes_plan=False)))

    def solve(self, problem, deadline, seed, warm_start, report):
        options = options_of(self, report)
        if options["worse"]:
            plan = np.asarray(problem.min_usage_strategies, dtype=np.int64)
            report(plan, "least memory")
            return SolveResult(Status.FEASIBLE, plan)
        plan = np.asarray(problem.min_usage_strategies, dtype=np.int64).copy()
        cost = evaluate(problem, plan).cost
        improved = True
        while improved:
            improved = False
            for node in range(problem.num_nodes):
                for choice in range(int(problem.strategy_counts[node])):
                    if report.work is not None and not report.work.spend(1):
                        report(plan, "descent (work spent)")
                        return SolveResult(Status.FEASIBLE, plan)
                    trial = plan.copy()
                    trial[node] = choice
                    ev = evaluate(problem, trial)
                    if ev.feasible and ev.cost < cost:
                        plan, cost, improved = trial, ev.cost, True
        report(plan, "descent")
        return SolveResult(Status.FEASIBLE, plan)


@hookimpl
def portfolio_backends():
    return [Knob()]
