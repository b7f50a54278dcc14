"""Exact presolve: a smaller instance plus the map back to the original (issue #6).

``presolve(problem, **switches)`` returns a :class:`Presolved` whose ``reduced`` problem is usually far
smaller (instance A: 34,932 nodes to a few hundred free ones) and whose ``expand`` maps every plan of the
reduced problem to a plan of the original:

* **costs**: ``evaluate(original, expand(x)).cost == evaluate(reduced, x).cost`` for every reduced
  plan ``x`` that chooses no forbidden entry; a reduced plan chooses a forbidden entry exactly when its
  expansion does (so both costs are at least 10**18 then);
* **memory**: ``evaluate(original, expand(x)).feasible == evaluate(reduced, x).feasible`` for every ``x``;
* **optimality**: every feasible original plan without forbidden choices that is optimal has an
  equally good counterpart in the reduced space, so an optimal reduced plan expands to an optimal one.

Why forbidden entries are "absorbing" rather than summed: a forbidden entry is exactly 10**18. Folding a
row minimum into a node cost, summing two parallel tables or taking a min-plus product would turn
``10**18 + c`` into a number that is no longer exactly 10**18, i.e. no longer *marked* forbidden.
Every reduction therefore keeps forbidden entries at exactly 10**18 (a sum containing one is 10**18),
which keeps the marker and loses only the meaningless finite remainder of plans that are not
solutions anyway.

The reductions (each a keyword switch, all on by default; see ``SWITCHES``):

``forbidden``        strategies of node cost 10**18 are removed (also those made forbidden by folding).
``arc_consistency``  a strategy with no allowed partner on some edge is removed, to a fixpoint (numba
                     AC-3); an emptied domain proves the instance infeasible.
``functional``       when every remaining strategy of ``a`` allows exactly one strategy of ``b`` on an
                     edge, ``b`` is folded into ``a``. All such arcs are merged in bulk: one root per
                     source strongly connected component of the arc digraph (a Kosaraju finish order),
                     every other node reached by a breadth-first search and mapped through the
                     composed maps; costs, intervals (usages mapped) and edges (rows permuted) move to
                     the root, edges inside a group fold into the root's costs.
``edge_tables``      parallel edges summed; exact row- then column-minimum folding into node costs;
                     edges left all-zero with no forbidden entry deleted.
``single``           single-strategy nodes folded into their neighbours' costs, their usage subtracted
                     from the capacity over their intervals, their cost moved into the offset.
``dominance``        a strategy no better than another in node cost, in usage on every (memory
                     relevant) owned interval and in every incident edge row (forbidden = +inf) is
                     removed; exact duplicates keep the lowest index.
``memory_free``      intervals whose usage is the same for every remaining strategy are moved into the
                     capacity profile; nodes then owning no relevant interval are eliminated when they
                     have at most two neighbours: degree 0 takes its cheapest strategy, degree 1 is
                     minimised into the neighbour's costs, degree 2 becomes an edge between its
                     neighbours (min-plus product).
``time_points``      only maximal-clique time segments whose worst case (maximum usages) can exceed the
                     capacity are kept; intervals touching none of them are dropped, and time is
                     renumbered so that reduced time ``t`` is the ``t``-th kept segment.
``memory_bounds``    a strategy is removed when, at some kept time, its usage above its interval's
                     least usage exceeds the slack left by every live interval at its least usage
                     (no feasible plan can use it); if that empties a domain, memory alone proves the
                     instance infeasible.

Cost arithmetic is int64 under a magnitude guard: when the finite costs are so large that folded
sums could reach 10**18 (never on contest data: its bound is ~10**14), the cost-combining reductions
switch themselves off and the report says so.
"""

from __future__ import annotations

import gzip
import json
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from .evaluate import as_solution, exact_sum, range_sum
from .problem import FORBIDDEN, INT64_MAX, Capacity, Problem, offsets_from_counts

SWITCHES = ("forbidden", "arc_consistency", "functional", "edge_tables", "single", "dominance",
            "memory_free", "time_points", "memory_bounds")
"""The reduction switches, in the order they run; each is a keyword argument of :func:`presolve`."""

COUNTERS = (
    "forbidden_strategies",            # forbidden: node cost 10**18 in the input
    "forbidden_after_folding",         # forbidden: node cost became 10**18 by folding an edge into it
    "arc_consistency_strategies",      # arc_consistency
    "functional_merged_nodes",         # functional: nodes folded into a root
    "functional_internal_edges",       # functional: edges inside a merged group, folded into the root
    "functional_conflict_strategies",  # functional: root strategies contradicting a cycle of maps
    "functional_passes",
    "parallel_edges_summed",           # edge_tables
    "edges_folded",                    # edge_tables: edges that moved a row or column minimum
    "zero_edges_deleted",              # edge_tables
    "single_strategy_nodes",           # single
    "dominated_strategies",            # dominance
    "duplicate_strategies",            # dominance: exact duplicates of a lower-numbered strategy
    "constant_intervals",              # memory_free: usage moved into the capacity profile
    "memory_free_degree0",             # memory_free
    "memory_free_degree1",             # memory_free
    "memory_free_degree2",             # memory_free
    "irrelevant_intervals",            # time_points: intervals touching no kept time segment
    "memory_bound_strategies",         # memory_bounds: strategies that overflow memory in any plan
    "empty_intervals",                 # always: zero-length intervals are never live
    "unary_edges",                     # always: one-node edges (after diagonals) into node costs
    "diagonal_edges",                  # always: edges naming a node twice, folded onto the diagonal
)
"""The keys of ``report["reductions"]`` (always all present)."""

_F = FORBIDDEN
_GUARD = 10**18 // 4
"""Cost-combining reductions run only when the sum of all finite cost magnitudes is below this."""

EXTENDED_FORMAT = "iopddl-portfolio-extended/1"


class _Infeasible(Exception):
    """Raised inside the presolve when a reduction proves that no plan avoids forbidden choices or
    fits in memory."""


# ============================================================================================ kernels
@njit(cache=True)
def _add(a, b):
    """Absorbing addition: a forbidden operand makes the sum forbidden."""
    if a == FORBIDDEN or b == FORBIDDEN:
        return FORBIDDEN
    return a + b


@njit(cache=True)
def _ac_kernel(K, SO, alive, eu, ev, toff, tab, inc_off, inc_edge):
    """AC-3 over binary edges: remove strategies without an allowed partner, to a fixpoint.

    Returns (strategies removed, node whose domain emptied or -1, edge that emptied it or -1).
    """
    m = len(eu)
    removed = 0
    if m == 0:
        return removed, -1, -1
    queue = np.arange(m)
    inq = np.ones(m, np.bool_)
    head = 0
    size = m
    while size > 0:
        e = queue[head]
        head += 1
        if head == m:
            head = 0
        size -= 1
        inq[e] = False
        u = eu[e]
        v = ev[e]
        ku = K[u]
        kv = K[v]
        su = SO[u]
        sv = SO[v]
        off = toff[e]
        for side in range(2):
            changed = False
            if side == 0:
                w = u
                for p in range(ku):
                    if not alive[su + p]:
                        continue
                    ok = False
                    base = off + p * kv
                    for q in range(kv):
                        if alive[sv + q] and tab[base + q] != FORBIDDEN:
                            ok = True
                            break
                    if not ok:
                        alive[su + p] = False
                        removed += 1
                        changed = True
            else:
                w = v
                for q in range(kv):
                    if not alive[sv + q]:
                        continue
                    ok = False
                    for p in range(ku):
                        if alive[su + p] and tab[off + p * kv + q] != FORBIDDEN:
                            ok = True
                            break
                    if not ok:
                        alive[sv + q] = False
                        removed += 1
                        changed = True
            if changed:
                left = False
                for s in range(K[w]):
                    if alive[SO[w] + s]:
                        left = True
                        break
                if not left:
                    return removed, w, e
                for t in range(inc_off[w], inc_off[w + 1]):
                    e2 = inc_edge[t]
                    if not inq[e2]:
                        inq[e2] = True
                        tail = head + size
                        if tail >= m:
                            tail -= m
                        queue[tail] = e2
                        size += 1
    return removed, -1, -1


