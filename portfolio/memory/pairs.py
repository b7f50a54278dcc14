"""Edge pairs: two nodes joined by an edge cannot both take their least usage when that pair of
strategies is forbidden on the edge, so the pair's least usage over its allowed entries (minus the
two independent minima: its *gain*) may be added to the per-node bound at every time point where
both are live, provided no node is counted in two pairs at that point (a matching).

Sound because, for any plan, the usage at a time point is a sum over disjoint groups (the matched
pairs and the single nodes) and each group's usage is at least its least value over the strategies
a plan without forbidden choices can take.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problem import FORBIDDEN, INT64_MAX

SAFE_USAGE = 2**60
"""Above this usage magnitude a pair's sum could wrap int64: the refinement is skipped (sound)."""


@njit(cache=True)
def pair_gains(eu, ev, toff, tab, K, SO, alive, w, wmin, forbidden, big):
    """Per binary edge, (least allowed ``w[u] + w[v]``) - ``wmin[u]`` - ``wmin[v]``; -1 when no
    allowed pair is left (cannot happen after arc consistency, kept safe)."""
    m = len(eu)
    out = np.zeros(m, np.int64)
    for e in range(m):
        u = eu[e]
        v = ev[e]
        kv = K[v]
        best = big
        for p in range(K[u]):
            if not alive[SO[u] + p]:
                continue
            wp = w[SO[u] + p]
            for q in range(kv):
                if alive[SO[v] + q] and tab[toff[e] + p * kv + q] != forbidden:
                    val = wp + w[SO[v] + q]
                    if val < best:
                        best = val
        out[e] = -1 if best == big else best - wmin[u] - wmin[v]
    return out


def greedy_matching(eu: np.ndarray, ev: np.ndarray, gain: np.ndarray,
                    candidates: np.ndarray) -> np.ndarray:
    """Edges of a matching over ``candidates`` (positive gains), largest gain first."""
    order = candidates[np.lexsort((candidates, -gain[candidates]))]
    used: set[int] = set()
    chosen = []
    for e in order.tolist():
        u, v = int(eu[e]), int(ev[e])
        if u in used or v in used:
            continue
        used.add(u)
        used.add(v)
        chosen.append(e)
    return np.array(chosen, dtype=np.int64)


def edge_gains(K: np.ndarray, SO: np.ndarray, alive: np.ndarray, eu: np.ndarray, ev: np.ndarray,
               toff: np.ndarray, tab: np.ndarray, w: np.ndarray, wmin: np.ndarray) -> np.ndarray:
    """:func:`pair_gains` on int64 arrays (the caller checked that no sum can wrap)."""
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    return pair_gains(i64(eu), i64(ev), i64(toff), i64(tab), i64(K), i64(SO),
                      np.ascontiguousarray(alive, dtype=np.bool_), i64(w), i64(wmin),
                      np.int64(FORBIDDEN), np.int64(INT64_MAX))
