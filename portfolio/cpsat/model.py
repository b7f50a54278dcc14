"""The CP-SAT model of one Problem (:class:`~.engine.CpSatEngine` builds and solves it).

Built from the shared exact model (:func:`portfolio.exact.model.build_exact_model`); the encoding
(marginal linking, the memory encodings, lazy rows) is described in :mod:`.engine`'s docstring.
Besides the model, :class:`CpSatModel` knows the value every variable takes under a plan, so that a
hint is *complete*: CP-SAT checks a complete hint during its presolve and, when it is feasible,
starts from it as its first solution; a hint of the strategy Booleans alone (the entry variables
left out) is "incomplete" and, measured on presolved B with one worker, was not used at all in
3 s of deterministic time (docs/benchmarks/determinism.md, "Exact backends").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from portfolio.evaluate import range_sum
from portfolio.exact import ExactModel

ROWS_TERMS_LIMIT = 300_000
"""``auto`` memory encoding: explicit rows while they need at most this many terms, else ``lazy``
(rows of binding points added on demand; measured against ``sweep`` and ``cumulative`` on A)."""


@dataclass
class CpSatModel:
    """A built CP-SAT model, the Boolean of each usable strategy, and what a hint needs."""

    model: object                          # cp_model.CpModel
    xvar: list                             # per global strategy: its Boolean, or None (unusable)
    stats: dict
    md: ExactModel
    entries: list = field(default_factory=list)   # (Booleans, nodes, choices) of a factor's entries
    usage: list = field(default_factory=list)     # (usage variable, memory interval r)
    sums: list = field(default_factory=list)      # (running-sum variable, kept point k)

    def hint(self, plan: Optional[np.ndarray]) -> None:
        """Replace the model's hint by ``plan``'s value of every variable (none when None)."""
        m = self.model
        m.clear_hints()
        if plan is None:
            return
        plan = np.asarray(plan, dtype=np.int64)
        so = self.md.problem.strategy_offsets
        chosen = np.zeros(len(self.xvar), dtype=bool)
        chosen[so[:-1] + plan] = True
        for g, v in enumerate(self.xvar):
            if v is not None:
                m.add_hint(v, bool(chosen[g]))
        for evars, nodes, choices in self.entries:
            on = np.all(choices == plan[list(nodes)][None, :], axis=1)
            for v, value in zip(evars, on.tolist()):
                m.add_hint(v, value)
        if not self.usage and not self.sums:
            return
        mem = self.md.memory
        per = np.array([int(c[plan[int(i)]]) for c, i in zip(mem.coef, mem.node.tolist())],
                       dtype=np.int64)
        for v, r in self.usage:
            m.add_hint(v, int(per[r]))
        if self.sums:
            total = range_sum(mem.lo, mem.hi, per, len(mem.rhs))
            for v, k in self.sums:   # a plan over memory: the hint says so at the point's bound
                m.add_hint(v, int(min(max(0, int(total[k])), max(0, int(mem.rhs[k])))))


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


def build_model(model_data: ExactModel, memory: str = "auto",
                linking: str = "marginal") -> CpSatModel:
    """The CP-SAT model of ``model_data`` with the ``memory`` encoding and the edge ``linking``."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    problem = model_data.problem
    so = problem.strategy_offsets
    n = problem.num_nodes
    xvar: list[Optional[object]] = [None] * len(problem.node_costs)
    obj_vars: list = []
    obj_coefs: list[int] = []
    usable, unary = model_data.usable, model_data.unary
    built = CpSatModel(m, xvar, {}, model_data)
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
        if linking == "weak" and len(f.nodes) == 2:
            positive = np.flatnonzero(f.cost)
            weak = []
            for t in positive.tolist():
                p, q = int(f.choices[t, 0]), int(f.choices[t, 1])
                e = m.new_bool_var("")
                m.add_bool_or([lits_of[0][p].Not(), lits_of[1][q].Not(), e])
                obj_vars.append(e)
                obj_coefs.append(int(f.cost[t]))
                weak.append(e)
                entry_vars += 1
            built.entries.append((weak, f.nodes, f.choices[positive]))
            if not f.complete:
                _forbid_excluded_pairs(m, model_data, f, lits_of)
            continue
        evars = [m.new_bool_var("") for _ in range(len(f.cost))]
        entry_vars += len(evars)
        built.entries.append((evars, f.nodes, f.choices))
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
    mem_mode, mem_terms = _memory(m, model_data, xvar, memory, built)
    m.minimize(cp_model.LinearExpr.weighted_sum(obj_vars, obj_coefs))
    built.stats = {"x_vars": sum(v is not None for v in xvar), "entry_vars": entry_vars,
                   "memory": mem_mode, "memory_terms": mem_terms,
                   "memory_points": len(model_data.memory.rhs)}
    return built

def _memory(m, md: ExactModel, xvar: list, mode: str, built: CpSatModel) -> tuple[str, int]:
    """Post the memory part in encoding ``mode``; returns (the encoding used, its terms)."""
    from ortools.sat.python import cp_model

    mem = md.memory
    so = md.problem.strategy_offsets
    if len(mem.rhs) == 0:
        return "none", 0
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
            built.usage.append((u, r))
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
        built.sums.append((s_k, k))
        plus, minus = starts[k], ends[k]
        expr = (prev if prev is not None else 0) + sum(plus) - sum(minus)
        m.add(s_k == expr)
        terms += 2 + len(plus) + len(minus)
        prev = s_k
    return "sweep", terms



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