@njit(cache=True)
def _functional_kernel(K, SO, alive, eu, ev, toff, tab, src_ok, dst_ok):
    """Arcs a -> b: every alive strategy of a has exactly one allowed alive partner in b on one edge.

    Returns (src, dst, map offsets, flat maps); the map of an arc covers a's whole strategy range
    (-1 at dead strategies) and gives b's strategy.
    """
    m = len(eu)
    cap = 0
    for e in range(m):
        cap += K[eu[e]] + K[ev[e]]
    arc_src = np.empty(2 * m, np.int64)
    arc_dst = np.empty(2 * m, np.int64)
    arc_moff = np.empty(2 * m, np.int64)
    mflat = np.empty(cap, np.int64)
    na = 0
    cur = 0
    for e in range(m):
        u = eu[e]
        v = ev[e]
        kv = K[v]
        off = toff[e]
        for side in range(2):
            if side == 0:
                a = u
                b = v
            else:
                a = v
                b = u
            if not (src_ok[a] and dst_ok[b]):
                continue
            ka = K[a]
            kb = K[b]
            sa = SO[a]
            sb = SO[b]
            ok = True
            for p in range(ka):
                if not alive[sa + p]:
                    mflat[cur + p] = -1
                    continue
                cnt = 0
                qq = -1
                for q in range(kb):
                    if alive[sb + q]:
                        if side == 0:
                            val = tab[off + p * kv + q]
                        else:
                            val = tab[off + q * kv + p]
                        if val != FORBIDDEN:
                            cnt += 1
                            qq = q
                            if cnt > 1:
                                break
                if cnt != 1:
                    ok = False
                    break
                mflat[cur + p] = qq
            if ok:
                arc_src[na] = a
                arc_dst[na] = b
                arc_moff[na] = cur
                cur += ka
                na += 1
    return arc_src[:na], arc_dst[:na], arc_moff[:na], mflat[:cur]


@njit(cache=True)
def _forest_kernel(n, active, arc_src, arc_dst):
    """One root per source strongly connected component of the arc digraph, and a BFS forest.

    Pass 1 is a depth-first search recording finish order (Kosaraju); pass 2 takes unvisited nodes in
    decreasing finish order, each starting a breadth-first search over arcs: such a node always lies
    in a source component, so every node is reached from exactly one root and the roots are as few as
    possible. Returns (root_of, parent arc or -1, discovery order: parents before children).
    """
    na = len(arc_src)
    cnt = np.zeros(n + 1, np.int64)
    for a in range(na):
        cnt[arc_src[a] + 1] += 1
    for i in range(n):
        cnt[i + 1] += cnt[i]
    out = np.empty(na, np.int64)
    fill = cnt[:-1].copy()
    for a in range(na):
        s = arc_src[a]
        out[fill[s]] = a
        fill[s] += 1
    seen = np.zeros(n, np.bool_)
    finish = np.empty(n, np.int64)
    nf = 0
    stack = np.empty(n, np.int64)
    ptr = np.empty(n, np.int64)
    for s in range(n):
        if not active[s] or seen[s]:
            continue
        top = 0
        stack[0] = s
        ptr[0] = cnt[s]
        seen[s] = True
        while top >= 0:
            x = stack[top]
            if ptr[top] < cnt[x + 1]:
                y = arc_dst[out[ptr[top]]]
                ptr[top] += 1
                if not seen[y]:
                    seen[y] = True
                    top += 1
                    stack[top] = y
                    ptr[top] = cnt[y]
            else:
                finish[nf] = x
                nf += 1
                top -= 1
    root_of = np.full(n, -1, np.int64)
    parent = np.full(n, -1, np.int64)
    order = np.empty(nf, np.int64)
    no = 0
    for idx in range(nf - 1, -1, -1):
        r = finish[idx]
        if root_of[r] >= 0:
            continue
        root_of[r] = r
        order[no] = r
        qh = no
        no += 1
        while qh < no:
            x = order[qh]
            qh += 1
            for t in range(cnt[x], cnt[x + 1]):
                a = out[t]
                y = arc_dst[a]
                if root_of[y] < 0:
                    root_of[y] = r
                    parent[y] = a
                    order[no] = y
                    no += 1
    return root_of, parent, order[:no]


@njit(cache=True)
def _compose_kernel(K, SO, alive, root_of, parent, order, arc_src, arc_moff, mflat, Moff, M):
    """M[Moff[b] + p]: the strategy of b when its root picks p (-1 where p is dead)."""
    for b in order:
        r = root_of[b]
        kr = K[r]
        ob = Moff[b]
        if b == r:
            for p in range(kr):
                M[ob + p] = p if alive[SO[r] + p] else -1
        else:
            a = parent[b]
            op = Moff[arc_src[a]]
            am = arc_moff[a]
            for p in range(kr):
                mp = M[op + p]
                M[ob + p] = mflat[am + mp] if mp >= 0 else -1


@njit(cache=True)
def _merge_kernel(K, SO, ncost, order, root_of, Moff, M, eu, ev, toff, tab, new_toff, new_tab):
    """Fold members' costs and intra-group edges into roots; re-wire the other edges onto roots."""
    for b in order:
        r = root_of[b]
        if b == r:
            continue
        for p in range(K[r]):
            mp = M[Moff[b] + p]
            if mp >= 0:
                ncost[SO[r] + p] = _add(ncost[SO[r] + p], ncost[SO[b] + mp])
    for e in range(len(eu)):
        u = eu[e]
        v = ev[e]
        ru = root_of[u]
        rv = root_of[v]
        kv = K[v]
        off = toff[e]
        if ru == rv:
            for p in range(K[ru]):
                a = M[Moff[u] + p]
                b = M[Moff[v] + p]
                if a >= 0 and b >= 0:
                    ncost[SO[ru] + p] = _add(ncost[SO[ru] + p], tab[off + a * kv + b])
        else:
            o = new_toff[e]
            krv = K[rv]
            for p in range(K[ru]):
                a = M[Moff[u] + p]
                for q in range(krv):
                    b = M[Moff[v] + q]
                    if a >= 0 and b >= 0:
                        new_tab[o + p * krv + q] = tab[off + a * kv + b]
                    else:
                        new_tab[o + p * krv + q] = FORBIDDEN


@njit(cache=True)
def _sum_parallel_kernel(K, eu, ev, toff, tab, order, group, glo, ghi, gtoff, new_tab):
    """Sum (absorbing) the tables of edges with the same node pair, oriented as (glo, ghi)."""
    for g in range(len(glo)):
        for t in range(gtoff[g], gtoff[g + 1]):
            new_tab[t] = 0
    for idx in range(len(order)):
        e = order[idx]
        g = group[idx]
        lo = glo[g]
        khi = K[ghi[g]]
        klo = K[lo]
        kv = K[ev[e]]
        flip = eu[e] != lo
        off = toff[e]
        o = gtoff[g]
        for p in range(klo):
            for q in range(khi):
                if flip:
                    val = tab[off + q * kv + p]
                else:
                    val = tab[off + p * kv + q]
                new_tab[o + p * khi + q] = _add(new_tab[o + p * khi + q], val)


@njit(cache=True)
def _fold_kernel(K, SO, alive, ncost, eu, ev, toff, tab, zero):
    """Row- then column-minimum folding into node costs; flags edges left all-zero (no forbidden).

    Only alive rows and columns are read or changed. Returns the number of edges that moved cost.
    """
    folded = 0
    for e in range(len(eu)):
        u = eu[e]
        v = ev[e]
        ku = K[u]
        kv = K[v]
        su = SO[u]
        sv = SO[v]
        off = toff[e]
        moved = False
        for p in range(ku):
            if not alive[su + p]:
                continue
            found = False
            mn = 0
            for q in range(kv):
                if alive[sv + q]:
                    val = tab[off + p * kv + q]
                    if val != FORBIDDEN and (not found or val < mn):
                        mn = val
                        found = True
            if found and mn != 0:
                for q in range(kv):
                    if alive[sv + q] and tab[off + p * kv + q] != FORBIDDEN:
                        tab[off + p * kv + q] -= mn
                ncost[su + p] = _add(ncost[su + p], mn)
                moved = True
        for q in range(kv):
            if not alive[sv + q]:
                continue
            found = False
            mn = 0
            for p in range(ku):
                if alive[su + p]:
                    val = tab[off + p * kv + q]
                    if val != FORBIDDEN and (not found or val < mn):
                        mn = val
                        found = True
            if found and mn != 0:
                for p in range(ku):
                    if alive[su + p] and tab[off + p * kv + q] != FORBIDDEN:
                        tab[off + p * kv + q] -= mn
                ncost[sv + q] = _add(ncost[sv + q], mn)
                moved = True
        allzero = True
        for p in range(ku):
            if not alive[su + p]:
                continue
            for q in range(kv):
                if alive[sv + q] and tab[off + p * kv + q] != 0:
                    allzero = False
                    break
            if not allzero:
                break
        zero[e] = allzero
        if moved:
            folded += 1
    return folded


@njit(cache=True)
def _fix_kernel(K, SO, alive, ncost, eu, ev, toff, tab, fixed, contrib, dead):
    """Fold edges touching fixed nodes (``fixed[i]`` = its strategy or -1) into the other end's costs;
    an edge between two fixed nodes contributes a constant."""
    for e in range(len(eu)):
        u = eu[e]
        v = ev[e]
        fu = fixed[u]
        fv = fixed[v]
        if fu < 0 and fv < 0:
            continue
        dead[e] = True
        kv = K[v]
        off = toff[e]
        if fu >= 0 and fv >= 0:
            contrib[e] = tab[off + fu * kv + fv]
        elif fu >= 0:
            for q in range(kv):
                if alive[SO[v] + q]:
                    ncost[SO[v] + q] = _add(ncost[SO[v] + q], tab[off + fu * kv + q])
        else:
            for p in range(K[u]):
                if alive[SO[u] + p]:
                    ncost[SO[u] + p] = _add(ncost[SO[u] + p], tab[off + p * kv + fv])


