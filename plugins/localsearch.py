"""Local-search backend: anytime, seeded, warm-startable; only feasible plans are reported.

The search runs on merged functional groups (a group move is the "follow" move of a whole chain
tied by forbidden entries) and alternates two engines (:class:`portfolio.kernels.engine.Searcher`):
rounds of a memory-priced relaxation (Lagrangian prices on time points, TRW-S message passing,
greedy repair of overloaded points, exact polish) and iterated local search on the best plan
(random region kicks + worklist descent with single, tree-DP block and cascade moves, memory
checked exactly by a segment tree). The portfolio's best plan is adopted when it beats ours.

**Warm start**: the search's first incumbent, searched from. A feasible warm start is adopted as it
is (the runner holds it already, so it is not reported again); one that no longer fits in memory or
makes a choice the reduction ruled out (a re-solve after a change) is brought to its closest reduced
plan, repaired (memory) and polished, adopted and reported; the greedy plan is built only when there
is no usable warm start (or its repair still picks a forbidden entry). The answer is never worse
than a feasible warm start.

**Deterministic mode** (``report.work`` set, :mod:`portfolio.work`): the same search, counted in
work units instead of timed (:meth:`portfolio.kernels.engine.Searcher.run_work`; the constants
are in :mod:`portfolio.kernels.units`): the kernel view and the first incumbent count their sizes
(``prepare_units``, ``greedy_units``), each Lagrangian round its TRW-S passes, price vectors and
strategy evaluations, and the ILS after it the same amount again in evaluations. Every improvement
is reported at once (the reporter only remembers it there), the portfolio's plan is read right
after an exchange point only, and the dot products are thread-count free. The deadline is the
safety net.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple, Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult, Status,
                               options_of, time_left)
from portfolio.backend_options import TUNED_SHORT, TUNED_SHORT_WHY, Budgeted, Option
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.kernels.backend import KernelBackend
from portfolio.problem import Problem

if TYPE_CHECKING:  # the kernels (numba) load in the worker, not when the plugin is listed
    from portfolio.kernels.engine import Prepared, SearchParams
    from portfolio.kernels.units import Meter

REPORT_EVERY = 0.3
"""Seconds between two reported plans (the last improvement is always reported at the end)."""


OPTIONS = (
    Option("max_rounds", "int", 0, low=0,
           help="Lagrangian rounds, then stop (0: until the deadline; timed runs only)"),
    Option("trws_iters", "int", 3, low=1, high=50, help="TRW-S passes per Lagrangian round"),
    Option("block_nodes", "int", 10, low=1, high=200,
           by_budget=(Budgeted(TUNED_SHORT, 21, TUNED_SHORT_WHY),),
           help="nodes of a block (tree DP) move in the local search's descents"),
    Option("kick_min", "int", 2, low=1, high=1000,
           help="fewest nodes an iterated-local-search kick changes"),
    Option("kick_max", "int", 12, low=1, high=1000,
           by_budget=(Budgeted(TUNED_SHORT, 22, TUNED_SHORT_WHY),),
           help="most nodes an iterated-local-search kick changes"),
    Option("ils_share", "float", 1.0, low=0.0, high=100.0,
           by_budget=(Budgeted(TUNED_SHORT, 0.31, TUNED_SHORT_WHY),),
           help="iterated local search after a round, as a multiple of the round's time (timed)"),
    Option("kicks_per_round", "int", 100, low=0,
           help="iterated-local-search kicks after each round (deterministic mode)"),
)
"""The search's settings (defaults: the kernels' ``SearchParams``) and the rounds' cap."""


def search_params(values: dict) -> SearchParams:
    """The kernels' parameters from the backend's options (numba: called in the worker)."""
    from portfolio.kernels.engine import SearchParams

    names = ("trws_iters", "block_nodes", "kick_min", "kick_max", "ils_share", "kicks_per_round")
    params = SearchParams(**{k: values[k] for k in names})
    if params.kick_max < params.kick_min:   # a range given upside down: the larger is the max
        params.kick_min, params.kick_max = params.kick_max, params.kick_min
    return params


