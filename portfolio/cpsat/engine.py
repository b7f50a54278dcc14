"""The CP-SAT engine (:class:`CpSatEngine`): OR-tools CP-SAT on one Problem, the engine that the
``cpsat`` backend (``plugins/cpsat.py``) hands to the exact driver, which runs it on the presolved
problem and on LNS windows where that is too big (:mod:`portfolio.exact.driver`).

The model (one per Problem, a full presolved instance or an LNS window; see
:mod:`portfolio.exact.model` for the folding it starts from):

* one Boolean ``x[i, s]`` per usable strategy, exactly one per node;
* each factor left after exact row/column folding gets the **marginal (local-polytope) linking**:
  one Boolean per allowed entry with ``sum_q e[p, q] = x[u, p]`` and ``sum_p e[p, q] = x[v, q]``
  (for hyperedges, one such row per position and strategy). Its LP relaxation is the local polytope,
  far stronger than ``e >= x + y - 1`` (measured: G proved optimal in seconds against 1.5e6 after
  120 s with the weak form; see docs/benchmarks/cpsat.md). A factor whose residual is zero
  everywhere but that forbids some pairs needs no entry variables: its forbidden pairs become
  clauses;
* memory, above every interval's least usage, at the points where it can bind: explicit rows
  (``rows``), the rows of binding points only, added whenever a solution violates another point
  (``lazy``, see :class:`LazyRows`), a running sum with one usage variable per interval
  (``sweep``, O(intervals + points) terms) or ``AddCumulative`` (``cumulative``); ``auto`` takes
  rows while they are small and lazy rows above that (measured: docs/benchmarks/cpsat.md,
  "Memory encodings on A").

Objective integrality: CP-SAT works in int64. Before building, the exact (Python int) range of the
objective is checked against 2**62 (:meth:`ExactModel.objective_range`); above it the engine says
so (status ``unknown``) instead of rounding anything. Costs are never scaled: CP-SAT's objective is
the exact cost minus the model's constant offset, and every reported cost is recomputed by the
exact evaluator. CP-SAT reports its bound as a double: it is an integer below 2**53 on every
contest instance (exact), and is rounded down by one unit in the last place above that.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable, Optional

import numpy as np

from portfolio.evaluate import evaluate
from portfolio.exact import ExactModel, ExactOutcome, ModelSize, WorkLimit, full_model_or_outcome
from portfolio.problem import Problem

from .model import LazyRows, CpSatModel, build_model

__all__ = ["BUDGET", "CpSatEngine", "LINKINGS", "LazyRows", "MEMORY_ENCODINGS", "estimate_size"]

OBJECTIVE_LIMIT = 2**62
"""Largest objective range (above the constant offset) handed to CP-SAT's int64 arithmetic."""

DET_WORKERS = 1
"""CP-SAT workers in deterministic mode, whatever the machine: one worker's search is the same on
any core count and load (``num_workers`` from ``allotted_cores()`` would change it), and its
parameters are the measured one-thread choice (:func:`default_parameters`)."""

UNITS_PER_DET_SECOND = 1000.0
"""Work units per second of CP-SAT's deterministic time (one worker). Measured on this machine with
``time.process_time()`` around ``CpSolver.solve`` against the ``deterministic_time`` it reports:
0.7-1.3 CPU s per deterministic second on presolved A, B, G and generated instances, about 1.0
over all (docs/benchmarks/determinism.md, "Exact backends"); a unit is about 1 ms of one core.
The solution callback spends the deterministic time as solutions come, the end of each solve the
rest."""

BUILD_UNITS_PER_TERM = 0.003
"""Work units per term of the size estimate, charged for building the model (the shared exact
model and the CP-SAT model, in Python, which CP-SAT's deterministic time does not see). Fitted:
3.3-3.9 CPU us per estimated term over full models and LNS windows of B, G, K, N, S
(``benchmarks/determinism_exact.py calibrate``; docs/benchmarks/determinism.md)."""