@njit(cache=True)
def _le(a, b):
    """a <= b with forbidden as +infinity."""
    if b == FORBIDDEN:
        return True
    if a == FORBIDDEN:
        return False
    return a <= b


@njit(cache=True)
def _dominance_kernel(K, SO, alive, ncost, eligible, inc_off, inc_edge, eu, ev, toff, tab,
                      niv_off, niv, uoff, use, out):
    """Mark in ``out`` every alive strategy dominated by another alive strategy of the same node.

    p2 dominates p when it is no worse in node cost, in usage on every owned interval and in every
    incident edge row (over alive partners; forbidden = +inf), and is better somewhere or has the
    lower index. That relation is a strict order, so removing every dominated strategy at once keeps
    a dominating one. Returns the number of exact duplicates among the marked.
    """
    dups = 0
    n = len(K)
    for i in range(n):
        if not eligible[i]:
            continue
        k = K[i]
        si = SO[i]
        for p in range(k):
            if not alive[si + p]:
                continue
            for p2 in range(k):
                if p2 == p or not alive[si + p2]:
                    continue
                c = ncost[si + p]
                c2 = ncost[si + p2]
                if not _le(c2, c):
                    continue
                equal = c2 == c
                ok = True
                for t in range(niv_off[i], niv_off[i + 1]):
                    j = niv[t]
                    a = use[uoff[j] + p2]
                    b = use[uoff[j] + p]
                    if a > b:
                        ok = False
                        break
                    if a != b:
                        equal = False
                if not ok:
                    continue
                for t in range(inc_off[i], inc_off[i + 1]):
                    e = inc_edge[t]
                    u = eu[e]
                    v = ev[e]
                    kv = K[v]
                    off = toff[e]
                    if u == i:
                        sv = SO[v]
                        for q in range(kv):
                            if alive[sv + q]:
                                a = tab[off + p2 * kv + q]
                                b = tab[off + p * kv + q]
                                if not _le(a, b):
                                    ok = False
                                    break
                                if a != b:
                                    equal = False
                    else:
                        su = SO[u]
                        for q in range(K[u]):
                            if alive[su + q]:
                                a = tab[off + q * kv + p2]
                                b = tab[off + q * kv + p]
                                if not _le(a, b):
                                    ok = False
                                    break
                                if a != b:
                                    equal = False
                    if not ok:
                        break
                if ok and (not equal or p2 < p):
                    out[si + p] = True
                    if equal:
                        dups += 1
                    break
    return dups


# ============================================================================================ helpers
def _addv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Absorbing elementwise addition (numpy)."""
    return np.where((a == _F) | (b == _F), _F, a + b)


def _segment_fill_index(offsets: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR rows of the given lengths: (row of each slot, position of each slot within its row)."""
    total = int(counts.sum())
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    within = np.arange(total, dtype=np.int64) - offsets[:-1][rows]
    return rows, within


def _magnitude(problem: Problem) -> int:
    """Sum over nodes and edges of the largest finite cost magnitude (exact)."""
    total = 0
    for vals, offs in ((problem.node_costs, problem.strategy_offsets),
                       (problem.edge_costs, problem.edge_cost_offsets)):
        if len(vals) == 0:
            continue
        mag = np.where(vals == _F, 0, np.abs(vals))
        mag = np.where(vals == np.iinfo(np.int64).min, INT64_MAX, mag)  # |int64 min| does not fit
        counts = np.diff(offs)
        nz = counts > 0
        total += exact_sum(np.maximum.reduceat(mag, offs[:-1][nz]) if nz.any() else mag[:0])
    return total


def _sizes(problem: Problem) -> dict:
    counts = problem.strategy_counts
    return {
        "nodes": problem.num_nodes,
        "strategies": int(counts.sum()),
        "edges": problem.num_edges,
        "time_points": int(len(problem.time_points)),
        "free_nodes": int(np.count_nonzero(counts > 1)),
        "intervals": problem.num_intervals,
        "edge_entries": int(len(problem.edge_costs)),
    }


# ============================================================================================ state
@dataclass
class _Chunk:
    """Expansion records appended together: ``x[nodes] = table[off + x[d1] * s1 + x[d2]]``.

    Dependencies are original nodes whose strategy is known when the chunk is replayed (chunks are
    replayed newest first); the sentinel node ``n`` always holds 0.
    """

    nodes: np.ndarray
    d1: np.ndarray
    s1: np.ndarray
    d2: np.ndarray
    off: np.ndarray
    table: np.ndarray


