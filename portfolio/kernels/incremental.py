"""The state of a local search and its exact incremental evaluation, all numba-compiled.

State of a search: ``sol`` (strategy per node) plus the segment tree ``(t, d)`` holding
``base + variable load - capacity`` per time point (see :mod:`.segtree`). Every move
(:mod:`.moves`) keeps the two in step through :func:`apply_move`. Costs inside the kernels are the
penalised int64 costs of :mod:`.model`; an optional float price per piece (``wp``, a Lagrangian
weight on usage) is added to the objective a move must improve, never to the cost it reports.

Here: the work arrays every move reuses (:class:`Scratch`), the xorshift generator, exact cost
deltas of one node (O(k * degree)), the plan's cost, the load tree and the memory check of one
node's change, and the change log that lets a rejected kick be undone node by node.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .jit import inner, kernel

from .segtree import seg_add, seg_build, seg_query

INF = 1e300


class Scratch(NamedTuple):
    """Work arrays reused by every move (no allocation in the hot loops)."""

    mark: np.ndarray     # int64[n] stamps: == stamp in the current block / cascade
    nodes: np.ndarray    # int64[n] block / changed nodes in visiting order
    par: np.ndarray      # int64[n] block parent position; cascade: previous strategy
    aoff: np.ndarray     # int64[n] offset of a block node's argmin table in ``arg``
    arg: np.ndarray      # int64[sum_i k_i * deg_i + n]
    newv: np.ndarray     # int64[n]
    buf: np.ndarray      # int64[kmax]
    fbuf: np.ndarray     # float64[kmax]
    qbuf: np.ndarray     # int64[pmax]
    qlist: np.ndarray    # int64[max degree]
    big: np.ndarray      # float64[S] block DP values, indexed like strategies
    ints: np.ndarray     # int64[16]: [0] stamp, [1] evaluations, [2] cascade steps, [4] kicks,
    #                      [5] logging on, [6] log length, [7] log stamp, [9] block size
    lmark: np.ndarray    # int64[n] == log stamp when the node is in the change log
    lnodes: np.ndarray   # int64[n] change log: nodes ...
    lold: np.ndarray     # int64[n] ... and their strategies before the first logged change
    wl: np.ndarray       # int64[n] worklist (ring) of the descent
    inq: np.ndarray      # int64[n] == stamp while queued
    rng: np.ndarray      # uint64[1] xorshift state


def make_scratch(m, seed: int) -> Scratch:
    n = len(m.soff) - 1
    counts = np.diff(m.soff)
    deg = np.diff(m.inc_off)
    pcount = np.diff(m.pc_off)
    kmax = int(counts.max(initial=1))
    rng = np.array([(seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) & ((1 << 64) - 1) or 1],
                   dtype=np.uint64)
    return Scratch(
        mark=np.zeros(n, np.int64), nodes=np.zeros(n, np.int64), par=np.zeros(n, np.int64),
        aoff=np.zeros(n, np.int64),
        arg=np.zeros(int((counts * deg).sum()) + n + 1, np.int64), newv=np.zeros(n, np.int64),
        buf=np.zeros(kmax, np.int64),
        fbuf=np.zeros(kmax, np.float64), qbuf=np.zeros(int(pcount.max(initial=1)), np.int64),
        qlist=np.zeros(int(deg.max(initial=1)), np.int64),
        big=np.zeros(len(m.ncost), np.float64),
        ints=np.zeros(16, np.int64), rng=rng, lmark=np.zeros(n, np.int64),
        lnodes=np.zeros(n, np.int64), lold=np.zeros(n, np.int64), wl=np.zeros(n, np.int64),
        inq=np.zeros(n, np.int64),
    )


# ------------------------------------------------------------------------------------------ rng
@inner
def rand_u64(rs):  # pragma: no cover - numba
    x = rs[0]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    rs[0] = x
    return x


@inner
def rand_int(rs, n):  # pragma: no cover - numba
    """Uniform in [0, n) (n >= 1)."""
    return np.int64(rand_u64(rs) % np.uint64(n))


@inner
def rand_float(rs):  # pragma: no cover - numba
    return np.float64(rand_u64(rs) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


# ------------------------------------------------------------------------------------------ costs
@inner
def general_index(m, sol, e, i, s):  # pragma: no cover - numba
    """Table position of general edge ``e`` when node ``i`` takes ``s`` (all its slots)."""
    idx = m.eoff[e]
    for q in range(m.enoff[e], m.enoff[e + 1]):
        x = m.enodes[q]
        idx += (s if x == i else sol[x]) * m.emult[q]
    return idx


@inner
def node_costs_all(m, sol, i, out):  # pragma: no cover - numba
    """``out[s]`` = node cost + incident edge entries of ``i`` at ``s``, others fixed; returns k."""
    so = m.soff[i]
    k = m.soff[i + 1] - so
    for s in range(k):
        out[s] = m.ncost[so + s]
    for q in range(m.inc_off[i], m.inc_off[i + 1]):
        b = m.eoff[m.inc_edge[q]] + sol[m.inc_other[q]] * m.inc_mo[q]
        ms = m.inc_ms[q]
        for s in range(k):
            out[s] += m.ecost[b + s * ms]
    for q in range(m.ginc_off[i], m.ginc_off[i + 1]):
        e = m.ginc_edge[q]
        for s in range(k):
            out[s] += m.ecost[general_index(m, sol, e, i, s)]
    return k


@inner
def node_delta_one(m, sol, i, s):  # pragma: no cover - numba
    """Exact penalised cost change of switching node ``i`` to ``s``: O(degree)."""
    c = sol[i]
    if c == s:
        return np.int64(0)
    so = m.soff[i]
    dlt = m.ncost[so + s] - m.ncost[so + c]
    for q in range(m.inc_off[i], m.inc_off[i + 1]):
        b = m.eoff[m.inc_edge[q]] + sol[m.inc_other[q]] * m.inc_mo[q]
        ms = m.inc_ms[q]
        dlt += m.ecost[b + s * ms] - m.ecost[b + c * ms]
    for q in range(m.ginc_off[i], m.ginc_off[i + 1]):
        e = m.ginc_edge[q]
        dlt += m.ecost[general_index(m, sol, e, i, s)] - m.ecost[general_index(m, sol, e, i, c)]
    return dlt


@inner
def price_delta(m, wp, i, a, b):  # pragma: no cover - numba
    """Lagrangian price change of node ``i`` going from ``a`` to ``b``."""
    r = 0.0
    for p in range(m.pc_off[i], m.pc_off[i + 1]):
        w = wp[p]
        if w != 0.0:
            r += w * (m.pc_use[m.pc_uoff[p] + b] - m.pc_use[m.pc_uoff[p] + a])
    return r


@kernel
def plan_cost(m, sol):  # pragma: no cover - numba
    """(penalised cost, forbidden choices) of a whole plan."""
    n = len(m.soff) - 1
    total = np.int64(0)
    forb = 0
    for i in range(n):
        c = m.ncost[m.soff[i] + sol[i]]
        total += c
        if c >= m.pen:
            forb += 1
    for e in range(len(m.eoff) - 1):
        idx = m.eoff[e]
        for q in range(m.enoff[e], m.enoff[e + 1]):
            idx += sol[m.enodes[q]] * m.emult[q]
        c = m.ecost[idx]
        total += c
        if c >= m.pen:
            forb += 1
    return total, forb


# ------------------------------------------------------------------------------------------ memory
@kernel
def slack_values(m, sol):  # pragma: no cover - numba
    """``load - capacity`` per time point for ``sol``."""
    npts = len(m.base)
    diff = np.zeros(npts + 1, np.int64)
    n = len(m.soff) - 1
    for i in range(n):
        s = sol[i]
        for p in range(m.pc_off[i], m.pc_off[i + 1]):
            u = m.pc_use[m.pc_uoff[p] + s]
            diff[m.pc_lo[p]] += u
            diff[m.pc_hi[p]] -= u
    out = np.empty(npts, np.int64)
    acc = np.int64(0)
    for k in range(npts):
        acc += diff[k]
        out[k] = m.base[k] + acc - m.cap[k]
    return out


def build_tree(m, sol):
    """The load tree of ``sol`` (see :mod:`.segtree`). Python: one kernel fewer to compile."""
    return seg_build(slack_values(m, sol))


@inner
def piece_query(m, t, d, i, qbuf):  # pragma: no cover - numba
    """``qbuf[j]`` = max of ``load - capacity`` over node ``i``'s piece ``j``; returns the count."""
    p0 = m.pc_off[i]
    np_ = m.pc_off[i + 1] - p0
    for j in range(np_):
        qbuf[j] = seg_query(t, d, m.pc_lo[p0 + j], m.pc_hi[p0 + j])
    return np_


