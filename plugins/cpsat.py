"""Exact backend ``cpsat``: OR-tools CP-SAT on the presolved problem, LNS windows where it is too big.

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
from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from portfolio.backend import BackendMeta
from portfolio.evaluate import evaluate, range_sum
from portfolio.exact import ExactBackend, ExactModel, ExactOutcome, ModelSize, build_exact_model
from portfolio.hookspecs import backends_hook
from portfolio.problem import Problem

OBJECTIVE_LIMIT = 2**62
"""Largest objective range (above the constant offset) handed to CP-SAT's int64 arithmetic."""

ROWS_TERMS_LIMIT = 300_000
"""``auto`` memory encoding: explicit rows while they need at most this many terms, else ``lazy``
(rows of binding points added on demand; measured against ``sweep`` and ``cumulative`` on A)."""

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


def _forbid_excluded_pairs(m, md: ExactModel, f, lits_of: list) -> None:
    """A clause per pair of usable strategies of a two-node factor that the factor excludes."""
    so, usable = md.problem.strategy_offsets, md.usable
    u, v = f.nodes
    allowed = np.zeros((int(so[u + 1] - so[u]), int(so[v + 1] - so[v])), dtype=bool)
    allowed[f.choices[:, 0], f.choices[:, 1]] = True
    for p in np.flatnonzero(usable[so[u]:so[u + 1]]).tolist():
        for q in np.flatnonzero(usable[so[v]:so[v + 1]]).tolist():
            if not allowed[p, q]:
                m.add_bool_or([lits_of[0][p].Not(), lits_of[1][q].Not()])