class _State:
    """The working instance. Node ids stay the original ones and every table keeps each node's
    original strategy numbering; removed strategies are only masked (``alive``) until the final build."""

    def __init__(self, problem: Problem, sw: dict, counts: dict) -> None:
        self.P = problem
        self.sw = sw
        self.c = counts
        n = problem.num_nodes
        self.n = n
        self.K = np.array(problem.strategy_counts, dtype=np.int64)
        self.SO = np.array(problem.strategy_offsets, dtype=np.int64)
        self.alive = np.ones(len(problem.node_costs), dtype=np.bool_)
        self.ncost = np.array(problem.node_costs, dtype=np.int64)
        self.active = np.ones(n, dtype=np.bool_)
        self.pinned = np.zeros(n, dtype=np.bool_)
        self.offset = 0
        self.chunks: list[_Chunk] = []
        # intervals (only those still owned by active nodes and possibly relevant)
        self.iv_start = np.array(problem.interval_start, dtype=np.int64)
        self.iv_end = np.array(problem.interval_end, dtype=np.int64)
        self.iv_owner = np.array(problem.interval_node, dtype=np.int64)
        self.iv_uoff = np.array(problem.interval_usage_offsets, dtype=np.int64)
        self.iv_use = np.array(problem.interval_usages, dtype=np.int64)
        # usage moved into the capacity profile (fixed nodes, constant intervals)
        self.fx_start: list[np.ndarray] = []
        self.fx_end: list[np.ndarray] = []
        self.fx_use: list[np.ndarray] = []
        # binary edges between distinct active nodes, tables over original strategy numbering
        self.eu = np.zeros(0, dtype=np.int64)
        self.ev = np.zeros(0, dtype=np.int64)
        self.toff = np.zeros(1, dtype=np.int64)
        self.tab = np.zeros(0, dtype=np.int64)
        self.hyper: list[tuple[np.ndarray, np.ndarray]] = []  # (nodes, table with one axis per node)
        self.time_info: dict | None = None
        self.combine = True  # set by normalise(): False when the magnitude guard tripped
        # The judge checks memory from the first start of a non-empty interval on (see
        # Problem.time_points): capacity before it, even negative, binds nothing.
        nonempty = problem.interval_end > problem.interval_start
        self.t0 = int(problem.interval_start[nonempty].min()) if nonempty.any() else None

    # ------------------------------------------------------------------ small utilities
    def count(self, key: str, k: int) -> None:
        self.c[key] = self.c.get(key, 0) + int(k)

    def domain(self, i: int) -> np.ndarray:
        return np.flatnonzero(self.alive[self.SO[i]:self.SO[i] + self.K[i]])

    def alive_counts(self) -> np.ndarray:
        seg = np.repeat(np.arange(self.n), self.K)
        return np.bincount(seg[self.alive], minlength=self.n)

    def table(self, e: int) -> np.ndarray:
        return self.tab[self.toff[e]:self.toff[e + 1]].reshape(self.K[self.eu[e]], self.K[self.ev[e]])

    def incidence(self) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.eu)
        ends = np.concatenate([self.eu, self.ev])
        edges = np.concatenate([np.arange(m), np.arange(m)])
        order = np.argsort(ends, kind="stable")
        off = offsets_from_counts(np.bincount(ends, minlength=self.n))
        return off, edges[order].astype(np.int64)

    def add_chunk(self, nodes, d1, s1, d2, off, table) -> None:
        if len(nodes):
            self.chunks.append(_Chunk(*(np.asarray(a, dtype=np.int64) for a in
                                        (nodes, d1, s1, d2, off, table))))

    def set_edges(self, eu, ev, tables_flat, sizes) -> None:
        self.eu = np.asarray(eu, dtype=np.int64)
        self.ev = np.asarray(ev, dtype=np.int64)
        self.toff = offsets_from_counts(np.asarray(sizes, dtype=np.int64))
        self.tab = np.ascontiguousarray(tables_flat, dtype=np.int64)

    def keep_edges(self, keep: np.ndarray, extra: list[tuple[int, int, np.ndarray]] = ()) -> None:
        """Keep the edges flagged in ``keep`` and append ``extra`` (u, v, table) edges."""
        sizes = np.diff(self.toff)
        if not keep.all():
            slot_keep = np.repeat(keep, sizes)
            tab = self.tab[slot_keep]
            eu, ev, sz = self.eu[keep], self.ev[keep], sizes[keep]
        else:
            tab, eu, ev, sz = self.tab, self.eu, self.ev, sizes
        if extra:
            eu = np.concatenate([eu, [x[0] for x in extra]])
            ev = np.concatenate([ev, [x[1] for x in extra]])
            sz = np.concatenate([sz, [x[2].size for x in extra]])
            tab = np.concatenate([tab] + [x[2].ravel() for x in extra])
        self.set_edges(eu, ev, tab, sz)

    def kill_forbidden(self, key: str) -> int:
        if not self.sw["forbidden"]:
            return 0
        bad = self.alive & (self.ncost == _F)
        k = int(np.count_nonzero(bad))
        if k:
            self.alive[bad] = False
            self.count(key, k)
            self.check_domains()
        return k

    def check_domains(self) -> None:
        empty = np.flatnonzero(self.active & (self.alive_counts() == 0))
        if len(empty):
            i = int(empty[0])
            raise _Infeasible(f"node {i}: every strategy is forbidden (after folding the nodes and "
                              f"edges reduced into it, no strategy avoids a forbidden choice)")

    def fixed_usage(self, starts, ends, uses) -> None:
        keep = (ends > starts) & (uses != 0)
        if keep.any():
            self.fx_start.append(starts[keep])
            self.fx_end.append(ends[keep])
            self.fx_use.append(uses[keep])

    # ------------------------------------------------------------------ normalisation
    def normalise(self, combine: bool) -> None:
        """Binary edges between distinct nodes go to the flat store; repeated nodes are folded onto
        the diagonal; arity-1 edges into node costs, arity-0 into the offset; arity >= 3 become
        hyperedges (their nodes are pinned). Without ``combine`` (magnitude guard) anything but a
        plain binary edge is kept as a hyperedge, untouched."""
        P = self.P
        self.combine = combine
        if np.any(self.K == 0):
            i = int(np.flatnonzero(self.K == 0)[0])
            raise _Infeasible(f"node {i} has no strategies")
        arity = np.asarray(P.edge_arity)
        starts = P.edge_node_offsets[:-1]
        plain = arity == 2
        if plain.any():
            first = P.edge_nodes[starts[plain]]
            second = P.edge_nodes[starts[plain] + 1]
            distinct = first != second
            idx = np.flatnonzero(plain)[distinct]
            plain = np.zeros_like(plain)
            plain[idx] = True
        sizes = np.diff(P.edge_cost_offsets)
        slot = np.repeat(plain, sizes)
        eu = P.edge_nodes[starts[plain]]
        ev = P.edge_nodes[starts[plain] + 1]
        self.set_edges(eu, ev, P.edge_costs[slot], sizes[plain])
        extra_u, extra_v, extra_t = [], [], []
        for e in np.flatnonzero(~plain).tolist():
            nodes = P.nodes_of_edge(e).astype(np.int64)
            table = np.array(P.edge_table(e), dtype=np.int64)
            if not combine:
                self.hyper.append((nodes, table))
                self.pinned[nodes] = True
                continue
            uniq = list(dict.fromkeys(nodes.tolist()))
            if len(uniq) < len(nodes):
                grids = np.meshgrid(*[np.arange(self.K[v]) for v in uniq], indexing="ij")
                index = tuple(grids[uniq.index(v)] for v in nodes.tolist())
                table = table[index] if len(uniq) else table
                self.count("diagonal_edges", 1)
            if len(uniq) == 0:
                value = int(table.reshape(-1)[0])
                if value == _F:
                    raise _Infeasible(f"edge {e} names no node and its only entry is forbidden")
                self.offset += value
            elif len(uniq) == 1:
                s = self.SO[uniq[0]]
                self.ncost[s:s + self.K[uniq[0]]] = _addv(self.ncost[s:s + self.K[uniq[0]]],
                                                          table.reshape(-1))
                self.count("unary_edges", 1)
            elif len(uniq) == 2:
                extra_u.append(uniq[0])
                extra_v.append(uniq[1])
                extra_t.append(table)
            else:
                self.hyper.append((np.array(uniq, dtype=np.int64), table))
                self.pinned[uniq] = True
        if extra_u:
            self.keep_edges(np.ones(len(self.eu), dtype=bool), list(zip(extra_u, extra_v, extra_t)))

    # ------------------------------------------------------------------ forbidden + arc consistency
    def remove_forbidden(self) -> None:
        bad = self.alive & (self.ncost == _F)
        self.alive[bad] = False
        self.count("forbidden_strategies", int(np.count_nonzero(bad)))
        empty = np.flatnonzero(self.active & (self.alive_counts() == 0))
        if len(empty):
            raise _Infeasible(f"node {int(empty[0])}: every strategy has node cost 10**18")

    def arc(self) -> bool:
        total = 0
        while True:
            off, inc = self.incidence()
            removed, node, edge = _ac_kernel(self.K, self.SO, self.alive, self.eu, self.ev, self.toff,
                                             self.tab, off, inc)
            total += removed
            if node >= 0:
                other = int(self.ev[edge] if self.eu[edge] == node else self.eu[edge])
                self.count("arc_consistency_strategies", total)
                raise _Infeasible(
                    f"node {int(node)}: arc consistency leaves no strategy (each is forbidden or has "
                    f"no allowed partner on its edge to node {other})")
            hyper_removed = self.hyper_arc()
            total += hyper_removed
            if hyper_removed == 0:
                break
        self.count("arc_consistency_strategies", total)
        return total > 0

    def hyper_arc(self) -> int:
        removed = 0
        for nodes, table in self.hyper:
            if len(set(nodes.tolist())) < len(nodes):
                continue
            allowed = table != _F
            for ax, v in enumerate(nodes.tolist()):
                shape = [1] * len(nodes)
                shape[ax] = -1
                allowed = allowed & self.alive[self.SO[v]:self.SO[v] + self.K[v]].reshape(shape)
            for ax, v in enumerate(nodes.tolist()):
                other = tuple(a for a in range(len(nodes)) if a != ax)
                sup = allowed.any(axis=other)
                seg = self.alive[self.SO[v]:self.SO[v] + self.K[v]]
                lost = seg & ~sup
                if lost.any():
                    removed += int(lost.sum())
                    seg[lost] = False
                    if not seg.any():
                        raise _Infeasible(f"node {v}: arc consistency leaves no strategy (each has "
                                          f"no allowed tuple on its hyperedge {nodes.tolist()})")
        return removed

    # ------------------------------------------------------------------ edge tables
    def edge_tables(self) -> bool:
        changed = False
        m = len(self.eu)
        if m:
            lo = np.minimum(self.eu, self.ev)
            hi = np.maximum(self.eu, self.ev)
            order = np.lexsort((hi, lo))
            lo_s, hi_s = lo[order], hi[order]
            new_group = np.ones(m, dtype=bool)
            new_group[1:] = (lo_s[1:] != lo_s[:-1]) | (hi_s[1:] != hi_s[:-1])
            ngroups = int(new_group.sum())
            if ngroups < m:
                group = np.cumsum(new_group) - 1
                glo, ghi = lo_s[new_group], hi_s[new_group]
                gtoff = offsets_from_counts(self.K[glo] * self.K[ghi])
                new_tab = np.empty(int(gtoff[-1]), dtype=np.int64)
                _sum_parallel_kernel(self.K, self.eu, self.ev, self.toff, self.tab, order,
                                     group.astype(np.int64), glo, ghi, gtoff, new_tab)
                self.count("parallel_edges_summed", m - ngroups)
                self.set_edges(glo, ghi, new_tab, np.diff(gtoff))
                changed = True
        if len(self.eu):
            zero = np.zeros(len(self.eu), dtype=np.bool_)
            folded = _fold_kernel(self.K, self.SO, self.alive, self.ncost, self.eu, self.ev, self.toff,
                                  self.tab, zero)
            self.count("edges_folded", folded)
            changed |= folded > 0
            if zero.any():
                self.count("zero_edges_deleted", int(zero.sum()))
                self.keep_edges(~zero)
                changed = True
        self.kill_forbidden("forbidden_after_folding")
        return changed

    # ------------------------------------------------------------------ single-strategy nodes
    def fix_nodes(self, nodes: np.ndarray, strategies: np.ndarray, key: str) -> None:
        """Fix ``nodes`` at ``strategies``: edges into neighbours' costs, cost to the offset, usage to
        the capacity profile; records constants for the expansion."""
        if len(nodes) == 0:
            return
        fixed = np.full(self.n, -1, dtype=np.int64)
        fixed[nodes] = strategies
        costs = self.ncost[self.SO[nodes] + strategies]
        if np.any(costs == _F):
            i = int(nodes[np.flatnonzero(costs == _F)[0]])
            raise _Infeasible(f"node {i} is left with a forbidden strategy only")
        if len(self.eu):
            contrib = np.zeros(len(self.eu), dtype=np.int64)
            dead = np.zeros(len(self.eu), dtype=np.bool_)
            _fix_kernel(self.K, self.SO, self.alive, self.ncost, self.eu, self.ev, self.toff, self.tab,
                        fixed, contrib, dead)
            if np.any(contrib == _F):
                e = int(np.flatnonzero(contrib == _F)[0])
                raise _Infeasible(f"nodes {int(self.eu[e])} and {int(self.ev[e])} are fixed to "
                                  f"strategies whose edge entry is forbidden")
            self.offset += exact_sum(contrib)
            if dead.any():
                self.keep_edges(~dead)
        self.offset += exact_sum(costs)
        # intervals of the fixed nodes: constant usage
        own = np.flatnonzero(fixed[self.iv_owner] >= 0)
        if len(own):
            s = fixed[self.iv_owner[own]]
            self.fixed_usage(self.iv_start[own], self.iv_end[own], self.iv_use[self.iv_uoff[own] + s])
            self.drop_intervals(fixed[self.iv_owner] >= 0)
        self.active[nodes] = False
        self.add_chunk(nodes, np.full(len(nodes), self.n), np.zeros(len(nodes)),
                       np.full(len(nodes), self.n), np.arange(len(nodes)), strategies)
        self.count(key, len(nodes))
        self.kill_forbidden("forbidden_after_folding")

    def single(self) -> bool:
        counts = self.alive_counts()
        cand = np.flatnonzero(self.active & ~self.pinned & (counts == 1))
        if len(cand) >= int(self.active.sum()):
            cand = cand[1:]  # keep one node: the reduced problem is never empty
        if len(cand) == 0:
            return False
        is_cand = np.zeros(self.n, dtype=bool)
        is_cand[cand] = True
        seg = np.repeat(np.arange(self.n), self.K)
        slots = np.flatnonzero(self.alive & is_cand[seg])  # exactly one per candidate, by node
        self.fix_nodes(seg[slots], slots - self.SO[seg[slots]], "single_strategy_nodes")
        return True

    # ------------------------------------------------------------------ functional merges
    def merge(self) -> bool:
        if len(self.eu) == 0:
            return False
        src_ok = self.active.copy()
        dst_ok = self.active & ~self.pinned
        asrc, adst, amoff, mflat = _functional_kernel(self.K, self.SO, self.alive, self.eu, self.ev,
                                                      self.toff, self.tab, src_ok, dst_ok)
        if len(asrc) == 0:
            return False
        root_of, parent, order = _forest_kernel(self.n, self.active, asrc, adst)
        members = order[root_of[order] != order]
        if len(members) == 0:
            return False
        Moff = np.zeros(self.n, dtype=np.int64)
        lengths = self.K[root_of[order]]
        starts = offsets_from_counts(lengths)
        Moff[order] = starts[:-1]
        M = np.empty(int(starts[-1]), dtype=np.int64)
        _compose_kernel(self.K, self.SO, self.alive, root_of, parent, order, asrc, amoff, mflat, Moff, M)
        ru, rv = root_of[self.eu], root_of[self.ev]
        internal = ru == rv
        sizes = np.where(internal, 0, self.K[ru] * self.K[rv])
        new_toff = offsets_from_counts(sizes)
        new_tab = np.empty(int(new_toff[-1]), dtype=np.int64)
        _merge_kernel(self.K, self.SO, self.ncost, order, root_of, Moff, M, self.eu, self.ev, self.toff,
                      self.tab, new_toff, new_tab)
        self.count("functional_internal_edges", int(internal.sum()))
        keep = ~internal
        self.set_edges(ru[keep], rv[keep], new_tab, sizes[keep])
        # intervals move to the roots, usages mapped through the composed maps
        if len(self.iv_owner):
            owner = self.iv_owner
            new_owner = root_of[owner]
            counts = self.K[new_owner]
            newoff = offsets_from_counts(counts)
            rows, within = _segment_fill_index(newoff, counts)
            mp = M[Moff[owner[rows]] + within]
            use = np.where(mp >= 0, self.iv_use[self.iv_uoff[:-1][rows] + np.maximum(mp, 0)], 0)
            self.iv_owner, self.iv_uoff, self.iv_use = new_owner, newoff, use
        self.active[members] = False
        self.add_chunk(members, root_of[members], np.ones(len(members)), np.full(len(members), self.n),
                       Moff[members], M)
        self.count("functional_merged_nodes", len(members))
        self.count("functional_passes", 1)
        self.kill_forbidden("functional_conflict_strategies")
        return True

    # ------------------------------------------------------------------ intervals and time
    def drop_intervals(self, drop: np.ndarray) -> None:
        if not drop.any():
            return
        keep = ~drop
        counts = np.diff(self.iv_uoff)
        slot = np.repeat(keep, counts)
        self.iv_use = self.iv_use[slot]
        self.iv_uoff = offsets_from_counts(counts[keep])
        self.iv_start, self.iv_end, self.iv_owner = (self.iv_start[keep], self.iv_end[keep],
                                                     self.iv_owner[keep])

    def usage_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per interval, the least and greatest usage over its owner's alive strategies."""
        J = len(self.iv_owner)
        if J == 0:
            z = np.zeros(0, dtype=np.int64)
            return z, z
        counts = np.diff(self.iv_uoff)
        rows, within = _segment_fill_index(self.iv_uoff, counts)
        ok = self.alive[self.SO[self.iv_owner[rows]] + within]
        lo = np.where(ok, self.iv_use, INT64_MAX)
        hi = np.where(ok, self.iv_use, np.iinfo(np.int64).min)
        return np.minimum.reduceat(lo, self.iv_uoff[:-1]), np.maximum.reduceat(hi, self.iv_uoff[:-1])

    def intervals(self) -> bool:
        """Drop empty intervals, move constant ones into the capacity profile (memory_free), keep only
        intervals that touch a kept time segment. Returns whether anything changed."""
        changed = False
        empty = self.iv_end <= self.iv_start
        if empty.any():
            self.count("empty_intervals", int(empty.sum()))
            self.drop_intervals(empty)
        umin, umax = self.usage_range()
        if self.sw["memory_free"] and len(umin):
            const = umin == umax
            if const.any():
                self.fixed_usage(self.iv_start[const], self.iv_end[const], umin[const])
                self.count("constant_intervals", int(const.sum()))
                self.drop_intervals(const)
                umin, umax = umin[~const], umax[~const]
                changed = True
        info = self.time_analysis(umin, umax)
        while not info["relevant"].all():  # fewer intervals can merge segments: repeat until stable
            irrelevant = ~info["relevant"]
            self.count("irrelevant_intervals", int(irrelevant.sum()))
            self.drop_intervals(irrelevant)
            umin, umax = umin[~irrelevant], umax[~irrelevant]
            changed = True
            info = self.time_analysis(umin, umax)
        self.time_info = info
        return changed

    def time_analysis(self, umin: np.ndarray, umax: np.ndarray) -> dict:
        cap = self.P.capacity
        fs = np.concatenate(self.fx_start) if self.fx_start else np.zeros(0, dtype=np.int64)
        fe = np.concatenate(self.fx_end) if self.fx_end else np.zeros(0, dtype=np.int64)
        fu = np.concatenate(self.fx_use) if self.fx_use else np.zeros(0, dtype=np.int64)
        s, e = self.iv_start, self.iv_end
        # Segments [pts[k], pts[k+1]) cover every time from t0 on: the last point gets a segment too
        # (a capacity breakpoint after every interval has ended is still checked by the judge).
        t0 = [] if self.t0 is None else [self.t0]
        pts = np.unique(np.concatenate([s, e, fs, fe, cap.times, np.array(t0, dtype=np.int64)]))
        if len(pts):
            pts = np.append(pts, pts[-1] + 1)
        nseg = max(len(pts) - 1, 0)
        lo = np.searchsorted(pts, s)
        hi = np.searchsorted(pts, e)
        if nseg == 0:
            return {"pts": pts, "kept": np.zeros(0, bool), "R": np.zeros(0, np.int64), "lo": lo, "hi": hi,
                    "relevant": np.zeros(len(s), bool)}
        capv, limited = cap.at(pts[:-1])
        limited = limited & (pts[:-1] >= self.t0) if self.t0 is not None else np.zeros(nseg, bool)
        flo, fhi = np.searchsorted(pts, fs), np.searchsorted(pts, fe)
        W = range_sum(lo, hi, umax, nseg)
        Wmin = range_sum(lo, hi, umin, nseg)
        Fx = range_sum(flo, fhi, fu, nseg)
        if W.dtype == object or Fx.dtype == object or Wmin.dtype == object or (len(fu) and fu.min() < 0):
            R = capv.astype(object) - Fx.astype(object)
        else:
            R = capv - Fx  # capacity <= INT64_MAX and Fx >= 0: cannot wrap
        over = limited & np.asarray(Wmin > R, dtype=bool)
        if over.any():
            k = int(np.flatnonzero(over)[0])
            raise _Infeasible(
                f"memory: at time {int(pts[k])} even the least usage of every live interval "
                f"({int(Wmin[k]) + int(Fx[k])}) exceeds the capacity ({int(capv[k])})")
        nonneg = (len(umin) == 0 or umin.min() >= 0)
        if self.sw["time_points"]:
            relevant_seg = limited & np.asarray(W > R, dtype=bool)
            kept = relevant_seg
            if nonneg and nseg > 1:
                ns = np.bincount(lo, minlength=nseg + 1)
                ne = np.bincount(hi, minlength=nseg + 1)
                k = np.arange(nseg - 1)
                Rk, Rk1 = R[k], R[k + 1]
                dom = np.zeros(nseg, dtype=bool)
                # segment k inside segment k+1 (nothing ends between them), no more capacity there
                dom[k] |= limited[k + 1] & (ne[k + 1] == 0) & np.asarray(Rk >= Rk1, dtype=bool)
                # segment k+1 inside segment k (nothing starts between them), no more capacity there;
                # equal live sets and capacities keep the later one (dropped above as k)
                dom[k + 1] |= limited[k] & (ns[k + 1] == 0) & np.asarray(Rk1 >= Rk, dtype=bool) & (
                    (ne[k + 1] > 0) | np.asarray(Rk1 > Rk, dtype=bool))
                kept = relevant_seg & ~dom
        else:
            live = range_sum(lo, hi, np.ones(len(lo), dtype=np.int64), nseg) > 0
            kept = limited & live
        ps = np.zeros(nseg + 1, dtype=np.int64)
        np.cumsum(kept, out=ps[1:])
        relevant = (ps[hi] - ps[lo]) > 0
        return {"pts": pts, "kept": kept, "R": R, "Wmin": Wmin, "lo": lo, "hi": hi, "relevant": relevant,
                "ps": ps}

    # ------------------------------------------------------------------ memory bounds
    def memory_bounds(self) -> bool:
        """Remove strategies that overflow memory even with every other live interval at its least
        usage. Uses the analysis of the last :meth:`intervals` call (same domains)."""
        info = self.time_info
        if info is None or "ps" not in info or len(self.iv_owner) == 0:
            return False
        kept, R, Wmin = info["kept"], info["R"], info["Wmin"]
        if R.dtype == object or Wmin.dtype == object or not kept.any() or self.iv_use.min() < 0:
            return False  # exact int64 slack needs non-negative usages (as in every contest file)
        nseg = len(kept)
        slack = np.where(kept, R - Wmin, INT64_MAX)  # kept: Wmin <= R, so no wrap
        # sparse table of range minima over segments
        levels = [slack]
        while (1 << len(levels)) <= nseg:
            prev, half = levels[-1], 1 << (len(levels) - 1)
            levels.append(np.minimum(prev[:-half], prev[half:]))
        lo, hi = info["lo"], info["hi"]
        length = hi - lo
        ok = length > 0
        level = np.zeros(len(lo), dtype=np.int64)
        level[ok] = np.floor(np.log2(length[ok])).astype(np.int64)
        tight = np.full(len(lo), INT64_MAX, dtype=np.int64)
        for lv in np.unique(level[ok]).tolist():
            sel = ok & (level == lv)
            table = levels[lv]
            tight[sel] = np.minimum(table[lo[sel]], table[hi[sel] - (1 << lv)])
        umin, _ = self.usage_range()
        counts = np.diff(self.iv_uoff)
        rows, within = _segment_fill_index(self.iv_uoff, counts)
        slot = self.SO[self.iv_owner[rows]] + within
        extra = self.iv_use - umin[rows]  # >= 0 on alive slots
        bad = self.alive[slot] & (tight[rows] < INT64_MAX) & (extra > tight[rows])
        if not bad.any():
            return False
        dead = np.unique(slot[bad])
        self.alive[dead] = False
        self.count("memory_bound_strategies", len(dead))
        empty = np.flatnonzero(self.active & (self.alive_counts() == 0))
        if len(empty):
            raise _Infeasible(f"memory: every strategy of node {int(empty[0])} overflows the capacity "
                              f"at some time even with every other interval at its least usage")
        return True

    # ------------------------------------------------------------------ dominance
    def dominance(self) -> bool:
        counts = self.alive_counts()
        eligible = self.active & ~self.pinned & (counts > 1)
        if not eligible.any():
            return False
        inc_off, inc = self.incidence()
        order = np.argsort(self.iv_owner, kind="stable").astype(np.int64)
        niv_off = offsets_from_counts(np.bincount(self.iv_owner, minlength=self.n))
        out = np.zeros(len(self.alive), dtype=np.bool_)
        dups = _dominance_kernel(self.K, self.SO, self.alive, self.ncost, eligible, inc_off, inc,
                                 self.eu, self.ev, self.toff, self.tab, niv_off, order, self.iv_uoff,
                                 self.iv_use, out)
        k = int(out.sum())
        if k == 0:
            return False
        self.alive[out] = False
        self.count("duplicate_strategies", dups)
        self.count("dominated_strategies", k - dups)
        return True

    # ------------------------------------------------------------------ memory-free elimination
    def eliminate(self) -> bool:
        n_active = int(self.active.sum())
        if n_active <= 1:
            return False
        has_iv = np.zeros(self.n, dtype=bool)
        has_iv[self.iv_owner] = True
        cand = self.active & ~self.pinned & ~has_iv
        if not cand.any():
            return False
        m = len(self.eu)
        # distinct neighbours per node
        a = np.concatenate([self.eu, self.ev])
        b = np.concatenate([self.ev, self.eu])
        pairs = np.unique(np.stack([a, b]), axis=1) if m else np.zeros((2, 0), dtype=np.int64)
        deg = np.bincount(pairs[0], minlength=self.n)
        pairset = set(zip(pairs[0].tolist(), pairs[1].tolist()))
        cand &= deg <= 2
        if not cand.any():
            return False
        inc_off, inc = self.incidence()
        alive_n = self.alive_counts()
        touched = np.zeros(self.n, dtype=bool)
        dead = np.zeros(m, dtype=bool)
        extra: list[tuple[int, int, np.ndarray]] = []
        rec: dict[int, list] = {0: [], 1: [], 2: []}
        for w in np.flatnonzero(cand).tolist():
            if touched[w]:
                continue
            if n_active <= 1:
                break
            edges = inc[inc_off[w]:inc_off[w + 1]]
            nbs = sorted({int(self.ev[e]) if self.eu[e] == w else int(self.eu[e]) for e in edges.tolist()})
            sw, kw = self.SO[w], self.K[w]
            cw = self.ncost[sw:sw + kw].copy()
            cw[~self.alive[sw:sw + kw]] = _F
            if len(nbs) == 0:
                s = int(np.argmin(cw))
                if cw[s] == _F:
                    raise _Infeasible(f"node {w}: every strategy is forbidden")
                self.offset += int(cw[s])
                rec[0].append((w, s))
            else:
                mats = {}
                for e in edges.tolist():
                    t = self.table(e)
                    other = int(self.ev[e]) if self.eu[e] == w else int(self.eu[e])
                    t = t.T if self.eu[e] == w else t  # shape (K_other, K_w)
                    mats[other] = _addv(mats[other], t) if other in mats else t
                if len(nbs) == 1:
                    u = nbs[0]
                    C = _addv(mats[u], np.broadcast_to(cw, mats[u].shape))
                    best = np.argmin(C, axis=1)
                    minv = C[np.arange(C.shape[0]), best]
                    su = self.SO[u]
                    rows = self.alive[su:su + self.K[u]]
                    self.ncost[su:su + self.K[u]][rows] = _addv(self.ncost[su:su + self.K[u]][rows],
                                                                minv[rows])
                    rec[1].append((w, u, best))
                else:
                    ua, ub = nbs
                    ka, kb = int(alive_n[ua]), int(alive_n[ub])
                    kk = int(alive_n[w])
                    exists = (ua, ub) in pairset
                    if not exists and ka * kb > 2 * (ka * kk + kk * kb) + 16:
                        continue  # the new table would be much larger than the two it replaces
                    A = mats[ua]            # (Ka, Kw)
                    B = mats[ub].T          # (Kw, Kb)
                    mask = (A == _F)[:, :, None] | (cw == _F)[None, :, None] | (B == _F)[None, :, :]
                    tot = np.where(mask, _F, A[:, :, None] + cw[None, :, None] + B[None, :, :])
                    best = np.argmin(tot, axis=1)
                    minv = np.take_along_axis(tot, best[:, None, :], axis=1)[:, 0, :]
                    extra.append((ua, ub, minv))
                    rec[2].append((w, ua, ub, best))
            touched[w] = True
            touched[nbs] = True
            dead[edges] = True
            self.active[w] = False
            n_active -= 1
        done = len(rec[0]) + len(rec[1]) + len(rec[2])
        if done == 0:
            return False
        for w, s in rec[0]:
            self.add_chunk([w], [self.n], [0], [self.n], [0], [s])
        if rec[1]:
            nodes = [r[0] for r in rec[1]]
            tables = [r[2] for r in rec[1]]
            off = offsets_from_counts(np.array([len(t) for t in tables]))
            self.add_chunk(nodes, [r[1] for r in rec[1]], np.ones(len(nodes)), np.full(len(nodes), self.n),
                           off[:-1], np.concatenate(tables))
        if rec[2]:
            nodes = [r[0] for r in rec[2]]
            tables = [r[3].ravel() for r in rec[2]]
            off = offsets_from_counts(np.array([len(t) for t in tables]))
            self.add_chunk(nodes, [r[1] for r in rec[2]], [self.K[r[2]] for r in rec[2]],
                           [r[2] for r in rec[2]], off[:-1], np.concatenate(tables))
        self.count("memory_free_degree0", len(rec[0]))
        self.count("memory_free_degree1", len(rec[1]))
        self.count("memory_free_degree2", len(rec[2]))
        self.keep_edges(~dead, extra)
        self.kill_forbidden("forbidden_after_folding")
        return True

    # ------------------------------------------------------------------ final build
    def build(self) -> tuple[Problem, np.ndarray, np.ndarray, np.ndarray]:
        """The reduced problem, its node ids in the original, and the strategy map (CSR)."""
        P = self.P
        nid = np.flatnonzero(self.active).astype(np.int64)
        index = np.full(self.n + 1, -1, dtype=np.int64)
        index[nid] = np.arange(len(nid))
        seg = np.repeat(np.arange(self.n), self.K)
        local = np.arange(len(self.alive)) - self.SO[seg]
        keep_slot = self.alive & self.active[seg]
        dom_counts = np.bincount(seg[keep_slot], minlength=self.n)[nid]
        dom_off = offsets_from_counts(dom_counts)
        dom_flat = local[keep_slot].astype(np.int64)  # ordered by node id, then strategy
        node_costs = self.ncost[keep_slot]
        # strategy renumbering: original slot -> new local index (or -1)
        newloc = np.full(len(self.alive), -1, dtype=np.int64)
        newloc[keep_slot] = np.arange(int(keep_slot.sum())) - np.repeat(dom_off[:-1], dom_counts)
        # intervals
        info = self.time_info
        ps = info["ps"] if info is not None and "ps" in info else None
        J = len(self.iv_owner)
        if J and ps is not None:
            new_start = ps[info["lo"]]
            new_end = ps[info["hi"]]
            own = self.iv_owner
            counts = dom_counts[index[own]]
            uoff = offsets_from_counts(counts)
            rows, within = _segment_fill_index(uoff, counts)
            src = dom_flat[dom_off[index[own[rows]]] + within]
            usages = self.iv_use[self.iv_uoff[:-1][rows] + src]
            iv_node = index[own]
            order = np.argsort(iv_node, kind="stable")
            # keep intervals grouped by node (stable), re-laying the usage CSR accordingly
            counts_o = counts[order]
            uoff_o = offsets_from_counts(counts_o)
            rows_o, within_o = _segment_fill_index(uoff_o, counts_o)
            usages = usages[uoff[:-1][order][rows_o] + within_o]
            iv = (iv_node[order], new_start[order], new_end[order], uoff_o, usages)
            kept_R = info["R"][info["kept"]]
            values = np.array([int(x) for x in kept_R], dtype=np.int64) if kept_R.dtype == object \
                else kept_R.astype(np.int64)
            change = np.ones(len(values), dtype=bool)
            change[1:] = values[1:] != values[:-1]
            capacity = Capacity(np.flatnonzero(change).astype(np.int64), values[change])
        else:
            z = np.zeros(0, dtype=np.int64)
            iv = (z, z, z, np.zeros(1, dtype=np.int64), z)
            capacity = Capacity.unlimited()
        # edges: binary then hyper
        enodes, esizes, etabs = [], [], []
        if len(self.eu):
            ku = dom_counts[index[self.eu]]
            kv = dom_counts[index[self.ev]]
            sizes = ku * kv
            toff = offsets_from_counts(sizes)
            rows, within = _segment_fill_index(toff, sizes)
            e_of = rows
            p = within // kv[e_of]
            q = within % kv[e_of]
            src_p = dom_flat[dom_off[index[self.eu[e_of]]] + p]
            src_q = dom_flat[dom_off[index[self.ev[e_of]]] + q]
            flat = self.tab[self.toff[:-1][e_of] + src_p * self.K[self.ev[e_of]] + src_q]
            enodes.append(np.stack([index[self.eu], index[self.ev]], axis=1).ravel())
            esizes.append(sizes)
            etabs.append(flat)
        arities = [np.full(len(self.eu), 2, dtype=np.int64)]
        for nodes, table in self.hyper:
            doms = [self.domain(v) for v in nodes.tolist()]
            sub = table[np.ix_(*doms)] if len(doms) else table
            enodes.append(index[nodes])
            esizes.append(np.array([sub.size], dtype=np.int64))
            etabs.append(sub.ravel().astype(np.int64))
            arities.append(np.array([len(nodes)], dtype=np.int64))
        edge_nodes = np.concatenate(enodes) if enodes else np.zeros(0, dtype=np.int64)
        edge_costs = np.concatenate(etabs) if etabs else np.zeros(0, dtype=np.int64)
        sizes = np.concatenate(esizes) if esizes else np.zeros(0, dtype=np.int64)
        if self.combine and (np.any(node_costs > _F) or np.any(edge_costs > _F)):
            raise AssertionError("presolve produced a cost above 10**18: magnitude guard failed")
        reduced = Problem(
            name=P.name,
            strategy_offsets=dom_off,
            node_costs=node_costs,
            interval_node=iv[0],
            interval_start=iv[1],
            interval_end=iv[2],
            interval_usage_offsets=iv[3],
            interval_usages=iv[4],
            edge_node_offsets=offsets_from_counts(np.concatenate(arities)),
            edge_nodes=edge_nodes,
            edge_cost_offsets=offsets_from_counts(sizes),
            edge_costs=edge_costs,
            capacity=capacity,
            cost_offset=int(P.cost_offset) + int(self.offset),
        )
        return reduced, nid, dom_off, dom_flat


