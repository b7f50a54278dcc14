"""Local-search backend: anytime, seeded, warm-startable; only feasible plans are reported.

The search runs on merged functional groups (a group move is the "follow" move of a whole chain
tied by forbidden entries) and alternates two engines (:class:`portfolio.kernels.engine.Searcher`):
rounds of a memory-priced relaxation (Lagrangian prices on time points, TRW-S message passing,
greedy repair of overloaded points, exact polish) and iterated local search on the best plan
(random region kicks + worklist descent with single, tree-DP block and cascade moves, memory
checked exactly by a segment tree). The portfolio's best plan is adopted when it beats ours.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

import numpy as np

from portfolio.backend import Backend, Capabilities, Reporter, SolveResult, Status, time_left
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.kernels.backend import KernelBackend
from portfolio.problem import Problem

if TYPE_CHECKING:  # the kernels (numba) load in the worker, not when the plugin is listed
    from portfolio.kernels.engine import Prepared, SearchParams

REPORT_EVERY = 0.3
"""Seconds between two reported plans (the last improvement is always reported at the end)."""


class LocalSearchBackend(KernelBackend):
    name = "localsearch"
    description = "Lagrangian TRW-S rounds + iterated local search on merged functional groups"
    capabilities = Capabilities(anytime=True, warm_start=True, reduced=True, randomized=True)

    def __init__(self, max_rounds: Optional[int] = None,
                 params: Optional[SearchParams] = None) -> None:
        self.max_rounds = max_rounds   # set: deterministic budget instead of the deadline
        self.params = params

    def prepare(self) -> None:
        """Compile every stage up to the local search; stages another worker is compiling are
        waited for and then loaded from the cache (see ``engine.compile_lock``)."""
        from portfolio.kernels.engine import warmup  # numba: in the worker, not at load

        warmup()

    def solve_prepared(self, prep: Prepared, problem: Problem, deadline: float, seed: int,
                       warm_start: Optional[np.ndarray], report: Reporter,
                       t0: float) -> SolveResult:
        from portfolio.kernels import engine

        stop = time.monotonic() + time_left(deadline)
        search = engine.Searcher(prep, seed, self.params)
        notes = []
        warm_cost = None
        if warm_start is not None:
            warm = np.asarray(warm_start, np.int64)
            ev = evaluate(problem, warm)
            if ev.feasible:
                warm_cost = ev.cost
                r = prep.contract(warm)
                if r is not None and search.offer(r):
                    notes.append("warm start")
        if search.best is None:
            sol, ok, _ = engine.greedy_plan(prep, 2, seed)
            if ok:
                search.offer(sol)
        last = [0.0, None, 0.0]   # last report time, plan waiting to be reported, found at

        def flush(force: bool) -> None:
            if last[1] is not None and (force or time.monotonic() - last[0] >= REPORT_EVERY):
                report(last[1], "localsearch")
                last[0], last[1] = time.monotonic(), None

        def on_improve(rsol: np.ndarray) -> None:
            last[1], last[2] = prep.expand(rsol), time.perf_counter() - t0
            flush(False)

        def fetch() -> Optional[np.ndarray]:
            flush(False)
            other = report.best()
            return None if other is None else prep.contract(other)

        if search.best is not None and not notes:   # a warm start is known already
            on_improve(search.best)
        search.run(stop, self.max_rounds, on_improve, fetch)
        flush(True)
        timings = {**prep.timings, "best_s": last[2], "total_s": time.perf_counter() - t0}
        note = ", ".join(notes + [f"{k}={v}" for k, v in search.stats.items()
                                  if isinstance(v, int)])
        if search.best is None:
            if warm_cost is not None:
                return SolveResult(Status.FEASIBLE, np.asarray(warm_start, np.int64),
                                   note="kept the warm start", timings=timings)
            return SolveResult(Status.NO_SOLUTION, note="no feasible plan found",
                               timings=timings)
        plan = prep.expand(search.best)
        ev = evaluate(problem, plan)
        if not ev.feasible or (warm_cost is not None and ev.cost > warm_cost):
            # never hand back anything worse than the warm start
            return SolveResult(Status.FEASIBLE, np.asarray(warm_start, np.int64),
                               note="kept the warm start", timings=timings)
        return SolveResult(Status.FEASIBLE, plan, note=note, timings=timings)


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [LocalSearchBackend()]
