"""Functional merges and forest composition: nodes determined by a neighbour fold into it.

An arc ``a -> b`` is functional when every remaining strategy of ``a`` allows exactly one strategy of
``b`` on some edge: in every plan without forbidden choices, ``b`` is then a function of ``a``. All
such arcs merge in bulk: one root per source strongly connected component of the arc digraph (a
Kosaraju finish order), every other node reached by a breadth-first search and mapped through the
composed maps; costs, intervals (usages mapped) and edges (rows permuted) move to the root, and
edges inside a group fold into the root's costs. The expansion replays the composed maps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problem import FORBIDDEN, offsets_from_counts
from .state import State, absorb_add, segment_fill_index


@njit(cache=True)
def functional_kernel(K, SO, alive, eu, ev, toff, tab, src_ok, dst_ok):
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
def forest_kernel(n, active, arc_src, arc_dst):
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
def compose_kernel(K, SO, alive, root_of, parent, order, arc_src, arc_moff, mflat, Moff, M):
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
def merge_kernel(K, SO, ncost, order, root_of, Moff, M, eu, ev, toff, tab, new_toff, new_tab):
    """Fold members' costs and intra-group edges into roots; re-wire the other edges onto roots."""
    for b in order:
        r = root_of[b]
        if b == r:
            continue
        for p in range(K[r]):
            mp = M[Moff[b] + p]
            if mp >= 0:
                ncost[SO[r] + p] = absorb_add(ncost[SO[r] + p], ncost[SO[b] + mp])
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
                    ncost[SO[ru] + p] = absorb_add(ncost[SO[ru] + p], tab[off + a * kv + b])
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



def merge(st: State) -> bool:
    """Merge every functional arc at once; returns whether any node was merged."""
    if len(st.eu) == 0:
        return False
    src_ok = st.active.copy()
    dst_ok = st.active & ~st.pinned
    asrc, adst, amoff, mflat = functional_kernel(st.K, st.SO, st.alive, st.eu, st.ev,
                                                  st.toff, st.tab, src_ok, dst_ok)
    if len(asrc) == 0:
        return False
    root_of, parent, order = forest_kernel(st.n, st.active, asrc, adst)
    members = order[root_of[order] != order]
    if len(members) == 0:
        return False
    Moff = np.zeros(st.n, dtype=np.int64)
    lengths = st.K[root_of[order]]
    starts = offsets_from_counts(lengths)
    Moff[order] = starts[:-1]
    M = np.empty(int(starts[-1]), dtype=np.int64)
    compose_kernel(st.K, st.SO, st.alive, root_of, parent, order, asrc, amoff, mflat, Moff, M)
    ru, rv = root_of[st.eu], root_of[st.ev]
    internal = ru == rv
    sizes = np.where(internal, 0, st.K[ru] * st.K[rv])
    new_toff = offsets_from_counts(sizes)
    new_tab = np.empty(int(new_toff[-1]), dtype=np.int64)
    merge_kernel(st.K, st.SO, st.ncost, order, root_of, Moff, M, st.eu, st.ev, st.toff,
                  st.tab, new_toff, new_tab)
    st.count("functional_internal_edges", int(internal.sum()))
    keep = ~internal
    st.set_edges(ru[keep], rv[keep], new_tab, sizes[keep])
    # intervals move to the roots, usages mapped through the composed maps
    if len(st.iv_owner):
        owner = st.iv_owner
        new_owner = root_of[owner]
        counts = st.K[new_owner]
        newoff = offsets_from_counts(counts)
        rows, within = segment_fill_index(newoff, counts)
        mp = M[Moff[owner[rows]] + within]
        use = np.where(mp >= 0, st.iv_use[st.iv_uoff[:-1][rows] + np.maximum(mp, 0)], 0)
        st.iv_owner, st.iv_uoff, st.iv_use = new_owner, newoff, use
    st.active[members] = False
    st.add_chunk(members, root_of[members], np.ones(len(members)), np.full(len(members), st.n),
                   Moff[members], M)
    st.count("functional_merged_nodes", len(members))
    st.count("functional_passes", 1)
    st.kill_forbidden("functional_conflict_strategies")
    return True