# ============================================================================================ API
@dataclass
class Presolved:
    """A presolved instance and the maps between its plans and the original's.

    ``reduced`` is ``None`` exactly when ``infeasible`` holds the proof that no plan of the original
    avoids forbidden choices and fits in memory.
    """

    original: Problem
    reduced: Problem | None
    infeasible: str | None
    report: dict
    _nid: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    _dom_off: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(1, dtype=np.int64))
    _dom_flat: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    _chunks: list = field(repr=False, default_factory=list)

    @property
    def offset(self) -> int | None:
        """The reduced problem's constant cost (``reduced.cost_offset``)."""
        return None if self.reduced is None else self.reduced.cost_offset

    def _require(self) -> Problem:
        if self.reduced is None:
            raise ValueError(f"the instance is infeasible ({self.infeasible}); there is no reduced plan")
        return self.reduced

    def expand(self, reduced_solution: object) -> np.ndarray:
        """The original plan (int64) of a plan of the reduced problem."""
        reduced = self._require()
        x = as_solution(reduced, reduced_solution)
        n = self.original.num_nodes
        full = np.zeros(n + 1, dtype=np.int64)  # slot n is the sentinel dependency (always 0)
        full[self._nid] = self._dom_flat[self._dom_off[:-1] + x]
        for ch in reversed(self._chunks):
            full[ch.nodes] = ch.table[ch.off + full[ch.d1] * ch.s1 + full[ch.d2]]
        return full[:n].copy()

    def restrict(self, original_solution: object) -> np.ndarray | None:
        """The reduced plan that expands to exactly ``original_solution``, or ``None`` if none does
        (the plan uses a removed strategy, or disagrees with a merged or eliminated node's choice)."""
        reduced = self._require()
        y = as_solution(self.original, original_solution)
        so = self.original.strategy_offsets
        counts = np.diff(self._dom_off)
        inv = np.full(len(self.original.node_costs), -1, dtype=np.int64)
        inv[np.repeat(so[self._nid], counts) + self._dom_flat] = (
            np.arange(len(self._dom_flat)) - np.repeat(self._dom_off[:-1], counts))
        x = inv[so[self._nid] + y[self._nid]]
        if np.any(x < 0):
            return None
        if len(x) != reduced.num_nodes or not np.array_equal(self.expand(x), y):
            return None
        return x

    def project(self, original_solution: object) -> np.ndarray:
        """A reduced plan close to ``original_solution``, for use as a hint (never fails).

        ``restrict`` gives the exact counterpart when one exists; otherwise each reduced node keeps
        its representative's choice when that strategy survived presolve, and else takes its
        remaining strategy of least usage (ties: lowest cost). The expansion may differ from the
        given plan (and cost more): this is a starting point for a search, not a translation.
        """
        exact = self.restrict(original_solution)
        if exact is not None:
            return exact
        reduced = self._require()
        y = as_solution(self.original, original_solution)
        so = self.original.strategy_offsets
        counts = np.diff(self._dom_off)
        inv = np.full(len(self.original.node_costs), -1, dtype=np.int64)
        inv[np.repeat(so[self._nid], counts) + self._dom_flat] = (
            np.arange(len(self._dom_flat)) - np.repeat(self._dom_off[:-1], counts))
        x = inv[so[self._nid] + y[self._nid]]
        missing = x < 0
        if np.any(missing):
            x[missing] = reduced.min_usage_strategies[missing]
        return x


