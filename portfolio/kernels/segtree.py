"""Range-add / range-max segment tree over the compressed time points, as two flat int64 arrays.

Why this layout: a move changes a node's usage on a contiguous range of time points (one range per
piece) and its memory check needs the maximum of ``load - capacity`` over the same ranges. Intervals
are bimodal on contest instances (median 2-3 points, mean ~2,000, max = all 27k points), so a dense
array with linear scans is too slow for the long ones. Bottom-up (non-recursive) form: ``t[p]`` is
the max of its subtree including ``d[p]``, the add pending on the whole subtree, so a query never
pushes: it adds the pending adds of the ancestors of the nodes it collects, which on each side all
share one ancestor per level. Both operations cost O(log T) with no allocation; the root ``t[1]`` is
the global max, so a plan is feasible iff ``t[1] <= 0``.
"""

from __future__ import annotations

import numpy as np
from .jit import inner, kernel

NEG = -(1 << 62)
"""Value of the padding leaves: never the maximum, and safe to add a few deltas to."""


@kernel
def seg_build(values):  # pragma: no cover - numba
    """A tree holding ``values`` (any length, padded to a power of two); returns (t, d)."""
    size = 1
    while size < len(values):
        size *= 2
    t = np.full(2 * size, NEG, np.int64)
    d = np.zeros(2 * size, np.int64)
    for i in range(len(values)):
        t[size + i] = values[i]
    for p in range(size - 1, 0, -1):
        t[p] = max(t[2 * p], t[2 * p + 1])
    return t, d


@inner
def seg_add(t, d, lo, hi, value):  # pragma: no cover - numba
    """Add ``value`` to every leaf in ``[lo, hi)``."""
    if lo >= hi or value == 0:
        return
    size = len(t) >> 1
    l = lo + size
    r = hi + size
    l0 = l
    r0 = r - 1
    while l < r:
        if l & 1:
            t[l] += value
            d[l] += value
            l += 1
        if r & 1:
            r -= 1
            t[r] += value
            d[r] += value
        l >>= 1
        r >>= 1
    p = l0 >> 1
    while p >= 1:
        t[p] = max(t[2 * p], t[2 * p + 1]) + d[p]
        p >>= 1
    p = r0 >> 1
    while p >= 1:
        t[p] = max(t[2 * p], t[2 * p + 1]) + d[p]
        p >>= 1


@inner
def seg_query(t, d, lo, hi):  # pragma: no cover - numba
    """Maximum over the leaves in ``[lo, hi)`` (``NEG`` or below when empty)."""
    size = len(t) >> 1
    l = lo + size
    r = hi + size
    resl = NEG
    resr = NEG
    level = size
    while level > 1:
        if l < r:
            if l & 1:
                if t[l] > resl:
                    resl = t[l]
                l += 1
            if r & 1:
                r -= 1
                if t[r] > resr:
                    resr = t[r]
        l = (l + 1) >> 1
        r >>= 1
        # every node collected so far on a side lies below this one ancestor per level
        resl += d[l - 1]
        resr += d[r]
        level >>= 1
    if l < r and t[l] > resl:
        resl = t[l]
    return resl if resl > resr else resr


@kernel
def seg_leaves(t, d, n):  # pragma: no cover - numba
    """The first ``n`` leaf values with all pending adds applied (for checks and rebuilds)."""
    size = len(t) >> 1
    out = np.empty(n, np.int64)
    for i in range(n):
        p = size + i
        v = t[p]
        p >>= 1
        while p >= 1:
            v += d[p]
            p >>= 1
        out[i] = v
    return out
