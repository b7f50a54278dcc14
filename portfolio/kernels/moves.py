"""The moves of the local searches, all numba-compiled, on the state of :mod:`.incremental`.

Moves (each exact on cost, checked on memory when ``hard``):

* single node: best strategy given the neighbours (O(k * degree + pieces * log T));
* block: an induced tree grown by BFS around a root, re-chosen jointly by dynamic programming
  over strategies (an edge is the two-node case, a star the "node and all its neighbours" case);
  memory is ignored by the DP except that each strategy must fit alone, then checked on the result;
* cascade: set one node, then let each neighbour whose best response changed re-choose, breadth
  first. This is the "follow" move: a neighbour tied by a forbidden (or punishing) table must move
  with the node, and its own neighbours with it, so chains of functional edges move as one group.
"""

from __future__ import annotations

import numpy as np
from .jit import inner, kernel

from .incremental import (INF, fits, general_index, move_logged, node_costs_all, node_delta_one,
                          piece_query, price_delta, rand_int)
from .incremental import Scratch  # noqa: F401 -- its old home: numba's cache indexes written before
# the split name it here, and numba unpickles an index before it finds it stale (else AttributeError)


# ------------------------------------------------------------------------------------------ single
@inner
def best_single(m, sol, t, d, wp, hard, i, sc, allow_equal):  # pragma: no cover - numba
    """Best strategy for node ``i`` (objective = cost + price), or -1 when none improves.

    Returns (strategy, cost delta). Memory is queried only when some strategy improves.
    """
    buf = sc.buf
    k = node_costs_all(m, sol, i, buf)
    sc.ints[1] += k
    cur = sol[i]
    so = m.soff[i]
    base = buf[cur]
    fb = sc.fbuf
    anyimp = False
    for s in range(k):
        if s == cur or not m.alive[so + s]:
            fb[s] = INF
            continue
        v = np.float64(buf[s] - base) + price_delta(m, wp, i, cur, s)
        fb[s] = v
        if v < 0.0 or (allow_equal and v <= 0.0):
            anyimp = True
    if not anyimp:
        return -1, np.int64(0)
    if hard:
        piece_query(m, t, d, i, sc.qbuf)
    best = 0.0
    bs = -1
    for s in range(k):
        v = fb[s]
        if v < best or (allow_equal and bs < 0 and v <= 0.0):
            if hard and not fits(m, sc.qbuf, i, cur, s):
                continue
            best = v
            bs = s
    if bs < 0:
        return -1, np.int64(0)
    return bs, buf[bs] - base


@kernel
def sweep(m, sol, t, d, wp, hard, order, sc):  # pragma: no cover - numba
    """One pass of best-improvement single-node moves in ``order``; returns (cost delta, moves)."""
    total = np.int64(0)
    moves = 0
    for r in range(len(order)):
        i = order[r]
        s, dc = best_single(m, sol, t, d, wp, hard, i, sc, False)
        if s >= 0:
            move_logged(m, sol, t, d, i, s, sc)
            total += dc
            moves += 1
    return total, moves


@kernel
def count_evals(m, sol, t, d, order, sc):  # pragma: no cover - numba
    """Evaluate every strategy of every node in ``order`` with its memory check (benchmark)."""
    n_ok = 0
    for r in range(len(order)):
        i = order[r]
        k = node_costs_all(m, sol, i, sc.buf)
        piece_query(m, t, d, i, sc.qbuf)
        cur = sol[i]
        for s in range(k):
            if fits(m, sc.qbuf, i, cur, s) and sc.buf[s] < sc.buf[cur]:
                n_ok += 1
        sc.ints[1] += k
    return n_ok


# ------------------------------------------------------------------------------------------ block
@inner
def group_member(m, sol, sc, j):  # pragma: no cover - numba
    """The ``j``-th node of the group in ``sc.nodes``: (node, its first strategy's index, its number
    of strategies, its current strategy)."""
    y = sc.nodes[j]
    so = m.soff[y]
    return y, so, m.soff[y + 1] - so, sol[y]


@inner
def _next_stamp(sc):  # pragma: no cover - numba
    sc.ints[0] += 1
    return sc.ints[0]