def presolve(problem: Problem, *, forbidden: bool = True, arc_consistency: bool = True,
             functional: bool = True, edge_tables: bool = True, single: bool = True,
             dominance: bool = True, memory_free: bool = True, time_points: bool = True,
             memory_bounds: bool = True, max_rounds: int = 100) -> Presolved:
    """Reduce ``problem`` exactly; see the module docstring for the reductions and the guarantees."""
    t0 = _time.perf_counter()
    sw = {"forbidden": forbidden, "arc_consistency": arc_consistency, "functional": functional,
          "edge_tables": edge_tables, "single": single, "dominance": dominance,
          "memory_free": memory_free, "time_points": time_points, "memory_bounds": memory_bounds}
    counts: dict[str, int] = dict.fromkeys(COUNTERS, 0)
    report: dict[str, Any] = {"switches": dict(sw), "before": _sizes(problem), "reductions": counts}
    magnitude = _magnitude(problem)
    combine = magnitude < _GUARD
    report["magnitude_guard"] = not combine
    if not combine:  # folded sums could reach 10**18: keep only reductions that never add costs
        for key in ("functional", "edge_tables", "single", "memory_free"):
            sw[key] = False
    st = _State(problem, sw, counts)
    rounds = 0
    try:
        st.normalise(combine)
        if sw["forbidden"]:
            st.remove_forbidden()
        while rounds < max_rounds:
            rounds += 1
            changed = False
            if sw["arc_consistency"]:
                changed |= st.arc()
            if sw["edge_tables"]:
                changed |= st.edge_tables()
            if sw["single"]:
                changed |= st.single()
            if sw["functional"] and st.merge():
                continue  # domains changed shape: consistency and tables first
            changed |= st.intervals()
            if sw["memory_bounds"] and st.memory_bounds():
                changed = True
                continue  # fewer strategies: consistency, tables and the time analysis first
            if sw["dominance"]:
                changed |= st.dominance()
            if sw["memory_free"]:
                changed |= st.eliminate()
            if not changed:
                break
        st.intervals()
        reduced, nid, dom_off, dom_flat = st.build()
        infeasible = None
    except _Infeasible as exc:
        reduced, infeasible = None, str(exc)
        nid, dom_off, dom_flat = (np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                                  np.zeros(0, dtype=np.int64))
    report["rounds"] = rounds
    report["infeasible"] = infeasible
    report["after"] = _sizes(reduced) if reduced is not None else None
    report["offset"] = None if reduced is None else reduced.cost_offset
    report["seconds"] = round(_time.perf_counter() - t0, 3)
    return Presolved(problem, reduced, infeasible, report, nid, dom_off, dom_flat, st.chunks)