BUDGET = ModelSize(variables=250_000, constraints=250_000, terms=2_500_000)
"""Largest model built; above it the driver switches to LNS windows. Measured: a generated
5,000-node instance (454k variables, 102k constraints) took 43 s to build and 265 MB on the loaded
2-core machine, A/B/G (39-50k variables) 2-6 s; this budget keeps a build near 25 s in the worst
case there (docs/benchmarks/cpsat.md, "Model sizes")."""


def estimate_size(problem: Problem) -> ModelSize:
    """An upper estimate of the CP-SAT model from array sizes (no folding, no model built)."""
    strategies = len(problem.node_costs)
    entries = len(problem.edge_costs)
    k = problem.strategy_counts
    arity = problem.edge_arity
    marg_rows = 0
    if problem.num_edges:
        per_edge = np.zeros(problem.num_edges, dtype=np.int64)
        np.add.at(per_edge, np.repeat(np.arange(problem.num_edges), arity), k[problem.edge_nodes])
        marg_rows = int(per_edge.sum())
    lo, hi = problem.interval_point_range
    spans = np.diff(problem.interval_usage_offsets)
    sweep_terms = int(2 * problem.num_intervals + spans.sum()) + 2 * len(problem.time_points)
    rows_terms = int(((hi - lo) * spans).sum())
    memory_terms = min(rows_terms, sweep_terms)
    return ModelSize(variables=strategies + entries + problem.num_intervals,
                     constraints=problem.num_nodes + marg_rows + len(problem.time_points),
                     terms=strategies + entries * (1 + int(arity.max(initial=2))) + memory_terms)


SUBSOLVERS = ["lb_tree_search", "max_lp", "core", "default_lp", "quick_restart", "no_lp",
              "pseudo_costs", "reduced_costs"]
"""Full-problem workers in the order they are given to the threads the runner allots.

Measured on presolved B and G with a local-search hint (docs/benchmarks/cpsat.md, "CP-SAT
parameters"): the strongest LP (linearization level 2, which carries the marginal linking's local
polytope) is what proves optimality, and the LP-bound tree search proves it fastest: B in 12.8 s
with lb_tree_search + max_lp against 22.9 s with max_lp + core on two threads; on one thread 27.0 s
(B) and 18.3 s (G) against 35.9 s and 21.3 s for max_lp alone. The defaults (level 1) never proved
B in 60 s."""


def default_parameters(threads: int) -> dict:
    """CP-SAT parameters for ``threads`` workers (measured choices; see docs/benchmarks/cpsat.md)."""
    if threads <= 1:
        return {"linearization_level": 2, "optimize_with_lb_tree_search": True}
    return {"subsolvers": SUBSOLVERS[:threads]}


MEMORY_ENCODINGS = ("auto", "rows", "lazy", "sweep", "cumulative")
"""The memory encodings the engine can build (``auto`` chooses by model size)."""

LINKINGS = ("marginal", "weak")
"""How edge variables are tied to node variables (see the module docstring)."""