class LocalSearchBackend(KernelBackend):
    name = "localsearch"
    description = "Lagrangian TRW-S rounds + iterated local search on merged functional groups"
    capabilities = Capabilities(anytime=True, warm_start=True, reduced=True, randomized=True)
    meta = BackendMeta(engines=("numba", "numpy"), deterministic=True,
                       work_share=3.0, options=OPTIONS)

    def prepare(self) -> None:
        """Compile every stage up to the local search; stages another worker is compiling are
        waited for and then loaded from the cache (see ``engine.compile_lock``)."""
        from portfolio.kernels.engine import warmup  # numba: in the worker, not at load

        warmup()

    def solve_prepared(self, prep: Prepared, problem: Problem, deadline: float, seed: int,
                       warm_start: Optional[np.ndarray], report: Reporter,
                       t0: float) -> SolveResult:
        from portfolio.kernels import engine, units

        meter = units.meter_of(report)
        if meter is not None:
            return self._solve_counted(prep, problem, deadline, seed, warm_start, report, t0,
                                       meter)
        stop = time.monotonic() + time_left(deadline)
        values = options_of(self, report)
        search = engine.Searcher(prep, seed, search_params(values))
        start = _start(prep, problem, search, warm_start, seed)
        notes = [start.note] if start.note else []
        warm_cost = start.warm_cost
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

        if search.best is not None and start.fresh:   # not the warm start as the runner has it
            on_improve(search.best)
        search.run(stop, values["max_rounds"] or None, on_improve, fetch)
        flush(True)
        timings = {**prep.timings, "best_s": last[2], "total_s": time.perf_counter() - t0}
        return _result(problem, prep, search, warm_start, warm_cost, notes, timings)

    def _solve_counted(self, prep: Prepared, problem: Problem, deadline: float, seed: int,
                       warm_start: Optional[np.ndarray], report: Reporter, t0: float,
                       meter: Meter) -> SolveResult:
        """Deterministic mode: the search counted in work units (see the module's docstring)."""
        from portfolio.kernels import engine, units

        stop = time.monotonic() + time_left(deadline)   # the safety net, nothing more
        search = engine.Searcher(prep, seed, search_params(options_of(self, report)),
                                 deterministic=True)
        start = _start(prep, problem, search, warm_start, seed)
        notes = [start.note] if start.note else []
        found = [0.0]

        def on_improve(rsol: np.ndarray) -> None:
            report(prep.expand(rsol), "localsearch")
            found[0] = time.perf_counter() - t0

        def fetch() -> Optional[np.ndarray]:
            other = report.best()
            return None if other is None else prep.contract(other)

        if search.best is not None:   # what the first exchange point hands over, warm or not
            on_improve(search.best)
        first = units.prepare_units(problem) + start.built * units.greedy_units(prep.rm)
        if meter.spend(first):
            if meter.exchanged and (other := fetch()) is not None and search.offer(other):
                search.stats["adopted"] += 1
            search.run_work(meter, stop, on_improve, fetch)
        if search.safety_net:
            notes.append("stopped by the wall-clock safety net before its work was spent")
        timings = {**prep.timings, "best_s": found[0], "total_s": time.perf_counter() - t0}
        result = _result(problem, prep, search, warm_start, start.warm_cost, notes, timings)
        result.safety_net = bool(search.safety_net)
        return result


class _Start(NamedTuple):
    """How the search's first incumbent came about."""

    note: str                   # "warm start", "warm start repaired" or ""
    warm_cost: Optional[int]    # the warm start's cost when it is feasible as given
    fresh: bool                 # the incumbent is not the warm start as given: report it
    built: int                  # plans built (greedy, repair), for the work count


def _start(prep: Prepared, problem: Problem, search, warm_start: Optional[np.ndarray],
           seed: int) -> _Start:
    """Give ``search`` its first incumbent: the warm start (as it is when feasible, else repaired
    and polished from its closest reduced plan), the greedy plan when there is none usable."""
    from portfolio.kernels import engine

    note, warm_cost, built = "", None, 0
    if warm_start is not None:
        warm = np.asarray(warm_start, np.int64)
        ev = evaluate(problem, warm)
        exact = prep.contract(warm)
        if ev.feasible:
            warm_cost = ev.cost
        if ev.feasible and exact is not None:
            if search.offer(exact):
                note = "warm start"
        elif (near := prep.project(warm)) is not None:
            built += 1
            fixed = engine.Repairer(prep, seed).repair_and_polish(near)
            if fixed is not None and search.offer(fixed):
                note = "warm start repaired"
    if search.best is None or (note == "warm start repaired"
                               and evaluate(problem, prep.expand(search.best)).has_forbidden):
        built += 1
        sol, ok, _ = engine.greedy_plan(prep, 2, seed)
        if ok:
            search.offer(sol)
    return _Start(note, warm_cost, note != "warm start", built)


def _result(problem: Problem, prep: Prepared, search, warm_start: Optional[np.ndarray],
            warm_cost: Optional[int], notes: list[str], timings: dict) -> SolveResult:
    """The search's answer, never worse than a feasible warm start."""
    note = ", ".join(notes + [f"{k}={v}" for k, v in search.stats.items()
                              if isinstance(v, int)])
    if search.best is None:
        if warm_cost is not None:
            return SolveResult(Status.FEASIBLE, np.asarray(warm_start, np.int64),
                               note="kept the warm start", timings=timings)
        return SolveResult(Status.NO_SOLUTION, note="no feasible plan found", timings=timings)
    plan = prep.expand(search.best)
    ev = evaluate(problem, plan)
    if warm_cost is not None and (not ev.feasible or ev.cost > warm_cost):
        # never hand back anything worse than the warm start
        return SolveResult(Status.FEASIBLE, np.asarray(warm_start, np.int64),
                           note="kept the warm start", timings=timings)
    if not ev.feasible:   # the kernels and the judge disagree: never hand it over
        return SolveResult(Status.NO_SOLUTION, note="internal check failed: plan infeasible",
                           timings=timings)
    return SolveResult(Status.FEASIBLE, plan, note=note, timings=timings)


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [LocalSearchBackend()]
