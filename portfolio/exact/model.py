"""The engine-agnostic exact model of a Problem: what CP-SAT, MaxSAT or a MIP all need first.

Every exact engine needs the same preparation, done once here so that the encodings only differ in
how they write it down:

* **domains**: a strategy is usable when its node cost is not forbidden and it keeps an allowed
  partner (tuple) on every edge, to the arc-consistency fixpoint of the presolve's routine
  (:func:`portfolio.presolve.consistency.arc_fixpoint`; on presolved problems this is a quick
  confirmation, LNS windows and unpresolved problems gain from it);
* **factors**: every edge reduced to its distinct nodes in increasing order (a node named twice
  keeps the diagonal), parallel edges summed, unary edges folded into node costs, and two-node
  tables folded exactly: row minima into the first node, then column minima into the second, so
  ``T[p, q] = a[p] + b[q] + R[p, q]`` for every allowed entry with ``R >= 0``. A factor is kept
  only where it still says something: a non-zero residual or a forbidden pair between usable
  strategies. Costs stay exact integers (int64, or Python ints when the instance's cost magnitudes
  sum past ``EXACT_INT64``); forbidden stays a hard exclusion, never a number;
* **memory**: intervals whose usage differs between usable strategies, as coefficients above their
  least usage, and the time points where the worst case can exceed what is left of the capacity
  once every interval takes its least usage (elsewhere memory cannot bind).

The objective of a plan ``x`` using only allowed entries is then exactly
``offset + sum(unary[x]) + sum(factor residuals)``, which equals ``evaluate(problem, x).cost``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..evaluate import range_sum
from ..problem import FORBIDDEN, INT64_MAX, Problem, fold_repeated_nodes


@dataclass
class Factor:
    """A cost table over distinct nodes, restricted to allowed entries between usable strategies.

    ``choices[t]`` is the strategy tuple of allowed entry ``t`` (one column per node) and ``cost[t]``
    its residual cost (>= 0 after folding for two-node factors).
    """

    nodes: tuple[int, ...]
    choices: np.ndarray      # (entries, arity) int64
    cost: np.ndarray         # (entries,) int64 (object: Python ints, see EXACT_INT64)
    complete: bool           # every pair of usable strategies is allowed (no forbidden exclusions)


@dataclass
class MemoryPart:
    """Memory constraints above each interval's least usage.

    Interval ``r`` (of node ``node[r]``) adds ``coef[r][s]`` when its node picks strategy ``s``, at the
    kept points ``lo[r] <= k < hi[r]``; the total at kept point ``k`` must stay ``<= rhs[k]``.
    """

    node: np.ndarray                      # (R,) node of each relevant interval
    lo: np.ndarray                        # (R,) first kept point
    hi: np.ndarray                        # (R,) one past the last kept point
    coef: list[np.ndarray]                # per interval, usage above minimum per strategy
    rhs: np.ndarray                       # (P,) capacity left at each kept point
    times: np.ndarray                     # (P,) the problem's time of each kept point

    @property
    def terms(self) -> int:
        """Non-zeros of the explicit one-row-per-point form."""
        return int(sum(int((c != 0).sum()) * int(h - l)
                       for c, l, h in zip(self.coef, self.lo.tolist(), self.hi.tolist())))


@dataclass
class ExactModel:
    """A Problem prepared for an exact encoding (see the module docstring)."""

    problem: Problem
    usable: np.ndarray            # (strategies,) bool, indexed like problem.node_costs
    unary: np.ndarray             # (strategies,) folded node costs, dtype as Factor.cost (meaningless where unusable)
    offset: int                   # exact constant (cost_offset plus folded constants)
    factors: list[Factor]
    memory: MemoryPart
    infeasible: str | None = None  # why no plan without forbidden choices can exist, if known
    stats: dict = field(default_factory=dict)

    def strategies(self, i: int) -> np.ndarray:
        """Usable strategies of node ``i``."""
        so = self.problem.strategy_offsets
        return np.flatnonzero(self.usable[so[i]:so[i + 1]])

    def objective_range(self) -> int:
        """An exact upper bound on |objective - offset| over all plans: the sum over nodes of the
        largest usable unary cost magnitude and over factors of the largest residual magnitude.
        Engines with int64 objectives check it against their limits before building."""
        so = self.problem.strategy_offsets
        total = 0
        for i in range(self.problem.num_nodes):
            vals = self.unary[so[i]:so[i + 1]][self.usable[so[i]:so[i + 1]]]
            if len(vals):
                total += int(np.abs(vals).max())
        for f in self.factors:
            if len(f.cost):
                total += int(np.abs(f.cost).max())
        return total


EXACT_INT64 = 2**60
"""Below this total of cost magnitudes every folded sum fits int64 (a residual or a folded node cost
is a signed sum of at most a few table entries per edge); above it the model holds Python ints."""


def _canonical_table(problem: Problem, e: int) -> tuple[tuple[int, ...], np.ndarray]:
    """Edge ``e`` as a table over its distinct nodes in increasing order; a node named twice keeps
    the entries where both positions agree (the only ones a plan can choose)."""
    flat = problem.edge_costs[problem.edge_cost_offsets[e]:problem.edge_cost_offsets[e + 1]]
    return fold_repeated_nodes(problem.nodes_of_edge(e), flat, problem.strategy_counts, sort=True)


def _gathered_tables(problem: Problem, dtype) -> tuple[list, dict]:
    """Every edge over its distinct nodes: one-node tables as a list of (node, values, allowed),
    the rest summed per node set (parallel edges) into {nodes: (values, allowed)}.

    The allowed mask travels beside the values, so a finite sum can never be mistaken for the
    10**18 marker (and 10**18 stays absorbing: one forbidden addend forbids the entry)."""
    unary: list = []
    tables: dict = {}
    for e in range(problem.num_edges):
        nodes, table = _canonical_table(problem, e)
        ok = table != FORBIDDEN
        values = np.where(ok, table, 0).astype(dtype)
        if len(nodes) == 1:
            unary.append((nodes[0], values.reshape(-1), ok.reshape(-1)))
        elif nodes in tables:
            old, old_ok = tables[nodes]
            tables[nodes] = (old + values, old_ok & ok)
        elif nodes:
            tables[nodes] = (values, ok)
    return unary, tables


def _prune(problem: Problem, usable: np.ndarray, tables: dict) -> Optional[str]:
    """Narrow ``usable`` to arc consistency over the allowed entries of ``tables`` with the
    presolve's routine (one reduction library); returns why no forbidden-free plan exists, or None."""
    from ..presolve.consistency import arc_fixpoint

    so = problem.strategy_offsets.astype(np.int64)
    k = problem.strategy_counts.astype(np.int64)
    pairs = [(nodes, ok) for nodes, (_, ok) in tables.items() if len(nodes) == 2]
    hyper = [(np.array(nodes, dtype=np.int64), ok) for nodes, (_, ok) in tables.items()
             if len(nodes) > 2]
    eu = np.array([u for (u, _), _ in pairs], dtype=np.int64)
    ev = np.array([v for (_, v), _ in pairs], dtype=np.int64)
    sizes = np.array([ok.size for _, ok in pairs], dtype=np.int64)
    toff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    tab = (np.concatenate([ok.reshape(-1) for _, ok in pairs]).astype(np.int64) if pairs
           else np.zeros(0, dtype=np.int64))
    _, why = arc_fixpoint(k, so, usable, eu, ev, toff, tab, hyper, 0)
    if why is None:
        empty = np.flatnonzero(np.add.reduceat(usable, so[:-1]) == 0) if len(usable) else []
        if len(empty):
            why = f"node {int(empty[0])} has no strategy without a forbidden choice"
    return why


