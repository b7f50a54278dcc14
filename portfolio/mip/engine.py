"""The MIP engine (:class:`MipEngine`): HiGHS through ``highspy`` on the standard ILP of one
Problem, the engine that the ``mip`` backend (``plugins/mip.py``) hands to the exact driver, which
runs it on the presolved problem and on LNS windows where that is too big
(:mod:`portfolio.exact.driver`). The model is :mod:`.model`'s, its memory rows :mod:`.memory`'s.

One solve: the model is passed to HiGHS with a complete MIP start from the hint (``setSolution``:
every strategy and entry column), single-threaded, seeded, gaps at zero. Every improving
incumbent HiGHS finds (its ``kCallbackMipImprovingSolution`` callback) is decoded, re-evaluated
exactly and sent on. With lazy memory rows, an incumbent that overflows memory ends the round: its
overflowing rows are added and HiGHS restarts from the best real plan (HiGHS has no lazy
constraint callback); each round solves a relaxation, so its bound holds.

**The bound, made safe.** Every plan's cost is ``offset + scale * objective`` with an exact
Python-int offset and a power-of-two scale (:mod:`.model`), and the objective above the offset is
an integer number of cost units for every plan. HiGHS's dual bound ``d`` is a double computed with
its tolerances, so the engine claims ``offset + ceil(scale * d - margin)`` with
``margin = BOUND_MARGIN_ABS + BOUND_MARGIN_REL * |scale * d|``: the product is exact (a power of
two), the margin takes off more than the rounding of HiGHS's double sums, and the ceiling is sound
because no plan costs a fraction of a unit. A plan is only claimed optimal when HiGHS says optimal
(for the full model, or for a lazy model whose plan fits every row) *and* that plan is feasible
under the exact evaluator: then the claim is the plan's exact cost. HiGHS's tolerances accept a
plan over memory by less than its feasibility tolerance; the engine never counts such a plan, and
its relaxed optimum only lowers the bound. Every cost the engine reports is the evaluator's.

**Deterministic mode** (a :class:`~portfolio.exact.WorkLimit`): one thread, a fixed seed, and no
clock in any decision; the work is counted from what HiGHS reports (:mod:`.pace`: its MIP
interrupt callbacks and nodes while it runs, the root charged by model size before, the simplex
iterations after) and the solve interrupted at a callback fixed by those counts. The time limit
stays as the wall-clock safety net only.
"""

from __future__ import annotations

import math
import os
import time
from typing import Callable, Optional

import numpy as np

from portfolio.evaluate import evaluate
from portfolio.exact import ExactOutcome, ModelSize, WorkLimit, full_model_or_outcome
from portfolio.problem import Problem

from .model import LINKINGS, MEMORY_MODES, ROWS_TERMS_LIMIT, MipModel, build_mip
from .pace import HighsPace

__all__ = ["BUDGET", "LINKINGS", "MEMORY_MODES", "MipEngine", "PRESOLVE", "estimate_size"]

PRESOLVE = ("off", "choose", "on")
"""HiGHS's own presolve (its option of that name). Off by default: the model is built on the
presolved problem, and HiGHS's presolve only slowed the proofs (docs/benchmarks/mip.md, "Forms":
1.3 -> 0.7 CPU s on B, 1.1 -> 0.7 on G, 6.6 -> 3.0 on A)."""

BOUND_MARGIN_ABS = 1e-3
BOUND_MARGIN_REL = 2.0 ** -40
"""The margin taken off HiGHS's dual bound before its ceiling (see the module docstring):
absolute, in cost units, and relative to the bound's magnitude (2**-40 is 4096 times a double's
rounding unit, well above the rounding of a sum over the model's columns)."""

BUDGET = ModelSize(variables=250_000, constraints=250_000, terms=2_500_000)
"""Largest model built; above it the driver switches to LNS windows (the CP-SAT engine's budget:
the same model sizes; K, M, N and S exceed it)."""

LAZY_START_TERMS = 50_000
"""The memory terms a lazy model's size estimate counts (its first rows)."""


def estimate_size(problem: Problem, memory: str = "auto") -> ModelSize:
    """An upper estimate of the MIP from array sizes (no folding, no model built): strategy and
    entry columns; node rows, a marginal row per edge end and strategy, a row per time point;
    their non-zeros, memory as every interval's usages at every point it covers, or
    ``LAZY_START_TERMS`` where the rows would be lazy."""
    strategies = len(problem.node_costs)
    entries = len(problem.edge_costs)
    arity = problem.edge_arity
    counts = problem.strategy_counts
    ends = int(counts[problem.edge_nodes].sum()) if problem.num_edges else 0
    lo, hi = problem.interval_point_range
    spans = np.diff(problem.interval_usage_offsets)
    rows = int(((hi - lo) * spans).sum())
    lazy = memory == "lazy" or (memory == "auto" and rows > ROWS_TERMS_LIMIT)
    return ModelSize(variables=strategies + entries,
                     constraints=problem.num_nodes + ends + len(problem.time_points),
                     terms=strategies + entries * int(arity.max(initial=2)) + ends
                     + (min(rows, LAZY_START_TERMS) if lazy else rows))


