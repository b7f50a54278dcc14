"""Baseline backend: least-memory plans, from plain numpy (nothing to compile), in two steps.

First the least-memory allowed strategy per node, reported at once: on every contest instance this
plan fits in memory (the limit is about 1.1 x its peak), but it may pick forbidden edge entries.
Then :func:`portfolio.runner.fallback.safe_plan`: the least-memory strategy among those surviving
arc consistency on forbidden entries, repaired until no forbidden entry is left where the repair
can find one, reported when it is cheaper. It is the safety net that gives the portfolio an answer
within a second, without waiting for any JIT compilation.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult, Status,
                               time_left)
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem
from portfolio.runner.fallback import safe_plan


class MinUsageBackend(Backend):
    name = "minusage"
    description = "Least-memory strategies avoiding forbidden entries: instant, no compilation"
    capabilities = Capabilities()  # the safety net (quick, not anytime): the original problem
    meta = BackendMeta(engines=("numpy",))

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        plain = np.array(problem.min_usage_strategies, dtype=np.int64)
        best, best_ev = None, None
        ev = evaluate(problem, plain)
        if ev.feasible:
            best, best_ev = plain, ev
            report(plain, "min-usage plan")
        seconds = max(0.05, min(3.0, time_left(deadline) * 0.5))
        safe = safe_plan(problem, seconds)
        ev = evaluate(problem, safe)
        if ev.feasible and (best_ev is None or ev.cost < best_ev.cost):
            best, best_ev = safe, ev
            report(safe, "min-usage plan avoiding forbidden entries")
        if best is None:
            return SolveResult(Status.NO_SOLUTION, note="the min-usage plan exceeds the memory limit")
        forbidden = best_ev.forbidden_node_choices + best_ev.forbidden_edge_entries
        return SolveResult(Status.FEASIBLE, best,
                           note=f"{forbidden} forbidden choices" if forbidden else "")


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [MinUsageBackend()]
