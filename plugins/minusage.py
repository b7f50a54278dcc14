"""Baseline backend: least-memory plans, from plain numpy (nothing to compile), in two steps.

First the least-memory allowed strategy per node, reported at once: on every contest instance this
plan fits in memory (the limit is about 1.1 x its peak), but it may pick forbidden edge entries.
Then :func:`portfolio.runner.fallback.safe_plan`: the least-memory strategy among those surviving
arc consistency on forbidden entries, repaired until no forbidden entry is left where the repair
can find one, reported when it is cheaper. It is the safety net that gives the portfolio an answer
within a second, without waiting for any JIT compilation.

A warm start is ignored: both plans come from the problem alone (the runner keeps the given plan
anyway).

**Deterministic mode** (``report.work`` set, :mod:`portfolio.work`): the repair passes of the safe
plan get no time cap (each loop of :mod:`portfolio.runner.fallback` is bounded by its own count of
waves, so the plan no longer depends on how fast they ran: a cap of infinitely many seconds is
never reached, whatever the clock reads), the plans are reported as usual, and the work is counted
once by size: ``ENTRIES_PER_UNIT`` strategies and edge-table entries of the problem per unit, one
unit at least (calibrated in CPU seconds on A, K, N and S: docs/benchmarks/determinism.md).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult, Status,
                               time_left)
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem
from portfolio.runner.fallback import safe_plan

ENTRIES_PER_UNIT = 45_000
"""Deterministic mode: strategies plus edge-table entries of the problem per work unit of both
plans (the least-memory plan, the safe plan and their evaluations)."""


class MinUsageBackend(Backend):
    name = "minusage"
    description = "Least-memory strategies avoiding forbidden entries: instant, no compilation"
    capabilities = Capabilities()  # the safety net (quick, not anytime): the original problem
    meta = BackendMeta(engines=("numpy",), deterministic=True,
                       work_share=0.1)

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        plain = np.array(problem.min_usage_strategies, dtype=np.int64)
        best, best_ev = None, None
        ev = evaluate(problem, plain)
        if ev.feasible:
            best, best_ev = plain, ev
            report(plain, "min-usage plan")
        work = report.work
        if work is None:
            seconds = max(0.05, min(3.0, time_left(deadline) * 0.5))
        else:   # deterministic mode: bounded by the waves' counts alone
            seconds = math.inf
        safe = safe_plan(problem, seconds)
        ev = evaluate(problem, safe)
        if ev.feasible and (best_ev is None or ev.cost < best_ev.cost):
            best, best_ev = safe, ev
            report(safe, "min-usage plan avoiding forbidden entries")
        if work is not None:
            work.spend(max(1.0, (len(problem.node_costs) + len(problem.edge_costs))
                           / ENTRIES_PER_UNIT))
        if best is None:
            return SolveResult(Status.NO_SOLUTION, note="the min-usage plan exceeds the memory limit")
        forbidden = best_ev.forbidden_node_choices + best_ev.forbidden_edge_entries
        return SolveResult(Status.FEASIBLE, best,
                           note=f"{forbidden} forbidden choices" if forbidden else "")


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [MinUsageBackend()]
