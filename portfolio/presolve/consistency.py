"""Consistency: strategies that cannot appear in a plan without a forbidden choice are removed.

``ac_kernel`` is the one arc-consistency routine of the project: the presolve runs it on its state,
the search kernels (:mod:`portfolio.kernels.model`) on their penalised view and the exact model
(:mod:`portfolio.exact.model`, through :func:`arc_fixpoint`) on 0/1 tables of allowed entries, which
is why the value that marks a forbidden entry is a parameter (10**18 here, the kernels' penalty
there, 0 in the exact model).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from numba import njit

from ..problem import FORBIDDEN
from .state import Infeasible, State

_F = FORBIDDEN


@njit(cache=True)
def ac_kernel(K, SO, alive, eu, ev, toff, tab, inc_off, inc_edge, forbidden):
    """AC-3 over binary edges ``eu[e] - ev[e]`` (table at ``toff[e]``, row-major ``(K[u], K[v])``):
    remove strategies without a partner whose entry differs from ``forbidden``, to a fixpoint.

    ``inc_off``/``inc_edge`` list the edges of each node. The fixpoint (the largest arc-consistent
    domains) does not depend on the queue order. Returns (strategies removed, node whose domain
    emptied or -1, edge that emptied it or -1).
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
        kv = K[v]
        off = toff[e]
        for side in range(2):
            w = u if side == 0 else v       # the node whose strategies are checked
            o = v if side == 0 else u       # its partner on the edge
            sw = kv if side == 0 else 1     # table strides of w's and o's strategies
            so = 1 if side == 0 else kv
            bw = SO[w]
            bo = SO[o]
            changed = False
            for p in range(K[w]):
                if not alive[bw + p]:
                    continue
                ok = False
                for q in range(K[o]):
                    if alive[bo + q] and tab[off + p * sw + q * so] != forbidden:
                        ok = True
                        break
                if not ok:
                    alive[bw + p] = False
                    removed += 1
                    changed = True
            if changed:
                left = False
                for s in range(K[w]):
                    if alive[bw + s]:
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


def remove_forbidden(st: State) -> None:
    """Strategies of node cost 10**18 go; a node left without any proves the instance infeasible."""
    bad = st.alive & (st.ncost == _F)
    st.alive[bad] = False
    st.count("forbidden_strategies", int(np.count_nonzero(bad)))
    empty = np.flatnonzero(st.active & (st.alive_counts() == 0))
    if len(empty):
        raise Infeasible(f"node {int(empty[0])}: every strategy has node cost 10**18")


def arc(st: State) -> bool:
    """Binary and hyperedge arc consistency, alternated to a common fixpoint."""
    total, why = arc_fixpoint(st.K, st.SO, st.alive, st.eu, st.ev, st.toff, st.tab, st.hyper, _F,
                              st.incidence())
    st.count("arc_consistency_strategies", total)
    if why is not None:
        raise Infeasible(why)
    return total > 0


def arc_fixpoint(K: np.ndarray, SO: np.ndarray, alive: np.ndarray, eu: np.ndarray, ev: np.ndarray,
                 toff: np.ndarray, tab: np.ndarray, hyper: list, forbidden: int,
                 incidence: Optional[tuple[np.ndarray, np.ndarray]] = None
                 ) -> tuple[int, Optional[str]]:
    """Arc consistency on binary edges (:func:`ac_kernel`) and hyperedges (``hyper``: (nodes,
    table with one axis per node) pairs) alternated to their common fixpoint, narrowing ``alive``.

    Takes plain arrays rather than a presolve state so that every exact model (presolve here,
    :mod:`portfolio.exact.model` for the exact engines) prunes with the same routine. Returns
    (strategies removed, why a domain emptied or None).
    """
    if incidence is None:
        ends = np.concatenate([eu, ev]).astype(np.int64)
        order = np.argsort(ends, kind="stable")
        off = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=len(K)))]).astype(np.int64)
        incidence = off, np.concatenate([np.arange(len(eu))] * 2)[order].astype(np.int64)
    total = 0
    while True:
        removed, node, edge = ac_kernel(K, SO, alive, eu, ev, toff, tab, incidence[0],
                                        incidence[1], forbidden)
        total += removed
        if node >= 0:
            other = int(ev[edge] if eu[edge] == node else eu[edge])
            return total, (f"node {int(node)}: arc consistency leaves no strategy (each is forbidden "
                           f"or has no allowed partner on its edge to node {other})")
        removed, why = _hyper_pass(K, SO, alive, hyper, forbidden)
        total += removed
        if why is not None or removed == 0:
            return total, why


def _hyper_pass(K: np.ndarray, SO: np.ndarray, alive: np.ndarray, hyper: list,
                forbidden: int) -> tuple[int, Optional[str]]:
    """One pass of generalised arc consistency on the hyperedges (numpy; they are rare and small).
    Returns (strategies removed, why a domain emptied or None)."""
    removed = 0
    for nodes, table in hyper:
        if len(set(nodes.tolist())) < len(nodes):
            continue
        allowed = table != forbidden
        for ax, v in enumerate(nodes.tolist()):
            shape = [1] * len(nodes)
            shape[ax] = -1
            allowed = allowed & alive[SO[v]:SO[v] + K[v]].reshape(shape)
        for ax, v in enumerate(nodes.tolist()):
            other = tuple(a for a in range(len(nodes)) if a != ax)
            sup = allowed.any(axis=other)
            seg = alive[SO[v]:SO[v] + K[v]]
            lost = seg & ~sup
            if lost.any():
                removed += int(lost.sum())
                seg[lost] = False
                if not seg.any():
                    return removed, (f"node {v}: arc consistency leaves no strategy (each has "
                                     f"no allowed tuple on its hyperedge {nodes.tolist()})")
    return removed, None