@inner
def grow_tree(m, root, max_nodes, max_work, sc, stamp):  # pragma: no cover - numba
    """BFS an induced tree (no edge between block nodes except parent-child) from ``root``.

    Fills ``sc.nodes[:cnt]`` (parents first) and ``sc.par``; returns ``cnt`` (0 when the root is
    unusable). Nodes on general edges are left out, so every block edge is binary.
    """
    mark = sc.mark
    if m.ginc_off[root + 1] > m.ginc_off[root]:
        return 0
    mark[root] = stamp
    sc.nodes[0] = root
    sc.par[0] = -1
    cnt = 1
    head = 0
    work = 0
    while head < cnt and cnt < max_nodes:
        x = sc.nodes[head]
        kx = m.soff[x + 1] - m.soff[x]
        q0 = m.inc_off[x]
        nq = m.inc_off[x + 1] - q0
        if nq == 0:
            head += 1
            continue
        start = rand_int(sc.rng, nq)
        for r in range(nq):
            y = m.inc_other[q0 + (start + r) % nq]
            if mark[y] == stamp or mark[y] == -stamp:
                continue
            if m.ginc_off[y + 1] > m.ginc_off[y]:
                mark[y] = -stamp
                continue
            ok = True
            for q2 in range(m.inc_off[y], m.inc_off[y + 1]):
                z = m.inc_other[q2]
                if z != x and mark[z] == stamp:
                    ok = False
                    break
            if not ok:
                mark[y] = -stamp
                continue
            ky = m.soff[y + 1] - m.soff[y]
            if work + kx * ky > max_work:
                continue
            work += kx * ky
            mark[y] = stamp
            sc.nodes[cnt] = y
            sc.par[cnt] = head
            cnt += 1
            if cnt >= max_nodes:
                break
        head += 1
    return cnt


@inner
def block_solve(m, sol, t, d, wp, hard, cnt, sc, stamp):  # pragma: no cover - numba
    """Jointly optimal strategies of the block ``sc.nodes[:cnt]`` (an induced tree) by DP.

    Writes them to ``sc.newv[:cnt]``; returns the DP objective change (<= 0 up to rounding).
    With ``hard``, a strategy is only considered when it fits alone on the current load.
    """
    F = sc.big
    mark = sc.mark
    # unaries
    aoff = 0
    for j in range(cnt):
        y, so, k, cur = group_member(m, sol, sc, j)
        for s in range(k):
            F[so + s] = np.float64(m.ncost[so + s])
        for q in range(m.inc_off[y], m.inc_off[y + 1]):
            o = m.inc_other[q]
            if mark[o] == stamp:
                continue
            b = m.eoff[m.inc_edge[q]] + sol[o] * m.inc_mo[q]
            ms = m.inc_ms[q]
            for s in range(k):
                F[so + s] += np.float64(m.ecost[b + s * ms])
        if hard:
            piece_query(m, t, d, y, sc.qbuf)
        for s in range(k):
            if s != cur:
                if not m.alive[so + s] or (hard and not fits(m, sc.qbuf, y, cur, s)):
                    F[so + s] = INF
                    continue
            F[so + s] += price_delta(m, wp, y, cur, s)
        sc.ints[1] += k
        if j > 0:
            sc.aoff[j] = aoff
            x = sc.nodes[sc.par[j]]
            aoff += m.soff[x + 1] - m.soff[x]
    # messages, leaves first
    for j in range(cnt - 1, 0, -1):
        y = sc.nodes[j]
        x = sc.nodes[sc.par[j]]
        sy = m.soff[y]
        ky = m.soff[y + 1] - sy
        sx = m.soff[x]
        kx = m.soff[x + 1] - sx
        a0 = sc.aoff[j]
        # the incidences of y that point at x (parallel edges allowed)
        nq = 0
        for q in range(m.inc_off[y], m.inc_off[y + 1]):
            if m.inc_other[q] == x:
                sc.qlist[nq] = q
                nq += 1
        for s in range(kx):
            if F[sx + s] >= INF:
                sc.arg[a0 + s] = -1
                continue
            best = INF
            bt = -1
            for tt in range(ky):
                v = F[sy + tt]
                if v >= INF:
                    continue
                for r in range(nq):
                    q = sc.qlist[r]
                    v += np.float64(m.ecost[m.eoff[m.inc_edge[q]] + s * m.inc_mo[q]
                                            + tt * m.inc_ms[q]])
                if v < best:
                    best = v
                    bt = tt
            sc.arg[a0 + s] = bt
            if bt < 0:
                F[sx + s] = INF
            else:
                F[sx + s] += best
    # root choice, then down the tree
    r0 = sc.nodes[0]
    so = m.soff[r0]
    best = INF
    bs = sol[r0]
    for s in range(m.soff[r0 + 1] - so):
        if F[so + s] < best:
            best = F[so + s]
            bs = s
    sc.newv[0] = bs
    for j in range(1, cnt):
        x = sc.nodes[sc.par[j]]
        v = sc.arg[sc.aoff[j] + sc.newv[sc.par[j]]]
        sc.newv[j] = v if v >= 0 else sol[sc.nodes[j]]
    return best