@inner
def fits(m, qbuf, i, a, b):  # pragma: no cover - numba
    """Whether node ``i`` may go from ``a`` to ``b`` given its pieces' maxima in ``qbuf``."""
    p0 = m.pc_off[i]
    for j in range(m.pc_off[i + 1] - p0):
        u = m.pc_uoff[p0 + j]
        if qbuf[j] + m.pc_use[u + b] - m.pc_use[u + a] > 0:
            return False
    return True


@inner
def apply_move(m, sol, t, d, i, s):  # pragma: no cover - numba
    """Set ``sol[i] = s`` and update the load tree (one range-add per piece)."""
    a = sol[i]
    if a == s:
        return
    for p in range(m.pc_off[i], m.pc_off[i + 1]):
        u = m.pc_uoff[p]
        du = m.pc_use[u + s] - m.pc_use[u + a]
        if du != 0:
            seg_add(t, d, m.pc_lo[p], m.pc_hi[p], du)
    sol[i] = s


@inner
def move_logged(m, sol, t, d, i, s, sc):  # pragma: no cover - numba
    """:func:`apply_move`, remembering the node's first previous strategy while logging is on
    (so a rejected kick + descent is undone by resetting only the nodes it touched)."""
    if sc.ints[5] != 0 and sc.lmark[i] != sc.ints[7] and sol[i] != s:
        sc.lmark[i] = sc.ints[7]
        k = sc.ints[6]
        sc.lnodes[k] = i
        sc.lold[k] = sol[i]
        sc.ints[6] = k + 1
    apply_move(m, sol, t, d, i, s)


@inner
def log_start(sc):  # pragma: no cover - numba
    sc.ints[5] = 1
    sc.ints[6] = 0
    sc.ints[7] += 1


@inner
def log_price_delta(m, wp, sol, sc):  # pragma: no cover - numba
    """Price change of everything logged since :func:`log_start`."""
    r = 0.0
    for j in range(sc.ints[6]):
        i = sc.lnodes[j]
        r += price_delta(m, wp, i, sc.lold[j], sol[i])
    return r


@inner
def log_rollback(m, sol, t, d, sc):  # pragma: no cover - numba
    for j in range(sc.ints[6] - 1, -1, -1):
        apply_move(m, sol, t, d, sc.lnodes[j], sc.lold[j])
    sc.ints[6] = 0
