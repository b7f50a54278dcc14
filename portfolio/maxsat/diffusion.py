"""Integer min-sum diffusion for the MaxSAT encoding (:mod:`.encoding`): an exact
reparametrisation of the folded two-node tables that raises the constant RC2 need not find.

Timed by seconds, or (deterministic mode) by a number of sweeps alone, reading no clock.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np


def diffuse(pairs: dict, cost: list, allowed: np.ndarray, so: list, counts: list,
             seconds: Optional[float], sweeps: int = 200) -> int:
    """Integer min-sum diffusion: move costs between two-node tables and their nodes so that the
    node minima (folded into the constant) rise towards the local LP bound.

    Why: RC2 must discover, one core at a time, every unit of optimum above the constant; each
    unit this exact reparametrisation moves into the constant is one RC2 need not find. Exact: each
    step subtracts an integer vector from a table's rows and adds it to the node (entries outside
    the allowed mask untouched), so every plan's cost is unchanged; tables stay >= 0 on allowed
    entries. ``pairs`` maps (u, v) to (table, allowed mask), as :func:`_dense_factors` makes them.
    Returns the number of sweeps done (stops after ``seconds`` or ``sweeps``, or when nothing
    moves; ``seconds=None``: by sweeps alone, no clock, as deterministic mode needs).
    """
    end = None if seconds is None else time.perf_counter() + seconds
    subs, incident = [], {}
    for (u, v), (table, ok) in pairs.items():
        rows = np.flatnonzero(allowed[so[u]:so[u] + counts[u]])
        cols = np.flatnonzero(allowed[so[v]:so[v] + counts[v]])
        if table.dtype != np.int64 or not len(rows) or not len(cols):
            return 0   # Python-int tables (huge costs) are left as folded
        sub = table[np.ix_(rows, cols)]
        fin = ok[np.ix_(rows, cols)]
        subs.append((u, v, table, rows, cols, np.where(fin, sub, 0), fin))
        incident.setdefault(u, []).append((len(subs) - 1, 1))
        incident.setdefault(v, []).append((len(subs) - 1, 0))
    nodecost = {}
    for i in incident:
        nodecost[i] = np.array([cost[so[i] + s] for s in
                                np.flatnonzero(allowed[so[i]:so[i] + counts[i]]).tolist()], np.int64)
    if any(int(np.abs(c).max(initial=0)) >= 2**60 for c in nodecost.values()):
        return 0
    big = np.int64(2**62)
    done = 0
    for done in range(1, sweeps + 1):
        moved = False
        for i, inc in incident.items():
            h = nodecost[i].copy()
            for k, axis in inc:
                val, fin = subs[k][5], subs[k][6]
                r = np.where(fin, val, big).min(axis=axis)
                r = np.where(r == big, 0, r)
                if axis == 1:
                    val -= np.where(fin, r[:, None], 0)
                else:
                    val -= np.where(fin, r[None, :], 0)
                h += r
            q = h // len(inc)
            for k, axis in inc:
                val, fin = subs[k][5], subs[k][6]
                if axis == 1:
                    val += np.where(fin, q[:, None], 0)
                else:
                    val += np.where(fin, q[None, :], 0)
            new = h - q * len(inc)
            moved |= not np.array_equal(new, nodecost[i])
            nodecost[i] = new
        if not moved or (end is not None and time.perf_counter() > end):
            break
    for u, v, table, rows, cols, val, fin in subs:
        table[np.ix_(rows, cols)] = np.where(fin, val, 0)
    for i, c in nodecost.items():
        for s, x in zip(np.flatnonzero(allowed[so[i]:so[i] + counts[i]]).tolist(), c.tolist()):
            cost[so[i] + s] = x
    # fold what the tables still hold at their minima back into the nodes (exactly, as before)
    for u, v, table, rows, cols, val, fin in subs:
        for axis, node, idx in ((1, u, rows), (0, v, cols)):
            sub = table[np.ix_(rows, cols)]
            m = np.where(fin, sub, big).min(axis=axis)
            m = np.where(m == big, 0, m)
            sub -= np.where(fin, (m[:, None] if axis == 1 else m[None, :]), 0)
            table[np.ix_(rows, cols)] = sub
            for s, x in zip(idx.tolist(), m.tolist()):
                cost[so[node] + s] += x
    return done