@inner
def _keep_or_undo(m, sol, t, d, sc, cnt, ok, hard, dc):  # pragma: no cover - numba
    """End of a multi-node move whose ``cnt`` changes are logged in ``sc.nodes``/``sc.par``: keep
    them when ``ok`` (and, if ``hard``, memory still fits), else undo them newest first.
    Returns (kept, cost delta)."""
    if ok and hard and t[1] > 0:
        ok = False
    if not ok:
        for k in range(cnt - 1, -1, -1):
            move_logged(m, sol, t, d, sc.nodes[k], sc.par[k], sc)
        return False, np.int64(0)
    return True, dc


@inner
def commit_or_revert(m, sol, t, d, wp, hard, cnt, sc, allow_equal):  # pragma: no cover - numba
    """Apply ``sc.newv`` to ``sc.nodes[:cnt]``; keep it when it improves and fits, else undo.

    Returns (accepted, cost delta). Old strategies are kept in ``sc.par`` after the call.
    """
    dc = np.int64(0)
    dp = 0.0
    changed = 0
    for j in range(cnt):
        y = sc.nodes[j]
        s = sc.newv[j]
        old = sol[y]
        sc.par[j] = old
        if s != old:
            dc += node_delta_one(m, sol, y, s)
            dp += price_delta(m, wp, y, old, s)
            move_logged(m, sol, t, d, y, s, sc)
            changed += 1
    if changed == 0:
        return False, np.int64(0)
    obj = np.float64(dc) + dp
    ok = obj < -1e-9 * (1.0 + abs(np.float64(dc))) or (allow_equal and obj <= 0.0)
    return _keep_or_undo(m, sol, t, d, sc, cnt, ok, hard, dc)


@inner
def block_move(m, sol, t, d, wp, hard, root, max_nodes, max_work, sc):  # pragma: no cover
    """Grow an induced tree at ``root``, re-choose it by DP; returns (accepted, cost delta)."""
    stamp = _next_stamp(sc)
    cnt = grow_tree(m, root, max_nodes, max_work, sc, stamp)
    if cnt < 2:
        return False, np.int64(0)
    block_solve(m, sol, t, d, wp, hard, cnt, sc, stamp)
    sc.ints[9] = cnt
    return commit_or_revert(m, sol, t, d, wp, hard, cnt, sc, False)


# ------------------------------------------------------------------------------------------ cascade
@inner
def _choose_in_cascade(m, sol, t, d, wp, hard, z, sc, stamp):  # pragma: no cover - numba
    """Best strategy for ``z`` counting forbidden entries only against nodes already moved.

    An unmoved neighbour whose entry would be forbidden is assumed to follow (it is queued next),
    so forced choices propagate along functional edges instead of stalling on them.
    """
    so = m.soff[z]
    k = m.soff[z + 1] - so
    buf = sc.buf
    for s in range(k):
        buf[s] = m.ncost[so + s]
    for q in range(m.inc_off[z], m.inc_off[z + 1]):
        o = m.inc_other[q]
        b = m.eoff[m.inc_edge[q]] + sol[o] * m.inc_mo[q]
        ms = m.inc_ms[q]
        moved = sc.mark[o] == stamp
        for s in range(k):
            c = m.ecost[b + s * ms]
            if moved or c < m.pen:
                buf[s] += c
    for q in range(m.ginc_off[z], m.ginc_off[z + 1]):
        e = m.ginc_edge[q]
        for s in range(k):
            buf[s] += m.ecost[general_index(m, sol, e, z, s)]
    sc.ints[1] += k
    cur = sol[z]
    if hard:
        piece_query(m, t, d, z, sc.qbuf)
    best = INF
    bs = -1
    for s in range(k):
        if s != cur and not m.alive[so + s]:
            continue
        v = np.float64(buf[s]) + price_delta(m, wp, z, cur, s)
        if v < best:
            if hard and s != cur and not fits(m, sc.qbuf, z, cur, s):
                continue
            best = v
            bs = s
    if bs >= 0 and buf[bs] >= m.pen:
        return -2 - bs       # every choice clashes with a moved node
    return bs