def build_exact_model(problem: Problem) -> ExactModel:
    """Domains, folded factors and the memory part of ``problem`` (see the module docstring)."""
    so = problem.strategy_offsets
    costs = np.concatenate([problem.node_costs, problem.edge_costs])
    magnitude = np.abs(costs[costs != FORBIDDEN].astype(np.float64)).sum() + 1
    dtype = object if magnitude >= EXACT_INT64 else np.int64
    usable = problem.node_costs != FORBIDDEN
    unary = np.where(usable, problem.node_costs, 0).astype(dtype)
    offset = int(problem.cost_offset)
    one_node, tables = _gathered_tables(problem, dtype)
    for i, row, ok in one_node:
        usable[so[i]:so[i + 1]] &= ok
        unary[so[i]:so[i + 1]] += row
    infeasible = _prune(problem, usable, tables)
    factors: list[Factor] = []
    folded = 0
    for nodes, (work, allowed) in ([] if infeasible else tables.items()):
        masks = [usable[so[v]:so[v + 1]] for v in nodes]
        for pos, m in enumerate(masks):
            shape = [1] * len(nodes)
            shape[pos] = -1
            allowed = allowed & m.reshape(shape)
        work = np.where(allowed, work, 0).astype(dtype)
        if len(nodes) == 2:   # arc consistency left every usable row and column an allowed entry
            u, v = nodes
            big = INT64_MAX if dtype is np.int64 else 4 * int(magnitude) + 2**63   # above any entry
            rmin = np.where(masks[0], np.where(allowed, work, big).min(axis=1), 0).astype(dtype)
            work = work - rmin[:, None]
            cmin = np.where(masks[1], np.where(allowed, work, big).min(axis=0), 0).astype(dtype)
            work = np.where(allowed, work - cmin[None, :], 0).astype(dtype)
            unary[so[u]:so[u + 1]] += rmin
            unary[so[v]:so[v + 1]] += cmin
            folded += 1
        complete = bool(allowed[np.ix_(*[np.flatnonzero(m) for m in masks])].all())
        costs = work[allowed]
        if complete and not costs.any():
            continue  # folded away entirely
        factors.append(Factor(nodes, np.argwhere(allowed).astype(np.int64), costs, complete))
    memory = _memory_part(problem, usable)
    if infeasible is None and len(memory.rhs) and int(memory.rhs.min()) < 0:
        k = int(np.argmin(memory.rhs))
        infeasible = f"least usages exceed the capacity at time {int(memory.times[k])}"
    stats = {"usable_strategies": int(usable.sum()), "factors": len(factors),
             "factor_entries": int(sum(len(f.cost) for f in factors)), "folded_edges": folded,
             "memory_intervals": len(memory.node), "memory_points": len(memory.rhs)}
    return ExactModel(problem, usable, unary, offset, factors, memory, infeasible, stats)