def new_highs():
    """A silent ``highspy.Highs``: HiGHS prints its banner on stdout when the first one of a
    process is made (a breach of the worker's quiet stdout), so fd 1 points at /dev/null then."""
    import sys

    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    h.setOptionValue("output_flag", False)
    return h


def load(h, mip: MipModel) -> None:
    """Pass ``mip`` to HiGHS (rows in CSR, x integer, y continuous)."""
    import highspy

    lp = highspy.HighsLp()
    starts, index, value, lower, upper = mip.rows
    lp.num_col_, lp.num_row_ = mip.num_cols, len(lower)
    lp.col_cost_ = mip.cost
    lp.col_lower_ = np.zeros(mip.num_cols)
    lp.col_upper_ = mip.upper
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_row_, lp.a_matrix_.num_col_ = len(lower), mip.num_cols
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, index, value
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[int(b)] for b in mip.integer]
    status = h.passModel(lp)
    if status == highspy.HighsStatus.kError:
        raise RuntimeError("HiGHS refused the model")


def add_memory_rows(h, mip: MipModel, points: np.ndarray) -> int:
    """Add the memory rows of ``points`` (those not in the model yet); returns how many."""
    starts, index, value, upper = mip.memory.rows(points)
    count = len(upper)
    if count:
        h.addRows(count, np.full(count, -np.inf), upper.astype(np.float64), len(index),
                  starts, index, value.astype(np.float64))
    return count


