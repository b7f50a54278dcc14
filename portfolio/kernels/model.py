"""A compact, numba-friendly view of a :class:`~portfolio.problem.Problem`.

Why a separate view: the search kernels need derived arrays the immutable problem does not hold
(per-node incidences with orientation, usage split into disjoint time pieces, a forbidden-safe
cost copy, arc-consistent strategy domains), and numba wants them as flat contiguous arrays.

Conventions used by every kernel:

* A forbidden cost (exactly 10**18) becomes ``pen``, a big but safe penalty:
  ``pen * (nodes + edges)`` stays below 2**62, so no int64 sum over a whole plan can wrap. Finite
  costs are clamped below ``pen`` (only absurd values ever are). Exact costs always come from
  :func:`portfolio.evaluate.evaluate`.
* Binary edges (two distinct nodes, the contest case) get a fast path: for node ``i`` in edge
  ``e`` whose other node is ``o``, the entry for strategy ``s`` is
  ``ecost[eoff[e] + sol[o] * inc_mo + s * inc_ms]``. Every other edge (self-loop, hyperedge,
  repeated node) is "general" and recomputed by its mixed-radix formula, slower but exact.
* Memory: a node's usage is split into a constant base (its minimum over strategies, summed into
  ``base`` per time point) and a variable part held by *pieces*: disjoint ranges ``[lo, hi)`` of
  time point indices, each with a usage per strategy (the sum of the node's intervals covering
  it), so one move is one range-add per piece and its check is exact even when a merged node's
  intervals overlap.
* ``alive`` marks strategies that can appear in a plan without a forbidden choice: finite node
  cost and a finite partner on every binary edge (arc consistency to a fixpoint, by the presolve's
  routine :func:`portfolio.presolve.consistency.ac_kernel`). When that empties a domain the
  instance has no forbidden-free plan and ``alive`` falls back to all strategies.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .jit import kernel

from ..presolve.consistency import ac_kernel
from ..problem import FORBIDDEN, Problem, fold_repeated_nodes

CAP_UNLIMITED = 1 << 61
"""Capacity used where the problem has none: loads stay far below it, sums stay in int64."""

USAGE_BOUND = 1 << 59
"""Largest total usage the kernels accept (loads, capacities and deltas then never wrap)."""


class KModel(NamedTuple):
    """Arrays of one instance for the kernels (all int64 unless noted)."""

    soff: np.ndarray        # [n+1] strategy offsets
    ncost: np.ndarray       # [S] node cost, forbidden -> pen
    alive: np.ndarray       # [S] bool: strategy usable in a forbidden-free plan
    ecost: np.ndarray       # edge cost tables (flat, mixed radix), forbidden -> pen
    eoff: np.ndarray        # [E+1] table offsets
    enoff: np.ndarray       # [E+1] edge node offsets
    enodes: np.ndarray      # edge nodes
    emult: np.ndarray       # per edge slot: the stride of that slot's strategy in the table
    inc_off: np.ndarray     # [n+1] binary incidences of each node
    inc_edge: np.ndarray
    inc_other: np.ndarray   # the other node
    inc_mo: np.ndarray      # stride of the other node's strategy
    inc_ms: np.ndarray      # stride of this node's strategy
    ginc_off: np.ndarray    # [n+1] general edges of each node (listed once)
    ginc_edge: np.ndarray
    pc_off: np.ndarray      # [n+1] pieces of each node
    pc_lo: np.ndarray
    pc_hi: np.ndarray
    pc_uoff: np.ndarray     # piece p's usage for strategy s is pc_use[pc_uoff[p] + s]
    pc_use: np.ndarray
    base: np.ndarray        # [T] usage that no choice can avoid, per time point
    cap: np.ndarray         # [T] capacity per time point (CAP_UNLIMITED where none)
    pen: int                # cost standing for "forbidden"


def num_nodes(m: KModel) -> int:
    return len(m.soff) - 1


def num_edges(m: KModel) -> int:
    return len(m.eoff) - 1


def edge_function(m: KModel, e: int) -> tuple[tuple[int, ...], np.ndarray]:
    """Edge ``e`` of ``m`` on its distinct nodes (in order of first appearance) and its penalised
    costs over them, flat in their mixed radix (entries ``>= m.pen`` are forbidden): what a solver
    outside the kernels posts, without reading the edge layout (``enoff``, ``emult``) itself."""
    nodes = m.enodes[m.enoff[e]:m.enoff[e + 1]]
    scope, table = fold_repeated_nodes(nodes, m.ecost[m.eoff[e]:m.eoff[e + 1]], np.diff(m.soff))
    return scope, table.reshape(-1)


def _penalty(problem: Problem) -> int:
    terms = problem.num_nodes + problem.num_edges + 2
    return int(min((1 << 62) // terms, 1 << 53))


@kernel
def _pieces(soff, iv_off, iv_ids, lo, hi, uoff, var_use):  # pragma: no cover - numba
    """Split each node's intervals into disjoint pieces with summed usages (event sweep)."""
    n = len(soff) - 1
    cap_p = 2 * len(iv_ids) + 1
    p_node = np.empty(cap_p, np.int64)
    p_lo = np.empty(cap_p, np.int64)
    p_hi = np.empty(cap_p, np.int64)
    p_uoff = np.empty(cap_p, np.int64)
    use = np.empty(2 * len(var_use) + 1, np.int64)
    np_, nu = 0, 0
    for i in range(n):
        k = soff[i + 1] - soff[i]
        a, b = iv_off[i], iv_off[i + 1]
        m = b - a
        if m == 0:
            continue
        if m == 1:
            j = iv_ids[a]
            p_node[np_] = i
            p_lo[np_] = lo[j]
            p_hi[np_] = hi[j]
            p_uoff[np_] = nu
            for s in range(k):
                use[nu + s] = var_use[uoff[j] + s]
            nu += k
            np_ += 1
            continue
        # events: position, +1 start / -1 end, interval
        pos = np.empty(2 * m, np.int64)
        for q in range(m):
            j = iv_ids[a + q]
            pos[2 * q] = lo[j] * 2 + 1      # starts after ends at the same point
            pos[2 * q + 1] = hi[j] * 2
        order = np.argsort(pos)
        cur = np.zeros(k, np.int64)
        prev = -1
        for r in range(2 * m):
            ev = order[r]
            point = pos[ev] // 2
            if prev >= 0 and point > prev:
                nonzero = False
                for s in range(k):
                    if cur[s] != 0:
                        nonzero = True
                        break
                if nonzero:
                    same = False
                    if np_ > 0 and p_node[np_ - 1] == i and p_hi[np_ - 1] == prev:
                        same = True
                        for s in range(k):
                            if use[p_uoff[np_ - 1] + s] != cur[s]:
                                same = False
                                break
                    if same:
                        p_hi[np_ - 1] = point
                    else:
                        p_node[np_] = i
                        p_lo[np_] = prev
                        p_hi[np_] = point
                        p_uoff[np_] = nu
                        for s in range(k):
                            use[nu + s] = cur[s]
                        nu += k
                        np_ += 1
            prev = point
            j = iv_ids[a + ev // 2]
            sign = 1 if ev % 2 == 0 else -1
            for s in range(k):
                cur[s] += sign * var_use[uoff[j] + s]
    return p_node[:np_], p_lo[:np_], p_hi[:np_], p_uoff[:np_], use[:nu]


def _arc_consistent(soff, alive, ecost, eoff, binary, eu, ev, inc_off, inc_edge, pen) -> bool:
    """Narrow ``alive`` to arc consistency on the binary edges (forbidden = ``pen``) with the
    presolve's own routine; False when a domain empties (the caller then keeps its old ``alive``).

    ``inc_edge`` holds edge ids; the routine wants positions in ``binary``.
    """
    local = np.full(len(eoff) - 1, -1, np.int64)
    local[binary] = np.arange(len(binary), dtype=np.int64)
    _, node, _ = ac_kernel(np.diff(soff), soff, alive, eu, ev, np.ascontiguousarray(eoff[binary]),
                           ecost, inc_off, local[inc_edge], pen)
    if node >= 0:
        return False
    seg = np.repeat(np.arange(len(soff) - 1), np.diff(soff))
    return bool(np.all(np.bincount(seg[alive], minlength=len(soff) - 1) > 0))


def build_model(problem: Problem, prune: bool = True) -> KModel:
    """The kernel view of ``problem`` (O(size) numpy work plus one arc-consistency pass)."""
    pen = _penalty(problem)
    ncost = np.minimum(problem.node_costs, pen - 1)
    ncost[problem.node_costs == FORBIDDEN] = pen
    ecost = np.minimum(problem.edge_costs, pen - 1)
    ecost[problem.edge_costs == FORBIDDEN] = pen

    # memory: constant base + variable intervals (pieces are cut by ``assemble``)
    lo, hi = problem.interval_point_range
    lo = np.ascontiguousarray(lo, np.int64)
    hi = np.ascontiguousarray(hi, np.int64)
    uoff = np.ascontiguousarray(problem.interval_usage_offsets, np.int64)
    use = problem.interval_usages
    if len(use) and (int(np.abs(use).max()) >= USAGE_BOUND
                     or float(np.abs(use).astype(np.float64).sum()) >= USAGE_BOUND):
        raise ValueError("usages too large for the int64 kernels")
    nint = problem.num_intervals
    ivk = np.diff(uoff)
    mins = np.zeros(nint, np.int64)
    has = ivk > 0
    if has.any():
        mins[has] = np.minimum.reduceat(use, uoff[:-1][has])
    npts = len(problem.time_points)
    diff = np.zeros(npts + 1, np.int64)
    live = hi > lo
    np.add.at(diff, lo[live], mins[live])
    np.add.at(diff, hi[live], -mins[live])
    base = np.cumsum(diff[:-1]) if npts else np.zeros(0, np.int64)
    var_use = use - np.repeat(mins, ivk)
    cap = np.minimum(np.asarray(problem.point_capacity, np.int64), CAP_UNLIMITED)
    return assemble(problem.strategy_offsets, ncost, problem.edge_cost_offsets, ecost,
                    problem.edge_node_offsets, problem.edge_nodes, problem.interval_node, lo, hi,
                    uoff, var_use, base, cap, pen, prune)


def _own(a, dtype=np.int64) -> np.ndarray:
    """``a`` as a writable, C-contiguous array of ``dtype`` (copied only when it is not one).

    Why: numba compiles a kernel once per argument *type*, and a read-only array (the problem's
    arrays are) is another type than a writable one. Every :class:`KModel` field is normalised
    here, so the kernels have exactly one specialisation whatever the problem's arrays are.
    """
    return np.require(a, dtype, ["C", "W"])


def assemble(soff, ncost, eoff, ecost, enoff, enodes, iv_node, iv_lo, iv_hi, iv_uoff, iv_use,
             base, cap, pen: int, prune: bool = True, alive=None) -> KModel:
    """Build a :class:`KModel` from flat arrays (costs already penalised, usages variable parts).

    Interval ``j`` of node ``iv_node[j]`` covers time points ``[iv_lo[j], iv_hi[j])`` and uses
    ``iv_use[iv_uoff[j] + s]``; overlapping intervals of one node are summed into pieces here.
    """
    soff = _own(soff)
    n = len(soff) - 1
    counts = np.diff(soff)
    ncost = _own(ncost)
    ecost = _own(ecost)
    eoff = _own(eoff)
    enoff = _own(enoff)
    enodes = _own(enodes)
    arity = np.diff(enoff)
    ne = len(arity)
    # stride of each slot: product of the strategy counts of the later slots of the same edge
    emult = np.ones(len(enodes), dtype=np.int64)
    for p in range(int(arity.max(initial=0)) - 1, -1, -1):
        mask = arity > p + 1
        slots = enoff[:-1][mask] + p
        emult[slots] = emult[slots + 1] * counts[enodes[slots + 1]]
    ebinary = np.zeros(ne, dtype=np.bool_)
    two = np.flatnonzero(arity == 2)
    ebinary[two] = enodes[enoff[two]] != enodes[enoff[two] + 1]

    b = np.flatnonzero(ebinary)
    u, v = enodes[enoff[b]], enodes[enoff[b] + 1]
    kv = counts[v]
    inc_node = np.concatenate([u, v])
    inc_edge = np.concatenate([b, b])
    inc_other = np.concatenate([v, u])
    inc_mo = np.concatenate([np.ones_like(kv), kv])
    inc_ms = np.concatenate([kv, np.ones_like(kv)])
    order = np.lexsort((inc_edge, inc_node))
    inc_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(inc_node, minlength=n), out=inc_off[1:])
    inc_edge = np.ascontiguousarray(inc_edge[order])

    g = np.flatnonzero(~ebinary)
    if len(g):
        g_slot_edge = np.repeat(g, arity[g])
        g_slot_node = enodes[np.concatenate([np.arange(enoff[e], enoff[e + 1]) for e in g])]
        pairs = np.unique(np.stack([g_slot_node, g_slot_edge]), axis=1)
    else:
        pairs = np.zeros((2, 0), np.int64)
    ginc_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(pairs[0], minlength=n), out=ginc_off[1:])

    iv_lo = _own(iv_lo)
    iv_hi = _own(iv_hi)
    iv_uoff = _own(iv_uoff)
    iv_use = _own(iv_use)
    nint = len(iv_lo)
    varies = np.zeros(nint, np.bool_)
    nonempty = np.diff(iv_uoff) > 0
    if nonempty.any():   # one pass (a searchsorted + unique of every nonzero usage was 10x slower)
        varies[nonempty] = np.logical_or.reduceat(iv_use != 0, iv_uoff[:-1][nonempty])
    keep = np.flatnonzero(varies & (iv_hi > iv_lo))
    knode = np.asarray(iv_node, np.int64)[keep]
    iv_ids = np.ascontiguousarray(keep[np.argsort(knode, kind="stable")])
    iv_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(knode, minlength=n), out=iv_off[1:])
    p_node, pc_lo, pc_hi, pc_uoff, pc_use = _pieces(soff, iv_off, iv_ids, iv_lo, iv_hi, iv_uoff,
                                                    iv_use)
    pc_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(p_node, minlength=n), out=pc_off[1:])

    if alive is None:
        alive = ncost < pen
    alive = np.array(alive, dtype=np.bool_)
    # a node whose every strategy is forbidden keeps them all (no forbidden-free plan exists)
    if n:
        dead_nodes = np.flatnonzero(np.add.reduceat(alive.astype(np.int64), soff[:-1]) == 0)
        for i in dead_nodes:
            alive[soff[i]:soff[i + 1]] = True
    if prune and n:
        trial = alive.copy()
        # self-loops: only the diagonal entry of a strategy can be chosen
        loops = np.flatnonzero((arity == 2) & ~ebinary)
        for e in loops:
            x = enodes[enoff[e]]
            k = counts[x]
            diag = ecost[eoff[e] + np.arange(k) * (k + 1)] >= pen
            trial[soff[x]:soff[x + 1]] &= ~diag
        if _arc_consistent(soff, trial, ecost, eoff, b, u, v, inc_off, inc_edge, pen):
            alive = trial
    return KModel(
        soff=soff, ncost=ncost, alive=_own(alive, np.bool_), ecost=ecost, eoff=eoff, enoff=enoff,
        enodes=enodes, emult=_own(emult), inc_off=_own(inc_off), inc_edge=_own(inc_edge),
        inc_other=_own(inc_other[order]), inc_mo=_own(inc_mo[order]), inc_ms=_own(inc_ms[order]),
        ginc_off=_own(ginc_off), ginc_edge=_own(pairs[1]), pc_off=_own(pc_off), pc_lo=_own(pc_lo),
        pc_hi=_own(pc_hi), pc_uoff=_own(pc_uoff), pc_use=_own(pc_use), base=_own(base),
        cap=_own(cap), pen=int(pen),
    )