def _memory_part(problem: Problem, usable: np.ndarray) -> MemoryPart:
    """Intervals that matter and the points where memory can bind (see :class:`MemoryPart`)."""
    so = problem.strategy_offsets
    lo, hi = problem.interval_point_range
    npts = len(problem.time_points)
    cap = problem.point_capacity
    limited = problem.capacity.at(problem.time_points)[1] if npts else np.zeros(0, bool)
    nodes = problem.interval_node
    mins = np.zeros(problem.num_intervals, dtype=np.int64)
    spans = np.zeros(problem.num_intervals, dtype=np.int64)
    coefs: list[np.ndarray] = []
    for j in range(problem.num_intervals):
        i = int(nodes[j])
        use = problem.usages_of_interval(j)
        ok = usable[so[i]:so[i + 1]]
        if not ok.any() or hi[j] <= lo[j]:
            coefs.append(np.zeros(len(use), dtype=np.int64))
            continue
        m = int(use[ok].min())
        c = np.where(ok, use - m, 0).astype(np.int64)
        mins[j], spans[j] = m, int(c.max())
        coefs.append(c)
    base = range_sum(lo, hi, mins, npts) if npts else np.zeros(0, np.int64)
    worst = range_sum(lo, hi, spans, npts) if npts else np.zeros(0, np.int64)
    rhs_all = np.array([int(c) - int(b) if lim else 0 for c, b, lim
                        in zip(cap.tolist(), base.tolist(), limited.tolist())], dtype=object)
    keep = np.array([bool(lim) and int(w) > int(r) for w, r, lim
                     in zip(worst.tolist(), rhs_all.tolist(), limited.tolist())], dtype=bool)
    if npts == 0:
        keep = np.zeros(0, dtype=bool)
    kept = np.flatnonzero(keep)
    # renumber points: an interval covers the kept points inside its original range
    newpos = np.cumsum(np.concatenate([[0], keep.astype(np.int64)]))
    nlo, nhi = newpos[lo], newpos[hi]
    relevant = np.flatnonzero((spans > 0) & (nhi > nlo))
    rhs = np.array([int(rhs_all[k]) for k in kept], dtype=np.int64)
    return MemoryPart(node=nodes[relevant].astype(np.int64), lo=nlo[relevant].astype(np.int64),
                      hi=nhi[relevant].astype(np.int64), coef=[coefs[j] for j in relevant],
                      rhs=rhs, times=problem.time_points[kept].astype(np.int64))