@inner
def _queue_conflicts(m, sol, z, sc, stamp, cnt, tail, respond):  # pragma: no cover - numba
    """Queue the unmoved neighbours of ``z`` whose entry with ``z`` is now forbidden or, with
    ``respond``, no longer the cheapest of its row (the neighbour may want to follow)."""
    for q in range(m.inc_off[z], m.inc_off[z + 1]):
        o = m.inc_other[q]
        if sc.mark[o] == stamp or sc.mark[o] == -stamp:
            continue
        b = m.eoff[m.inc_edge[q]] + sol[z] * m.inc_ms[q]
        mo = m.inc_mo[q]
        c = m.ecost[b + sol[o] * mo]
        go = c >= m.pen
        if respond and not go:
            oo = m.soff[o]
            for tt in range(m.soff[o + 1] - oo):
                if m.alive[oo + tt] and m.ecost[b + tt * mo] < c:
                    go = True
                    break
        if go:
            sc.mark[o] = -stamp
            sc.newv[tail] = o
            tail += 1
    return tail


@inner
def cascade(m, sol, t, d, wp, hard, x, s, max_changed, sc, force, abort_clash,
            respond):  # pragma: no cover - numba
    """Set ``x`` to ``s`` and let the consequences propagate (the "follow" move).

    Neighbours left on a forbidden entry re-choose next (forced choices along functional edges),
    breadth first, each counting forbidden entries only against nodes already moved. Kept when the
    whole chain improves the objective (or ``force``) and fits; returns (accepted, cost delta).
    With ``hard`` each step must fit on the load left by the previous ones.
    """
    stamp = _next_stamp(sc)
    cur = sol[x]
    if hard:
        piece_query(m, t, d, x, sc.qbuf)
        if not fits(m, sc.qbuf, x, cur, s):
            return False, np.int64(0)
    dc = node_delta_one(m, sol, x, s)
    dp = price_delta(m, wp, x, cur, s)
    sc.nodes[0] = x
    sc.par[0] = cur
    sc.mark[x] = stamp
    move_logged(m, sol, t, d, x, s, sc)
    cnt = 1
    head = 0
    tail = _queue_conflicts(m, sol, x, sc, stamp, 0, 0, respond)
    while head < tail and cnt < max_changed:
        z = sc.newv[head]
        head += 1
        sc.mark[z] = stamp
        bz = _choose_in_cascade(m, sol, t, d, wp, hard, z, sc, stamp)
        if bz <= -2:
            if abort_clash and not force:
                cnt = -cnt       # a clash: the chain cannot end forbidden-free, give up
                break
            bz = -2 - bz

        if bz < 0 or bz == sol[z]:
            continue
        sc.nodes[cnt] = z
        sc.par[cnt] = sol[z]
        dp += price_delta(m, wp, z, sol[z], bz)
        dc += node_delta_one(m, sol, z, bz)
        move_logged(m, sol, t, d, z, bz, sc)
        cnt += 1
        tail = _queue_conflicts(m, sol, z, sc, stamp, cnt, tail, respond)
    clash = cnt < 0
    if clash:
        cnt = -cnt
    sc.ints[2] += cnt
    obj = np.float64(dc) + dp
    ok = force or (not clash and obj < -1e-9 * (1.0 + abs(np.float64(dc))))
    return _keep_or_undo(m, sol, t, d, sc, cnt, ok, hard, dc)


@inner
def cascade_node(m, sol, t, d, wp, hard, x, max_changed, sc, abort_clash,
                 respond):  # pragma: no cover - numba
    """Try a cascade from each other alive strategy of ``x``, cheapest alone first; first win."""
    so = m.soff[x]
    k = m.soff[x + 1] - so
    cur = sol[x]
    if k < 2:
        return False, np.int64(0)
    node_costs_all(m, sol, x, sc.buf)
    order = np.empty(k, np.int64)
    vals = np.empty(k, np.float64)
    nc = 0
    for s in range(k):
        if s != cur and m.alive[so + s]:
            order[nc] = s
            vals[nc] = np.float64(sc.buf[s] - sc.buf[cur]) + price_delta(m, wp, x, cur, s)
            nc += 1
    idx = np.argsort(vals[:nc])
    for r in range(nc):
        s = order[idx[r]]
        ok, dc = cascade(m, sol, t, d, wp, hard, x, s, max_changed, sc, False, abort_clash, respond)
        if ok:
            return True, dc
    return False, np.int64(0)
