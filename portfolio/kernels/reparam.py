"""The TRW-S reparametrisation in integers: messages moved into the unaries, exactly.

Why: a solver that bounds the priced problem by its own propagation (toulbar2's EDAC in the
``bound`` backend's late phase, :mod:`portfolio.toulbar2.bound`) starts far below the local
polytope; handed the network reparametrised by the settled TRW-S messages, its functions' minima
already sum to the star bound of :func:`.bound.star_bound`. The shifts are integers, so every
plan's cost stays exactly what it was: any messages are safe, good ones only make the start high.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .model import KModel

MESSAGE_LIMIT = 2.0**45
"""Messages larger than this are left out of the reparametrisation (its sums stay below 2**53)."""


def message_shifts(m: KModel, msg: np.ndarray, pos: np.ndarray, moff: np.ndarray,
                   rev: np.ndarray) -> Optional[tuple[np.ndarray, dict]]:
    """The TRW-S reparametrisation in integers: (per strategy the amount added to its unary, per
    binary edge the amounts subtracted from its entries), or None when the sums get too large.

    For each binary edge the message into its earlier node (in the TRW-S order) is floored to an
    integer ``r``, added to that node's unary and subtracted from every edge entry with that
    strategy; then each row of the later node (one of its strategies) gives its least allowed
    entry (an earlier strategy alive) to that node's unary. Every plan's cost is unchanged (exact
    integers), and the functions' minima then sum to the star bound of
    :func:`.bound.star_bound` (less the floors), so toulbar2 starts from the
    local polytope's value rather than rebuilding it by its own (weaker) propagation. Messages that
    are not finite or above ``MESSAGE_LIMIT`` count as 0 (any integers keep the cost)."""
    soff = np.asarray(m.soff, np.int64)
    n = len(soff) - 1
    add = np.zeros(len(m.ncost), np.int64)
    sub: dict = {}
    owner = np.repeat(np.arange(n), np.diff(np.asarray(m.inc_off)))
    other = np.asarray(m.inc_other)
    alive = np.asarray(m.alive, bool)
    for q in np.flatnonzero(pos[owner] < pos[other]).tolist():
        i = int(owner[q])
        k = int(soff[i + 1] - soff[i])
        raw = np.asarray(msg[moff[q]:moff[q] + k], np.float64)
        keep = np.isfinite(raw) & (np.abs(raw) < MESSAGE_LIMIT)
        r = np.where(keep, np.floor(np.where(keep, raw, 0.0)), 0.0).astype(np.int64)
        add[soff[i]:soff[i + 1]] += r
        e = int(m.inc_edge[q])
        size = int(m.eoff[e + 1] - m.eoff[e])
        s_i = (np.arange(size) // int(m.inc_ms[q])) % k
        # then the later node takes, per its strategy, the least allowed entry left in its row
        rq, o = int(rev[q]), int(other[q])
        k_o = int(soff[o + 1] - soff[o])
        s_o = (np.arange(size) // int(m.inc_ms[rq])) % k_o
        table = np.asarray(m.ecost[m.eoff[e]:m.eoff[e + 1]]) - r[s_i]
        ok = (np.asarray(m.ecost[m.eoff[e]:m.eoff[e + 1]]) < m.pen) & alive[soff[i] + s_i]
        h = np.full(k_o, np.iinfo(np.int64).max)
        np.minimum.at(h, s_o[ok], table[ok])
        h[h == np.iinfo(np.int64).max] = 0
        add[soff[o]:soff[o + 1]] += h
        sub[e] = sub.get(e, 0) + r[s_i] + h[s_o]
    if len(add) and int(np.abs(add).max()) >= 2**52:
        return None
    return add, sub
