"""Sequential tree-reweighted message passing (TRW-S) on the memory-priced, unconstrained problem.

Why: without memory the problem is a pairwise min-sum MRF, and local search alone stalls in
"consistent labelling" optima where a whole region must switch together (816-node B and G are 2-9x
off after single, block and kick moves). TRW-S (Kolmogorov 2006) passes min-sum messages along the
node order forward and backward with monotonic-chain weights; it does not oscillate like loopy BP,
and decoding node by node in the forward pass yields labellings that respect the already fixed
neighbours exactly. Memory enters as a Lagrangian price on each strategy's usage (``wp``), so the
decoded plan is then repaired and polished by the exact moves.

Messages live per incidence: ``msg[moff[q] + s]`` is the message into node ``i`` (owner of
incidence ``q``) from ``inc_other[q]`` for strategy ``s`` of ``i``. Only binary edges take part; the
rare general edges are left to the exact moves.
"""

from __future__ import annotations

import numpy as np
from .jit import kernel

BIG = 1e30


@kernel
def trws_setup(m, order):  # pragma: no cover - numba
    """(position of each node in ``order``, reverse incidence, message offsets, weights)."""
    n = len(m.soff) - 1
    pos = np.empty(n, np.int64)
    for r in range(n):
        pos[order[r]] = r
    ninc = len(m.inc_other)
    owner = np.empty(ninc, np.int64)
    for i in range(n):
        for q in range(m.inc_off[i], m.inc_off[i + 1]):
            owner[q] = i
    rev = np.full(ninc, -1, np.int64)
    first = np.full(len(m.eoff) - 1, -1, np.int64)
    for q in range(ninc):   # a binary edge has exactly two incidences: pair them
        e = m.inc_edge[q]
        if first[e] < 0:
            first[e] = q
        else:
            rev[q] = first[e]
            rev[first[e]] = q
    moff = np.zeros(ninc + 1, np.int64)
    for q in range(ninc):
        i = owner[q]
        moff[q + 1] = moff[q] + m.soff[i + 1] - m.soff[i]
    gamma = np.ones(n, np.float64)
    for i in range(n):
        before = 0
        after = 0
        for q in range(m.inc_off[i], m.inc_off[i + 1]):
            if pos[m.inc_other[q]] < pos[i]:
                before += 1
            else:
                after += 1
        mx = max(before, after)
        if mx > 0:
            gamma[i] = 1.0 / mx
    return pos, rev, moff, gamma


@kernel
def unaries(m, wp, out):  # pragma: no cover - numba
    """Node cost + usage price per strategy; dead strategies get ``BIG``."""
    n = len(m.soff) - 1
    for i in range(n):
        so = m.soff[i]
        k = m.soff[i + 1] - so
        for s in range(k):
            if not m.alive[so + s]:
                out[so + s] = BIG
                continue
            v = np.float64(m.ncost[so + s])
            for p in range(m.pc_off[i], m.pc_off[i + 1]):
                w = wp[p]
                if w != 0.0:
                    v += w * m.pc_use[m.pc_uoff[p] + s]
            out[so + s] = v


@kernel
def trws_iterate(m, theta, order, pos, rev, moff, gamma, msg, lab, iters, hat):  # pragma: no cover
    """Run ``iters`` forward+backward passes; ``lab`` gets the labelling decoded in the last
    forward pass (each node best given the earlier nodes' labels and the later nodes' messages).
    ``hat`` is float64[kmax] scratch."""
    n = len(m.soff) - 1
    for it in range(iters):
        for direction in range(2):
            for r in range(n):
                i = order[r] if direction == 0 else order[n - 1 - r]
                so = m.soff[i]
                k = m.soff[i + 1] - so
                q0 = m.inc_off[i]
                q1 = m.inc_off[i + 1]
                # decode (forward pass only)
                if direction == 0:
                    best = BIG * 10
                    bs = 0
                    for s in range(k):
                        v = theta[so + s]
                        if v >= BIG:
                            continue
                        for q in range(q0, q1):
                            o = m.inc_other[q]
                            if pos[o] < pos[i]:
                                v += np.float64(m.ecost[m.eoff[m.inc_edge[q]] + lab[o] * m.inc_mo[q]
                                                        + s * m.inc_ms[q]])
                            else:
                                v += msg[moff[q] + s]
                        if v < best:
                            best = v
                            bs = s
                    lab[i] = bs
                for s in range(k):
                    v = theta[so + s]
                    for q in range(q0, q1):
                        v += msg[moff[q] + s]
                    hat[s] = v
                for q in range(q0, q1):
                    o = m.inc_other[q]
                    if (direction == 0 and pos[o] < pos[i]) or (direction == 1 and pos[o] > pos[i]):
                        continue
                    rq = rev[q]
                    oo = m.soff[o]
                    ko = m.soff[o + 1] - oo
                    b = m.eoff[m.inc_edge[q]]
                    mo = m.inc_mo[q]
                    ms = m.inc_ms[q]
                    g = gamma[i]
                    mn_all = BIG * 10
                    for t in range(ko):
                        best = BIG * 10
                        for s in range(k):
                            h = hat[s]
                            if h >= BIG:
                                continue
                            v = g * h - msg[moff[q] + s] + np.float64(m.ecost[b + t * mo + s * ms])
                            if v < best:
                                best = v
                        msg[moff[rq] + t] = best
                        if best < mn_all:
                            mn_all = best
                    for t in range(ko):
                        msg[moff[rq] + t] -= mn_all


@kernel
def labelling_energy(m, theta, lab):  # pragma: no cover - numba
    """Priced objective of a labelling over binary edges (float, for choosing among decodes)."""
    n = len(m.soff) - 1
    tot = 0.0
    for i in range(n):
        tot += theta[m.soff[i] + lab[i]]
        for q in range(m.inc_off[i], m.inc_off[i + 1]):
            o = m.inc_other[q]
            if o > i:
                tot += np.float64(m.ecost[m.eoff[m.inc_edge[q]] + lab[o] * m.inc_mo[q]
                                          + lab[i] * m.inc_ms[q]])
    return tot