class CpSatEngine:
    """Builds and solves the CP-SAT model of one Problem (see the module docstring)."""

    name = "cpsat"

    def __init__(self, memory: str = "auto", linking: str = "marginal",
                 budget: ModelSize = BUDGET, parameters: Optional[dict] = None) -> None:
        if memory not in MEMORY_ENCODINGS:
            raise ValueError(f"unknown memory encoding {memory!r}")
        if linking not in LINKINGS:
            raise ValueError(f"unknown edge linking {linking!r}")
        self.memory, self.linking, self._budget = memory, linking, budget
        self.parameters = parameters

    def estimate(self, problem: Problem) -> ModelSize:
        return estimate_size(problem)

    def budget(self) -> ModelSize:
        return self._budget

    # ------------------------------------------------------------------ model
    def build(self, model_data: ExactModel) -> CpSatModel:
        """The CP-SAT model, the Boolean of each usable strategy, build statistics and hints."""
        return build_model(model_data, self.memory, self.linking)

    # ------------------------------------------------------------------ solve
    @staticmethod
    def _start_only(problem: Problem, hint: Optional[np.ndarray], note: str) -> ExactOutcome:
        """The outcome of a call that ran out of work before CP-SAT started: the hint, if clean."""
        if hint is not None and len(hint) == problem.num_nodes:
            ev = evaluate(problem, np.asarray(hint, dtype=np.int64))
            if ev.feasible and not ev.has_forbidden:
                return ExactOutcome("feasible", np.asarray(hint, dtype=np.int64).copy(), ev.cost,
                                    note=note)
        return ExactOutcome("unknown", note=note)

    def solve(self, problem: Problem, time_limit: float, hint: Optional[np.ndarray],
              threads: int, seed: int, on_solution: Callable[[np.ndarray], None],
              work: Optional[WorkLimit] = None) -> ExactOutcome:
        """The engine contract (:class:`portfolio.exact.ExactEngine`). With ``work``
        (deterministic mode): ``DET_WORKERS`` workers, each solve limited by the deterministic
        time the call has left, spent as CP-SAT reports it (the model build by its size)."""
        from ortools.sat.python import cp_model

        t0 = time.monotonic()
        stop_at = t0 + max(0.0, time_limit)
        size = self.estimate(problem)
        md = full_model_or_outcome(problem, size, self._budget)
        if isinstance(md, ExactOutcome):
            return md
        if md.objective_range() >= OBJECTIVE_LIMIT:
            return ExactOutcome("unknown", note="objective range exceeds CP-SAT's int64 arithmetic")
        built = self.build(md)
        model, xvar, build_stats = built.model, built.xvar, built.stats
        if work is not None and not work.spend(BUILD_UNITS_PER_TERM * size.terms):
            return self._start_only(problem, hint, "CP-SAT: work limit while building the model")
        lazy = build_stats["memory"] == "lazy"
        rows = LazyRows(md, xvar) if lazy else None
        so = problem.strategy_offsets
        n = problem.num_nodes
        node_of = np.repeat(np.arange(n), problem.strategy_counts)
        strat_of = np.arange(len(problem.node_costs)) - so[node_of]
        gidx = np.array([g for g, v in enumerate(xvar) if v is not None], dtype=np.int64)
        vidx = np.array([xvar[g].index for g in gidx], dtype=np.int64)

        def decode(values: np.ndarray) -> np.ndarray:
            plan = np.zeros(n, dtype=np.int64)
            on = gidx[values[vidx] > 0]
            plan[node_of[on]] = strat_of[on]
            return plan

        best: list = [None, None]  # cost, plan of the best plan feasible in the full problem

        counted = [0.0]  # deterministic time of the current solve already spent (work mode)

        def spend_to(det_time: float) -> bool:
            """Spend the solve's deterministic time since the last call (deterministic mode)."""
            delta, counted[0] = max(0.0, det_time - counted[0]), max(counted[0], det_time)
            return work.spend(delta * UNITS_PER_DET_SECOND) if work is not None else True

        class _Callback(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:  # noqa: N802 (OR-tools' name)
                plan = decode(np.asarray(self.response_proto.solution, dtype=np.int64))
                ev = evaluate(problem, plan)
                if ev.feasible and (best[0] is None or ev.cost < best[0]):
                    best[0], best[1] = ev.cost, plan
                    on_solution(plan)
                if "first_cost" not in stats:
                    stats["first_cost"] = int(ev.cost)   # how far the first solution is from the hint
                if work is not None and not spend_to(self.deterministic_time):
                    self.stop_search()

        start = np.asarray(hint, dtype=np.int64) if hint is not None else None
        if start is not None and len(start) == n:
            ev = evaluate(problem, start)
            if ev.feasible and not ev.has_forbidden:
                best[0], best[1] = ev.cost, start.copy()
        if rows is not None:
            rows.add(model, rows.initial(start if start is not None else
                                         np.asarray(problem.min_usage_strategies)))
        built.hint(start)
        stats = {**md.stats, **build_stats, "build_s": round(time.monotonic() - t0, 3),
                 "solve_s": 0.0, "conflicts": 0, "rounds": 0}
        bound: Optional[int] = None
        name = "not run"
        if work is not None:
            threads = DET_WORKERS   # never the machine's core count: the search must not change
        while True:
            remaining = stop_at - time.monotonic()   # the limit, or only the safety net (work)
            if remaining <= 0.05 or (work is not None and work.left() <= 0):
                break
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = max(0.05, remaining)
            if work is not None:
                solver.parameters.max_deterministic_time = work.left() / UNITS_PER_DET_SECOND
                counted[0] = 0.0
            solver.parameters.num_workers = max(1, int(threads))
            solver.parameters.random_seed = int(seed) % (2**31)
            solver.parameters.log_search_progress = False
            chosen = self.parameters if self.parameters is not None else default_parameters(threads)
            for key, value in chosen.items():
                if isinstance(value, list):
                    getattr(solver.parameters, key).extend(value)
                else:
                    setattr(solver.parameters, key, value)
            # a watchdog in case CP-SAT overruns its own limit (presolve of huge models)
            timer = threading.Timer(remaining + 0.25, solver.stop_search)
            timer.daemon = True
            timer.start()
            try:
                status = solver.solve(model, _Callback())
            finally:
                timer.cancel()
            stats["rounds"] += 1
            out_of_work = not spend_to(solver.deterministic_time)
            stats["det_time"] = round(stats.get("det_time", 0.0) + solver.deterministic_time, 6)
            stats["solve_s"] = round(stats["solve_s"] + solver.wall_time, 3)
            stats["conflicts"] += int(solver.num_conflicts)
            name = solver.status_name(status)
            b = solver.best_objective_bound
            if status != cp_model.INFEASIBLE and math.isfinite(b):
                # every lazy round solves a relaxation: its bound holds for the full problem
                fb = math.floor(b) if abs(b) < 2**53 else math.floor(b - math.ulp(b))
                bound = md.offset + int(fb) if bound is None else max(bound, md.offset + int(fb))
            if status == cp_model.INFEASIBLE:
                stats["memory_rows"] = rows.count if rows is not None else None
                return ExactOutcome("infeasible", note="no plan without forbidden choices fits "
                                    "in memory", stats=stats)
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                break
            if out_of_work and status != cp_model.OPTIMAL:
                name = "work limit"
                break
            plan = decode(np.asarray(solver.response_proto.solution, dtype=np.int64))
            ev = evaluate(problem, plan)
            if ev.feasible:
                if best[0] is None or ev.cost < best[0]:
                    best[0], best[1] = ev.cost, plan
                    on_solution(plan)
                if status == cp_model.OPTIMAL:
                    bound = ev.cost  # optimal for a relaxation and feasible: optimal
                break
            if rows is None:  # cannot happen: the full model forbids every infeasible plan
                raise AssertionError("CP-SAT returned a plan that violates memory")
            added = rows.add(model, rows.violated(plan))
            if not added:
                raise AssertionError("no violated memory row found for an infeasible plan")
            built.hint(best[1])
        if rows is not None:
            stats["memory_rows"] = rows.count
        if best[1] is None:
            return ExactOutcome("unknown", bound=bound, note=f"CP-SAT: {name}", stats=stats)
        status_out = "optimal" if bound is not None and bound >= best[0] else "feasible"
        if status_out == "optimal":
            bound = best[0]
        return ExactOutcome(status_out, best[1], best[0], bound, note=f"CP-SAT: {name}",
                            stats=stats)