def warm_up() -> float:
    """Compile (or load from numba's cache) every presolve kernel on a tiny built-in instance, so the
    first real presolve in a process does not pay for it; returns the seconds spent."""
    t0 = _time.perf_counter()
    k = 3
    # a bijective chain 0-1-2-3 (functional merges), a parallel edge, a single-strategy node 4, a
    # memory-free node 5 with two neighbours, dominated strategies and a tight capacity
    costs = [[1, 2, 3], [2, 1, 0], [0, 0, 5], [4, 1, 1], [2], [1, 5, 3]]
    bij = [_F] * 9
    for p in range(k):
        bij[p * k + (p + 1) % k] = p
    edges = [[0, 1], [1, 2], [2, 3], [1, 0], [3, 4], [5, 0], [5, 3]]
    tables = [bij, bij, bij, [1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3], [3, 1, 2, 0, 5, 1, 2, 2, 2],
              [0, 1, 2, 1, 0, 1, 2, 1, 0]]
    counts = np.array([len(c) for c in costs])
    problem = Problem(
        name="warm-up",
        strategy_offsets=offsets_from_counts(counts),
        node_costs=np.array([c for row in costs for c in row]),
        interval_node=np.arange(6),
        interval_start=np.array([0, 1, 2, 3, 0, 0]),
        interval_end=np.array([2, 3, 4, 5, 5, 0]),
        interval_usage_offsets=offsets_from_counts(counts),
        interval_usages=np.array([1, 2, 3, 3, 2, 1, 1, 1, 1, 2, 2, 1, 4, 0, 0, 0]),
        edge_node_offsets=offsets_from_counts(np.full(len(edges), 2)),
        edge_nodes=np.array([v for e in edges for v in e]),
        edge_cost_offsets=offsets_from_counts(np.array([len(t) for t in tables])),
        edge_costs=np.array([x for t in tables for x in t]),
        capacity=Capacity.uniform(9),
    )
    presolve(problem)
    return _time.perf_counter() - t0