class MipEngine:
    """Builds and solves the MIP of one Problem with HiGHS (see the module docstring)."""

    name = "mip"

    def __init__(self, linking: str = "marginal", memory: str = "auto",
                 presolve: str = "off", heuristic_effort: float = 0.05,
                 budget: ModelSize = BUDGET) -> None:
        if linking not in LINKINGS:
            raise ValueError(f"unknown edge linking {linking!r}")
        if memory not in MEMORY_MODES:
            raise ValueError(f"unknown memory mode {memory!r}")
        if presolve not in PRESOLVE:
            raise ValueError(f"unknown presolve setting {presolve!r}")
        self.linking, self.memory, self.presolve = linking, memory, presolve
        self.heuristic_effort, self._budget = float(heuristic_effort), budget

    def estimate(self, problem: Problem) -> ModelSize:
        return estimate_size(problem, self.memory)

    def budget(self) -> ModelSize:
        return self._budget

    def _options(self, h, seed: int, time_limit: float, scale: int,
                 node_cap: Optional[int]) -> None:
        if node_cap is not None:
            h.setOptionValue("mip_max_nodes", int(node_cap))
        for key, value in (("threads", 1), ("parallel", "off"), ("random_seed", int(seed) % 2**31),
                           ("presolve", self.presolve), ("mip_rel_gap", 0.0),
                           ("mip_abs_gap", 0.5 / scale),
                           ("mip_heuristic_effort", self.heuristic_effort),
                           ("time_limit", max(0.05, float(time_limit)))):
            h.setOptionValue(key, value)

    def solve(self, problem: Problem, time_limit: float, hint: Optional[np.ndarray],
              threads: int, seed: int, on_solution: Callable[[np.ndarray], None],
              work: Optional[WorkLimit] = None) -> ExactOutcome:
        """The engine contract (:class:`portfolio.exact.ExactEngine`); ``threads`` is ignored:
        HiGHS's branch and bound runs on one thread."""
        import highspy

        t0 = time.monotonic()
        stop_at = t0 + max(0.0, time_limit)
        size = self.estimate(problem)
        md = full_model_or_outcome(problem, size, self._budget)
        if isinstance(md, ExactOutcome):
            return md
        if problem.num_nodes == 0:   # nothing to choose: the empty plan, if the fixed usage fits
            empty = np.zeros(0, dtype=np.int64)
            ev = evaluate(problem, empty)
            return (ExactOutcome("optimal", empty, ev.cost, ev.cost, note="no nodes")
                    if ev.feasible else ExactOutcome("infeasible", note="fixed usage too large"))
        mip = build_mip(md, self.linking, self.memory)
        lazy = mip.stats["memory"] == "lazy"
        pace = HighsPace(work)
        if not pace.build(size.terms):
            return _start_only(problem, hint, "HiGHS: work limit while building the model")
        h = new_highs()
        load(h, mip)
        best: list = [None, None]   # cost, plan: the best plan feasible in the full problem
        start = np.asarray(hint, dtype=np.int64) if hint is not None else None
        if start is not None and len(start) == problem.num_nodes:
            ev = evaluate(problem, start)
            if ev.feasible and not ev.has_forbidden:
                best[0], best[1] = ev.cost, start.copy()
        if lazy:
            add_memory_rows(h, mip, mip.memory.tightest(
                start if start is not None else np.asarray(problem.min_usage_strategies)))
        stats = {**md.stats, **mip.stats,
                 "build_s": round(time.monotonic() - t0, 3), "solve_s": 0.0, "rounds": 0,
                 "nodes": 0, "lp_iterations": 0}
        overflow: list[np.ndarray] = []

        def improving(e) -> None:
            plan = mip.decode(np.asarray(e.data_out.mip_solution))
            ev = evaluate(problem, plan)
            if ev.feasible and not ev.has_forbidden:
                if best[0] is None or ev.cost < best[0]:
                    best[0], best[1] = ev.cost, plan
                    on_solution(plan)
            elif lazy:
                points = mip.memory.violated(plan)
                if len(points):
                    overflow.append(points)
                    e.interrupt()

        def interrupt(e) -> None:
            # HiGHS keeps the flag between runs: say every time whether this round must stop
            more = pace.on_callback(int(e.data_out.mip_node_count))
            e.interrupt(bool(overflow) or not more)

        h.cbMipImprovingSolution.subscribe(improving)
        h.cbMipInterrupt.subscribe(interrupt)
        bound: Optional[int] = None
        name = "not run"
        while True:
            remaining = stop_at - time.monotonic()   # the limit, or only the safety net (work)
            if remaining <= 0.05 or pace.out:
                break
            self._options(h, seed, remaining, mip.scale, pace.node_cap())
            if best[1] is not None:
                values = mip.start(best[1])
                h.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)
            if not pace.start_run(h.getNumNz()):
                break
            overflow.clear()
            t_run = time.monotonic()
            h.run()
            stats["solve_s"] = round(stats["solve_s"] + time.monotonic() - t_run, 3)
            stats["rounds"] += 1
            info = h.getInfo()
            iterations, nodes = max(0, int(info.simplex_iteration_count)), int(info.mip_node_count)
            stats["nodes"] += nodes
            stats["lp_iterations"] += iterations
            pace.end_run(iterations, nodes)
            status = h.getModelStatus()
            name = h.modelStatusToString(status)
            if status == highspy.HighsModelStatus.kInfeasible:
                return ExactOutcome("infeasible", note="no plan without forbidden choices fits "
                                    "in memory (HiGHS)", stats=stats)
            b = _safe_bound(mip, info.mip_dual_bound)   # an interrupted round's still holds
            if b is not None:
                bound = b if bound is None else max(bound, b)
            solution = h.getSolution()
            plan = None
            if info.primal_solution_status == 2:   # kSolutionStatusFeasible
                plan = mip.decode(np.asarray(solution.col_value))
                ev = evaluate(problem, plan)
                if ev.feasible and not ev.has_forbidden:
                    if best[0] is None or ev.cost < best[0]:
                        best[0], best[1] = ev.cost, plan
                        on_solution(plan)
                    if status == highspy.HighsModelStatus.kOptimal:
                        # optimal for a model holding a subset of the rows, and feasible: optimal
                        bound = ev.cost if bound is None else max(bound, ev.cost)
                        break
                elif lazy and not overflow:
                    points = mip.memory.violated(plan)
                    if len(points):
                        overflow.append(points)
            if lazy and overflow:
                added = sum(add_memory_rows(h, mip, p) for p in overflow)
                if added:
                    continue
            break
        stats["memory_rows"] = len(mip.memory.added) if lazy else mip.stats["memory_rows"]
        stats["callbacks"] = pace.callbacks
        if best[1] is None:
            return ExactOutcome("unknown", bound=bound, note=f"HiGHS: {name}", stats=stats)
        if bound is not None and bound >= best[0]:
            return ExactOutcome("optimal", best[1], best[0], best[0], note=f"HiGHS: {name}",
                                stats=stats)
        return ExactOutcome("feasible", best[1], best[0], bound, note=f"HiGHS: {name}",
                            stats=stats)


def _safe_bound(mip: MipModel, dual_bound: float) -> Optional[int]:
    """``offset + ceil(scale * d - margin)`` (the module docstring), or None when not finite."""
    if not math.isfinite(dual_bound):
        return None
    value = float(dual_bound) * mip.scale
    margin = BOUND_MARGIN_ABS + BOUND_MARGIN_REL * abs(value)
    return int(mip.offset) + math.ceil(value - margin)


def _start_only(problem: Problem, hint: Optional[np.ndarray], note: str) -> ExactOutcome:
    """The outcome of a call that ran out of work before HiGHS started: the hint, if clean."""
    if hint is not None and len(hint) == problem.num_nodes:
        plan = np.asarray(hint, dtype=np.int64)
        ev = evaluate(problem, plan)
        if ev.feasible and not ev.has_forbidden:
            return ExactOutcome("feasible", plan.copy(), ev.cost, note=note)
    return ExactOutcome("unknown", note=note)
