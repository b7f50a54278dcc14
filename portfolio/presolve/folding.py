"""Edge-table reductions: parallel edges summed, row and column minima folded into node costs, and
edges left all-zero deleted.

Folding is exact: subtracting a row's least finite entry from that row and adding it to the node's
cost changes no plan's total, and forbidden entries stay exactly 10**18 (absorbing arithmetic).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problem import FORBIDDEN, offsets_from_counts
from .state import State, absorb_add


@njit(cache=True)
def sum_parallel_kernel(K, eu, ev, toff, tab, order, group, glo, ghi, gtoff, new_tab):
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
                new_tab[o + p * khi + q] = absorb_add(new_tab[o + p * khi + q], val)


@njit(cache=True)
def _fold_lines(alive, ncost, tab, off, bw, kw, sw, bo, ko, so):
    """Move each alive line's least finite entry (over alive partners) into its node's cost.

    Line ``p`` of node ``w`` is entries ``off + p * sw + q * so`` for partner strategies ``q``: rows
    when ``w`` is the edge's first node (``sw = K[v]``, ``so = 1``), columns otherwise. Returns
    whether anything moved.
    """
    moved = False
    for p in range(kw):
        if not alive[bw + p]:
            continue
        found = False
        mn = 0
        for q in range(ko):
            if alive[bo + q]:
                val = tab[off + p * sw + q * so]
                if val != FORBIDDEN and (not found or val < mn):
                    mn = val
                    found = True
        if found and mn != 0:
            for q in range(ko):
                idx = off + p * sw + q * so
                if alive[bo + q] and tab[idx] != FORBIDDEN:
                    tab[idx] -= mn
            ncost[bw + p] = absorb_add(ncost[bw + p], mn)
            moved = True
    return moved


@njit(cache=True)
def fold_kernel(K, SO, alive, ncost, eu, ev, toff, tab, zero):
    """Row- then column-minimum folding into node costs; flags edges left all-zero (no forbidden).

    Only alive rows and columns are read or changed. Returns the number of edges that moved cost.
    """
    folded = 0
    for e in range(len(eu)):
        ku, kv = K[eu[e]], K[ev[e]]
        su, sv = SO[eu[e]], SO[ev[e]]
        off = toff[e]
        moved = _fold_lines(alive, ncost, tab, off, su, ku, kv, sv, kv, 1)      # rows
        moved |= _fold_lines(alive, ncost, tab, off, sv, kv, 1, su, ku, kv)     # columns
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


def edge_tables(st: State) -> bool:
    """Sum parallel edges, fold minima, delete zero edges; returns whether anything changed."""
    changed = False
    m = len(st.eu)
    if m:
        lo = np.minimum(st.eu, st.ev)
        hi = np.maximum(st.eu, st.ev)
        order = np.lexsort((hi, lo))
        lo_s, hi_s = lo[order], hi[order]
        new_group = np.ones(m, dtype=bool)
        new_group[1:] = (lo_s[1:] != lo_s[:-1]) | (hi_s[1:] != hi_s[:-1])
        ngroups = int(new_group.sum())
        if ngroups < m:
            group = np.cumsum(new_group) - 1
            glo, ghi = lo_s[new_group], hi_s[new_group]
            gtoff = offsets_from_counts(st.K[glo] * st.K[ghi])
            new_tab = np.empty(int(gtoff[-1]), dtype=np.int64)
            sum_parallel_kernel(st.K, st.eu, st.ev, st.toff, st.tab, order,
                                 group.astype(np.int64), glo, ghi, gtoff, new_tab)
            st.count("parallel_edges_summed", m - ngroups)
            st.set_edges(glo, ghi, new_tab, np.diff(gtoff))
            changed = True
    if len(st.eu):
        zero = np.zeros(len(st.eu), dtype=np.bool_)
        folded = fold_kernel(st.K, st.SO, st.alive, st.ncost, st.eu, st.ev, st.toff,
                              st.tab, zero)
        st.count("edges_folded", folded)
        changed |= folded > 0
        if zero.any():
            st.count("zero_edges_deleted", int(zero.sum()))
            st.keep_edges(~zero)
            changed = True
    st.kill_forbidden("forbidden_after_folding")
    return changed