# ============================================================================================ files
def problem_to_extended(problem: Problem) -> dict:
    """The extended JSON document (see :func:`write_extended`)."""
    so, io_ = problem.strategy_offsets.tolist(), problem.interval_usage_offsets.tolist()
    costs = problem.node_costs.tolist()
    usages = problem.interval_usages.tolist()
    per_node_iv: list[list[list[int]]] = [[] for _ in range(problem.num_nodes)]
    per_node_use: list[list[list[int]]] = [[] for _ in range(problem.num_nodes)]
    for j, (i, s, e) in enumerate(zip(problem.interval_node.tolist(), problem.interval_start.tolist(),
                                      problem.interval_end.tolist())):
        per_node_iv[i].append([s, e])
        per_node_use[i].append(usages[io_[j]:io_[j + 1]])
    eo, co = problem.edge_node_offsets.tolist(), problem.edge_cost_offsets.tolist()
    en, ec = problem.edge_nodes.tolist(), problem.edge_costs.tolist()
    return {
        "format": EXTENDED_FORMAT,
        "problem": {
            "name": problem.name,
            "nodes": {
                "intervals": per_node_iv,
                "costs": [costs[a:b] for a, b in zip(so[:-1], so[1:])],
                "usages": per_node_use,
            },
            "edges": {
                "nodes": [en[a:b] for a, b in zip(eo[:-1], eo[1:])],
                "costs": [ec[a:b] for a, b in zip(co[:-1], co[1:])],
            },
            "capacity": {"times": problem.capacity.times.tolist(),
                         "values": problem.capacity.values.tolist()},
            "cost_offset": int(problem.cost_offset),
        },
    }


def write_extended(problem: Problem, path: str | Path) -> None:
    """Write ``problem`` in the extended JSON format (gzip when the name ends in ``.gz``).

    The contest format cannot hold several intervals per node, a capacity over time or a constant
    cost, so this extension does::

        {"format": "iopddl-portfolio-extended/1",
         "problem": {"name": ...,
                     "nodes": {"intervals": [[[start, end], ...] per node],
                               "costs": [[cost per strategy] per node],
                               "usages": [[[usage per strategy] per interval of the node] per node]},
                     "edges": {"nodes": [[u, v], ...], "costs": [[flat table], ...]},
                     "capacity": {"times": [t0, ...], "values": [c0, ...]},
                     "cost_offset": N}}

    Capacity ``values[k]`` holds from ``times[k]`` until ``times[k+1]``; before ``times[0]`` (or with
    empty lists) usage is unlimited. Everything else reads as in the contest format.
    """
    text = json.dumps(problem_to_extended(problem), separators=(",", ":"))
    p = Path(path)
    if p.name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)


def read_extended(path: str | Path) -> Problem:
    """Read a file written by :func:`write_extended` (no validation beyond the structure)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    if doc.get("format") != EXTENDED_FORMAT:
        raise ValueError(f"{path}: not an {EXTENDED_FORMAT} file")
    p = doc["problem"]
    nodes, edges = p["nodes"], p["edges"]
    costs = nodes["costs"]
    iv_node, iv_s, iv_e, iv_counts, iv_use = [], [], [], [], []
    for i, (ivs, uses) in enumerate(zip(nodes["intervals"], nodes["usages"])):
        for (s, e), u in zip(ivs, uses):
            iv_node.append(i)
            iv_s.append(s)
            iv_e.append(e)
            iv_counts.append(len(u))
            iv_use.extend(u)

    def arr(x: list) -> np.ndarray:
        return np.array(x, dtype=np.int64).reshape(-1)

    return Problem(
        name=p.get("name", Path(path).stem),
        strategy_offsets=offsets_from_counts(arr([len(c) for c in costs])),
        node_costs=arr([c for row in costs for c in row]),
        interval_node=arr(iv_node),
        interval_start=arr(iv_s),
        interval_end=arr(iv_e),
        interval_usage_offsets=offsets_from_counts(arr(iv_counts)),
        interval_usages=arr(iv_use),
        edge_node_offsets=offsets_from_counts(arr([len(x) for x in edges["nodes"]])),
        edge_nodes=arr([v for row in edges["nodes"] for v in row]),
        edge_cost_offsets=offsets_from_counts(arr([len(x) for x in edges["costs"]])),
        edge_costs=arr([c for row in edges["costs"] for c in row]),
        capacity=Capacity(arr(p["capacity"]["times"]), arr(p["capacity"]["values"])),
        cost_offset=int(p.get("cost_offset", 0)),
    )
