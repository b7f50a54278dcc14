"""Dominance: a strategy no better than another of the same node anywhere is removed.

"Anywhere" means node cost, usage on every owned interval that can still matter for memory, and
every incident edge row over the partners' remaining strategies (forbidden = +infinity). Exact
duplicates keep the lowest index, so removing all dominated strategies at once always keeps one
dominating strategy per node.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problem import FORBIDDEN, offsets_from_counts
from .state import State


@njit(cache=True)
def _le(a, b):
    """a <= b with forbidden as +infinity."""
    if b == FORBIDDEN:
        return True
    if a == FORBIDDEN:
        return False
    return a <= b


@njit(cache=True)
def dominance_kernel(K, SO, alive, ncost, eligible, inc_off, inc_edge, eu, ev, toff, tab,
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
                    kv = K[ev[e]]
                    first = eu[e] == i
                    o = ev[e] if first else eu[e]   # the partner node
                    si_ = kv if first else 1        # table strides of i's and o's strategies
                    so_ = 1 if first else kv
                    base = toff[e]
                    bo = SO[o]
                    for q in range(K[o]):
                        if alive[bo + q]:
                            a = tab[base + p2 * si_ + q * so_]
                            b = tab[base + p * si_ + q * so_]
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



def dominance(st: State) -> bool:
    """Remove every dominated strategy of the eligible nodes; returns whether any went."""
    counts = st.alive_counts()
    eligible = st.active & ~st.pinned & (counts > 1)
    if not eligible.any():
        return False
    inc_off, inc = st.incidence()
    order = np.argsort(st.iv_owner, kind="stable").astype(np.int64)
    niv_off = offsets_from_counts(np.bincount(st.iv_owner, minlength=st.n))
    out = np.zeros(len(st.alive), dtype=np.bool_)
    dups = dominance_kernel(st.K, st.SO, st.alive, st.ncost, eligible, inc_off, inc,
                             st.eu, st.ev, st.toff, st.tab, niv_off, order, st.iv_uoff,
                             st.iv_use, out)
    k = int(out.sum())
    if k == 0:
        return False
    st.alive[out] = False
    st.count("duplicate_strategies", dups)
    st.count("dominated_strategies", k - dups)
    return True