class CpSatEngine:
    """Builds and solves the CP-SAT model of one Problem (see the module docstring)."""

    name = "cpsat"

    def __init__(self, memory: str = "auto", linking: str = "marginal",
                 budget: ModelSize = BUDGET, parameters: Optional[dict] = None) -> None:
        if memory not in ("auto", "rows", "lazy", "sweep", "cumulative"):
            raise ValueError(f"unknown memory encoding {memory!r}")
        if linking not in ("marginal", "weak"):
            raise ValueError(f"unknown edge linking {linking!r}")
        self.memory, self.linking, self._budget = memory, linking, budget
        self.parameters = parameters

    def estimate(self, problem: Problem) -> ModelSize:
        return estimate_size(problem)

    def budget(self) -> ModelSize:
        return self._budget

    # ------------------------------------------------------------------ model
    def build(self, model_data: ExactModel):
        """The CP-SAT model, the Boolean of each usable strategy and build statistics."""
        from ortools.sat.python import cp_model

        m = cp_model.CpModel()
        problem = model_data.problem
        so = problem.strategy_offsets
        n = problem.num_nodes
        xvar: list[Optional[object]] = [None] * len(problem.node_costs)
        obj_vars: list = []
        obj_coefs: list[int] = []
        usable, unary = model_data.usable, model_data.unary
        for i in range(n):
            lits = []
            for s in np.flatnonzero(usable[so[i]:so[i + 1]]).tolist():
                g = int(so[i]) + s
                v = m.new_bool_var(f"x{i}_{s}")
                xvar[g] = v
                lits.append(v)
                if unary[g]:
                    obj_vars.append(v)
                    obj_coefs.append(int(unary[g]))
            m.add_exactly_one(lits)
        entry_vars = 0
        for f in model_data.factors:
            lits_of = [[xvar[int(so[v]) + s] for s in range(int(problem.strategy_counts[v]))]
                       for v in f.nodes]
            if not f.cost.any() and len(f.nodes) == 2:
                _forbid_excluded_pairs(m, model_data, f, lits_of)  # pure compatibility
                continue
            if self.linking == "weak" and len(f.nodes) == 2:
                for t in np.flatnonzero(f.cost).tolist():
                    p, q = int(f.choices[t, 0]), int(f.choices[t, 1])
                    e = m.new_bool_var("")
                    m.add_bool_or([lits_of[0][p].Not(), lits_of[1][q].Not(), e])
                    obj_vars.append(e)
                    obj_coefs.append(int(f.cost[t]))
                    entry_vars += 1
                if not f.complete:
                    _forbid_excluded_pairs(m, model_data, f, lits_of)
                continue
            evars = [m.new_bool_var("") for _ in range(len(f.cost))]
            entry_vars += len(evars)
            for t in np.flatnonzero(f.cost).tolist():
                obj_vars.append(evars[t])
                obj_coefs.append(int(f.cost[t]))
            for pos, v in enumerate(f.nodes):
                col = f.choices[:, pos]
                order = np.argsort(col, kind="stable")
                bounds = np.searchsorted(col[order], np.arange(int(problem.strategy_counts[v]) + 1))
                for s in np.flatnonzero(usable[so[v]:so[v + 1]]).tolist():
                    members = order[bounds[s]:bounds[s + 1]].tolist()
                    if members:
                        m.add(cp_model.LinearExpr.sum([evars[t] for t in members])
                              == lits_of[pos][s])
                    else:
                        m.add(lits_of[pos][s] == 0)
        mem_mode, mem_terms = self._memory(m, model_data, xvar)
        m.minimize(cp_model.LinearExpr.weighted_sum(obj_vars, obj_coefs))
        stats = {"x_vars": sum(v is not None for v in xvar), "entry_vars": entry_vars,
                 "memory": mem_mode, "memory_terms": mem_terms,
                 "memory_points": len(model_data.memory.rhs)}
        return m, xvar, stats

    def _memory(self, m, md: ExactModel, xvar: list) -> tuple[str, int]:
        from ortools.sat.python import cp_model

        mem = md.memory
        so = md.problem.strategy_offsets
        if len(mem.rhs) == 0:
            return "none", 0
        mode = self.memory
        if mode == "auto":
            mode = "rows" if mem.terms <= ROWS_TERMS_LIMIT else "lazy"
        if mode == "lazy":
            return "lazy", 0

        def usage_expr(r: int):
            i = int(mem.node[r])
            c = mem.coef[r]
            nz = np.flatnonzero(c).tolist()
            return [xvar[int(so[i]) + s] for s in nz], [int(c[s]) for s in nz]

        if mode == "rows":
            npts = len(mem.rhs)
            rows: list[dict] = [dict() for _ in range(npts)]
            for r in range(len(mem.node)):
                vs, cs = usage_expr(r)
                for k in range(int(mem.lo[r]), int(mem.hi[r])):
                    row = rows[k]
                    for v, c in zip(vs, cs):
                        row[v] = row.get(v, 0) + c
            seen: dict = {}
            terms = 0
            for k, row in enumerate(rows):
                key = tuple(sorted((v.index, c) for v, c in row.items()))
                rhs = int(mem.rhs[k])
                if key in seen and seen[key] <= rhs:
                    continue
                seen[key] = rhs
                m.add(cp_model.LinearExpr.weighted_sum(list(row), list(row.values())) <= rhs)
                terms += len(row)
            return "rows", terms
        # one usage variable per distinct (node, coefficient vector)
        shared: dict = {}
        uvar = []
        terms = 0
        for r in range(len(mem.node)):
            key = (int(mem.node[r]), mem.coef[r].tobytes())
            if key not in shared:
                vs, cs = usage_expr(r)
                u = m.new_int_var(0, int(mem.coef[r].max()), "")
                m.add(cp_model.LinearExpr.weighted_sum(vs, cs) == u)
                terms += len(vs) + 1
                shared[key] = u
            uvar.append(shared[key])
        npts = len(mem.rhs)
        if mode == "cumulative":
            cap = int(mem.rhs.max())
            intervals, demands = [], []
            for r in range(len(mem.node)):
                lo, hi = int(mem.lo[r]), int(mem.hi[r])
                intervals.append(m.new_fixed_size_interval_var(lo, hi - lo, ""))
                demands.append(uvar[r])
            k = 0
            while k < npts:  # fillers lower the capacity where less is left
                j = k
                while j + 1 < npts and mem.rhs[j + 1] == mem.rhs[k]:
                    j += 1
                fill = cap - int(mem.rhs[k])
                if fill > 0:
                    intervals.append(m.new_fixed_size_interval_var(k, j + 1 - k, ""))
                    demands.append(fill)
                k = j + 1
            m.add_cumulative(intervals, demands, cap)
            return "cumulative", terms + len(intervals)
        starts: list[list] = [[] for _ in range(npts + 1)]
        ends: list[list] = [[] for _ in range(npts + 1)]
        for r in range(len(mem.node)):
            starts[int(mem.lo[r])].append(uvar[r])
            ends[int(mem.hi[r])].append(uvar[r])
        prev = None
        for k in range(npts):
            s_k = m.new_int_var(0, max(0, int(mem.rhs[k])), "")
            plus, minus = starts[k], ends[k]
            expr = (prev if prev is not None else 0) + sum(plus) - sum(minus)
            m.add(s_k == expr)
            terms += 2 + len(plus) + len(minus)
            prev = s_k
        return "sweep", terms

    # ------------------------------------------------------------------ solve
    def solve(self, problem: Problem, time_limit: float, hint: Optional[np.ndarray],
              threads: int, seed: int,
              on_solution: Callable[[np.ndarray], None]) -> ExactOutcome:
        from ortools.sat.python import cp_model

        t0 = time.monotonic()
        stop_at = t0 + max(0.0, time_limit)
        size = self.estimate(problem)
        if not size.within(self._budget):
            return ExactOutcome("too-big", note=f"model estimate {size} above budget")
        md = build_exact_model(problem)
        if md.infeasible is not None:
            return ExactOutcome("infeasible", note=md.infeasible, stats=dict(md.stats))
        if md.objective_range() >= OBJECTIVE_LIMIT:
            return ExactOutcome("unknown", note="objective range exceeds CP-SAT's int64 arithmetic")
        model, xvar, build_stats = self.build(md)
        lazy = build_stats["memory"] == "lazy"
        rows = LazyRows(md, xvar) if lazy else None
        so = problem.strategy_offsets
        n = problem.num_nodes
        node_of = np.repeat(np.arange(n), problem.strategy_counts)
        strat_of = np.arange(len(problem.node_costs)) - so[node_of]
        gidx = np.array([g for g, v in enumerate(xvar) if v is not None], dtype=np.int64)
        vidx = np.array([xvar[g].index for g in gidx], dtype=np.int64)

        def set_hint(plan: Optional[np.ndarray]) -> None:
            model.clear_hints()
            if plan is None:
                return
            chosen = so[:-1] + np.asarray(plan, dtype=np.int64)
            hinted = np.zeros(len(problem.node_costs), dtype=bool)
            hinted[chosen] = True
            for g in gidx.tolist():
                model.add_hint(xvar[g], bool(hinted[g]))

        def decode(values: np.ndarray) -> np.ndarray:
            plan = np.zeros(n, dtype=np.int64)
            on = gidx[values[vidx] > 0]
            plan[node_of[on]] = strat_of[on]
            return plan

        best: list = [None, None]  # cost, plan of the best plan feasible in the full problem

        class _Callback(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:  # noqa: N802 (OR-tools' name)
                plan = decode(np.asarray(self.response_proto.solution, dtype=np.int64))
                ev = evaluate(problem, plan)
                if ev.feasible and (best[0] is None or ev.cost < best[0]):
                    best[0], best[1] = ev.cost, plan
                    on_solution(plan)

        start = np.asarray(hint, dtype=np.int64) if hint is not None else None
        if start is not None and len(start) == n:
            ev = evaluate(problem, start)
            if ev.feasible and not ev.has_forbidden:
                best[0], best[1] = ev.cost, start.copy()
        if rows is not None:
            rows.add(model, rows.initial(start if start is not None else
                                         np.asarray(problem.min_usage_strategies)))
        set_hint(start)
        stats = {**md.stats, **build_stats, "build_s": round(time.monotonic() - t0, 3),
                 "solve_s": 0.0, "conflicts": 0, "rounds": 0}
        bound: Optional[int] = None
        name = "not run"
        while True:
            remaining = stop_at - time.monotonic()
            if remaining <= 0.05:
                break
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = max(0.05, remaining)
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
            set_hint(best[1])
        if rows is not None:
            stats["memory_rows"] = rows.count
        if best[1] is None:
            return ExactOutcome("unknown", bound=bound, note=f"CP-SAT: {name}", stats=stats)
        status_out = "optimal" if bound is not None and bound >= best[0] else "feasible"
        if status_out == "optimal":
            bound = best[0]
        return ExactOutcome(status_out, best[1], best[0], bound, note=f"CP-SAT: {name}",
                            stats=stats)


class LazyRows:
    """Memory rows added on demand (``lazy`` encoding): the instance's few binding time points.

    On instances like A (282 free nodes, 16k time points, ~2,700 live intervals each) the explicit
    rows need 10**8 terms; almost all of them never bind. The model starts with the rows of the
    points where the starting plan has the least slack; whenever CP-SAT returns a plan that
    violates memory, the rows of its most violated points are added and the solve resumes. Every
    round solves a relaxation, so its bound is valid, and an optimum of a relaxation that fits in
    memory is optimal for the full problem.
    """

    BATCH = 48

    def __init__(self, md: ExactModel, xvar: list) -> None:
        mem = md.memory
        so = md.problem.strategy_offsets
        self.md, self.xvar = md, xvar
        self.added: set[int] = set()
        g_parts, c_parts, counts = [], [], []
        for r in range(len(mem.node)):
            c = mem.coef[r]
            nz = np.flatnonzero(c)
            g_parts.append(int(so[int(mem.node[r])]) + nz)
            c_parts.append(c[nz])
            counts.append(len(nz))
        self.flat_g = np.concatenate(g_parts) if g_parts else np.zeros(0, dtype=np.int64)
        self.flat_c = np.concatenate(c_parts) if c_parts else np.zeros(0, dtype=np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    @property
    def count(self) -> int:
        return len(self.added)

    def usage(self, plan: np.ndarray) -> np.ndarray:
        """Usage above the least usages at every kept point under ``plan``."""
        mem = self.md.memory
        per = np.array([int(c[plan[int(i)]]) for c, i in zip(mem.coef, mem.node.tolist())],
                       dtype=np.int64)
        return range_sum(mem.lo, mem.hi, per, len(mem.rhs)) if len(mem.rhs) else per[:0]

    def _pick(self, score: np.ndarray) -> list[int]:
        """Up to BATCH new points, best score first, at most one per run of equal-score points."""
        order = np.argsort(-score, kind="stable")
        out: list[int] = []
        for k in order.tolist():
            if len(out) >= self.BATCH or score[k] <= -np.inf:
                break
            if k in self.added:
                continue
            if out and any(abs(k - j) <= 1 and score[j] == score[k] for j in out):
                continue
            out.append(k)
        return out

    def initial(self, plan: np.ndarray) -> list[int]:
        mem = self.md.memory
        slack = mem.rhs - self.usage(plan)
        return self._pick(-slack.astype(np.float64))

    def violated(self, plan: np.ndarray) -> list[int]:
        mem = self.md.memory
        over = (self.usage(plan) - mem.rhs).astype(np.float64)
        over[over <= 0] = -np.inf
        return self._pick(over)

    def add(self, model, points: list[int]) -> int:
        from ortools.sat.python import cp_model

        mem = self.md.memory
        nvars = len(self.xvar)
        added = 0
        for k in points:
            if k in self.added:
                continue
            live = np.flatnonzero((mem.lo <= k) & (k < mem.hi))
            idx = np.concatenate([np.arange(self.ptr[r], self.ptr[r + 1]) for r in live]) \
                if len(live) else np.zeros(0, dtype=np.int64)
            row = np.zeros(nvars, dtype=np.int64)
            np.add.at(row, self.flat_g[idx], self.flat_c[idx])
            nz = np.flatnonzero(row)
            model.add(cp_model.LinearExpr.weighted_sum([self.xvar[g] for g in nz.tolist()],
                                                       row[nz].tolist()) <= int(mem.rhs[k]))
            self.added.add(k)
            added += 1
        return added


class CpSatBackend(ExactBackend):
    name = "cpsat"
    description = "OR-tools CP-SAT: exact on presolved instances, exact LNS windows on the rest"
    capabilities = replace(ExactBackend.capabilities, threads=True)   # CP-SAT's parallel workers
    meta = BackendMeta(engines=("ortools", "numba", "numpy"), requirement="ortools>=9.10",
                       requires=("ortools", "ortools.sat.python", "ortools.sat.python.cp_model"))
    engine_type = CpSatEngine


portfolio_backends = backends_hook(CpSatBackend)
