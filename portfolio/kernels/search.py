"""Search drivers built from the moves: worklist descent, iterated local search, memory repair.

Why a worklist: after a kick only the kicked region and its surroundings can improve, so the
descent re-examines a node only when it or a neighbour changed; a full sweep costs O(n) per kick
and would dominate on 30k-node instances.
"""

from __future__ import annotations

import numpy as np
from .jit import inner, kernel

from .incremental import (
    fits, log_price_delta, log_rollback, log_start, move_logged, node_costs_all, node_delta_one,
    piece_query, rand_float, rand_int,
)
from .moves import best_single, block_move, cascade_node, group_member


@inner
def push(sc, x, tail, count, n):  # pragma: no cover - numba
    """Queue ``x`` on the circular worklist unless it is there already; returns (tail, count)."""
    if sc.inq[x] == 0:
        sc.inq[x] = 1
        sc.wl[tail] = x
        tail = (tail + 1) % n
        count += 1
    return tail, count


@inner
def _push_neighbours(m, sc, x, tail, count, n):  # pragma: no cover - numba
    for q in range(m.inc_off[x], m.inc_off[x + 1]):
        tail, count = push(sc, m.inc_other[q], tail, count, n)
    return tail, count


@inner
def _pop(sc, head, count, n):  # pragma: no cover - numba
    """Take the next node off the circular worklist; returns (node, new head, new count)."""
    x = sc.wl[head]
    sc.inq[x] = 0
    return x, (head + 1) % n, count - 1


@inner
def _single_step(m, sol, t, d, wp, hard, sc, x, tail, count, n):  # pragma: no cover - numba
    """The best single move of ``x``, made when it improves (then ``x`` and its neighbours are
    queued again); returns (moved, cost delta, tail, count)."""
    s, dc = best_single(m, sol, t, d, wp, hard, x, sc, False)
    if s < 0:
        return False, np.int64(0), tail, count
    move_logged(m, sol, t, d, x, s, sc)
    tail, count = push(sc, x, tail, count, n)
    tail, count = _push_neighbours(m, sc, x, tail, count, n)
    return True, dc, tail, count


@inner
def _single_descent(m, sol, t, d, wp, hard, sc, head, tail, count, n):  # pragma: no cover - numba
    """Take nodes off the worklist, making each one's best single move, until one has none (or
    the worklist is empty): the loop both descents share. Returns (that node or -1, head, tail,
    count, cost delta)."""
    total = np.int64(0)
    while count > 0:
        x, head, count = _pop(sc, head, count, n)
        moved, dc, tail, count = _single_step(m, sol, t, d, wp, hard, sc, x, tail, count, n)
        if not moved:
            return x, head, tail, count, total
        total += dc
    return np.int64(-1), head, tail, count, total


@kernel
def descend(m, sol, t, d, wp, hard, sc, count, block_nodes, block_work,
            cascade_cap):  # pragma: no cover - numba
    """Improve until the worklist ``sc.wl[:count]`` (flagged in ``sc.inq``) is empty.

    Per node: best single move; failing that a block (induced tree around it, by DP); failing that
    a cascade when ``cascade_cap`` > 0. Returns the cost delta.
    """
    n = len(sol)
    head, tail, total = 0, count % n, np.int64(0)
    while count > 0:
        x, head, tail, count, dc = _single_descent(m, sol, t, d, wp, hard, sc, head, tail, count, n)
        total += dc
        if x < 0:
            break   # the worklist ran empty on single moves
        if block_nodes >= 2:
            ok, dc = block_move(m, sol, t, d, wp, hard, x, block_nodes, block_work, sc)
            if ok:
                total += dc
                for j in range(sc.ints[9]):
                    y = sc.nodes[j]
                    if sol[y] != sc.par[j]:
                        tail, count = push(sc, y, tail, count, n)
                        tail, count = _push_neighbours(m, sc, y, tail, count, n)
                continue
        if cascade_cap > 0:
            ok, dc = cascade_node(m, sol, t, d, wp, hard, x, cascade_cap, sc, True, True)
            if ok:
                total += dc
                tail, count = push(sc, x, tail, count, n)
                tail, count = _push_neighbours(m, sc, x, tail, count, n)
    return total


@kernel
def descend_single(m, sol, t, d, wp, hard, sc, count):  # pragma: no cover - numba
    """:func:`descend` with single-node moves only (``block_nodes`` < 2, no cascade).

    A kernel of its own because it is small: it does not pull in the block and cascade moves, so
    the greedy's first plan (and the relaxation's descent) needs a third of the compilation.
    """
    n = len(sol)
    head, tail, total = 0, count % n, np.int64(0)
    while count > 0:
        _, head, tail, count, dc = _single_descent(m, sol, t, d, wp, hard, sc, head, tail, count, n)
        total += dc
    return total


def descend_all(m, sol, t, d, wp, hard, sc, order, block_nodes, block_work, cascade_cap) -> int:
    """:func:`descend` starting with every node of ``order`` queued (:func:`descend_single` when
    neither blocks nor cascades are asked for: same moves, far less to compile).

    Plain Python on purpose: as a kernel of its own it re-optimised the whole move tree once more
    when compiled (3 s of a cold start) for a loop numpy does in microseconds.
    """
    fresh = order[sc.inq[order] == 0]
    if len(fresh) > 1:   # each node once, first occurrence first (as the worklist wants)
        _, first = np.unique(fresh, return_index=True)
        if len(first) < len(fresh):
            fresh = fresh[np.sort(first)]
    sc.inq[fresh] = 1
    sc.wl[:len(fresh)] = fresh
    if block_nodes < 2 and cascade_cap <= 0:
        return descend_single(m, sol, t, d, wp, hard, sc, len(fresh))
    return descend(m, sol, t, d, wp, hard, sc, len(fresh), int(block_nodes), int(block_work),
                   int(cascade_cap))


@inner
def kick(m, sol, t, d, hard, sc, size):  # pragma: no cover - numba
    """Re-randomise a BFS region of ``size`` nodes around a random node (alive strategies that fit
    alone when ``hard``); queue the region and its neighbours. Returns (cost delta, queued)."""
    n = len(sol)
    stamp = sc.ints[0] + 1
    sc.ints[0] = stamp
    r = rand_int(sc.rng, n)
    sc.nodes[0] = r
    sc.mark[r] = stamp
    cnt = 1
    head = 0
    while head < cnt and cnt < size:
        x = sc.nodes[head]
        head += 1
        q0 = m.inc_off[x]
        nq = m.inc_off[x + 1] - q0
        if nq == 0:
            continue
        st = rand_int(sc.rng, nq)
        for j in range(nq):
            y = m.inc_other[q0 + (st + j) % nq]
            if sc.mark[y] != stamp:
                sc.mark[y] = stamp
                sc.nodes[cnt] = y
                cnt += 1
                if cnt >= size:
                    break
    dc = np.int64(0)
    count = 0
    tail = 0
    for j in range(cnt):
        y, so, k, cur = group_member(m, sol, sc, j)
        if hard:
            piece_query(m, t, d, y, sc.qbuf)
        # reservoir-sample one alive strategy (that fits)
        pick = -1
        seen = 0
        for s in range(k):
            if s == cur or not m.alive[so + s]:
                continue
            if hard and not fits(m, sc.qbuf, y, cur, s):
                continue
            seen += 1
            if rand_int(sc.rng, seen) == 0:
                pick = s
        if pick >= 0:
            dc += node_delta_one(m, sol, y, pick)
            move_logged(m, sol, t, d, y, pick, sc)
        tail, count = push(sc, y, tail, count, n)
    for j in range(cnt):
        tail, count = _push_neighbours(m, sc, sc.nodes[j], tail, count, n)
    return dc, count


@kernel
def ils(m, sol, t, d, wp, hard, sc, iters, kmin, kmax, block_nodes, block_work, cascade_cap,
        temperature, best_sol, max_evals=-1):  # pragma: no cover - numba
    """Iterated local search: kick, descend, keep when not worse (or by a Metropolis test at
    ``temperature``, in objective units), else roll back the touched nodes.

    The objective is cost + price (``wp``). Whenever the walk reaches a new best objective since
    the call started, ``best_sol`` receives a copy. Stops after ``iters`` kicks or once
    ``max_evals`` strategy evaluations are spent (a time budget numba can keep: no clock inside).
    Returns (cost delta of the final state, cost delta of the best state, objective delta of the
    best state, improvements).
    """
    cur_c = np.int64(0)
    cur_o = 0.0
    best_c = np.int64(0)
    best_o = 0.0
    improved = 0
    e0 = sc.ints[1]
    for it in range(iters):
        if max_evals >= 0 and sc.ints[1] - e0 > max_evals:
            break
        log_start(sc)
        sc.ints[4] += 1
        size = kmin + rand_int(sc.rng, kmax - kmin + 1)
        dc, count = kick(m, sol, t, d, hard, sc, size)
        dc += descend(m, sol, t, d, wp, hard, sc, count, block_nodes, block_work, cascade_cap)
        do = np.float64(dc) + log_price_delta(m, wp, sol, sc)
        accept = do <= 0.0
        if not accept and temperature > 0.0:
            accept = rand_float(sc.rng) < np.exp(-do / temperature)
        sc.ints[5] = 0
        if accept:
            cur_c += dc
            cur_o += do
            if cur_o < best_o - 1e-9 * (1.0 + abs(best_o)):
                best_o = cur_o
                best_c = cur_c
                best_sol[:] = sol
                improved += 1
        else:
            log_rollback(m, sol, t, d, sc)
    return cur_c, best_c, best_o, improved


# ------------------------------------------------------------------------------------------ repair
BUCKET = 64


@kernel
def stab_index(m, npts):  # pragma: no cover - numba
    """Pieces per bucket of ``BUCKET`` time points (CSR), and each piece's node: finds the pieces
    live at a time point without scanning all of them."""
    nb = (npts + BUCKET - 1) // BUCKET + 1
    n = len(m.soff) - 1
    owner = np.empty(len(m.pc_lo), np.int64)
    for i in range(n):
        for p in range(m.pc_off[i], m.pc_off[i + 1]):
            owner[p] = i
    cnt = np.zeros(nb + 1, np.int64)
    for p in range(len(m.pc_lo)):
        if m.pc_hi[p] > m.pc_lo[p]:
            for b in range(m.pc_lo[p] // BUCKET, (m.pc_hi[p] - 1) // BUCKET + 1):
                cnt[b + 1] += 1
    off = np.zeros(nb + 1, np.int64)
    for b in range(nb):
        off[b + 1] = off[b] + cnt[b + 1]
    fill = off.copy()
    items = np.empty(off[nb], np.int64)
    for p in range(len(m.pc_lo)):
        if m.pc_hi[p] > m.pc_lo[p]:
            for b in range(m.pc_lo[p] // BUCKET, (m.pc_hi[p] - 1) // BUCKET + 1):
                items[fill[b]] = p
                fill[b] += 1
    return off, items, owner


@inner
def argmax_leaf(t, d):  # pragma: no cover - numba
    """Index of a leaf holding the tree's maximum."""
    size = len(t) >> 1
    p = 1
    while p < size:
        target = t[p] - d[p]
        p = 2 * p if t[2 * p] == target else 2 * p + 1
    return p - size


@kernel
def repair(m, sol, t, d, sc, boff, bitems, owner, max_rounds):  # pragma: no cover - numba
    """Greedy memory repair: while some time point is over capacity, switch nodes live there to
    lower-usage strategies, least cost increase per unit of usage saved first, until that point
    fits. Returns (cost delta, feasible)."""
    total = np.int64(0)
    n = len(sol)
    cand_r = np.empty(n, np.float64)
    cand_n = np.empty(n, np.int64)
    cand_s = np.empty(n, np.int64)
    cand_u = np.empty(n, np.int64)
    for rnd in range(max_rounds):
        excess = t[1]
        if excess <= 0:
            return total, True
        tp = argmax_leaf(t, d)
        b = tp // BUCKET
        nc = 0
        for j in range(boff[b], boff[b + 1]):
            p = bitems[j]
            if not (m.pc_lo[p] <= tp < m.pc_hi[p]):
                continue
            i = owner[p]
            so = m.soff[i]
            k = m.soff[i + 1] - so
            cur = sol[i]
            u0 = m.pc_use[m.pc_uoff[p] + cur]
            if u0 <= 0:
                continue
            better = False
            for s in range(k):
                if m.alive[so + s] and m.pc_use[m.pc_uoff[p] + s] < u0:
                    better = True
                    break
            if not better:
                continue
            node_costs_all(m, sol, i, sc.buf)
            br = 1e300
            bs = -1
            for s in range(k):
                if not m.alive[so + s]:
                    continue
                du = u0 - m.pc_use[m.pc_uoff[p] + s]
                if du <= 0:
                    continue
                r = np.float64(sc.buf[s] - sc.buf[cur]) / np.float64(du)
                if r < br:
                    br = r
                    bs = s
            if bs >= 0:
                cand_r[nc] = br
                cand_n[nc] = i
                cand_s[nc] = bs
                cand_u[nc] = u0 - m.pc_use[m.pc_uoff[p] + bs]
                nc += 1
        if nc == 0:
            return total, False
        idx = np.argsort(cand_r[:nc])
        saved = np.int64(0)
        for r in range(nc):
            j = idx[r]
            i = cand_n[j]
            total += node_delta_one(m, sol, i, cand_s[j])
            move_logged(m, sol, t, d, i, cand_s[j], sc)
            saved += cand_u[j]
            if saved >= excess:
                break
    return total, t[1] <= 0


# ------------------------------------------------------------------------------------------ greedy
@kernel
def buy_by_ratio(m, sol, t, d, sc, max_rounds):  # pragma: no cover - numba
    """Greedy design 1: repeatedly take, over all nodes, the improving moves that fit, largest cost
    saving per unit of extra memory volume (usage x time points) first, re-checking each before
    applying it. Returns the number of moves applied."""
    n = len(sol)
    ratio = np.empty(n, np.float64)
    target = np.empty(n, np.int64)
    applied = 0
    for rnd in range(max_rounds):
        nc = 0
        for i in range(n):
            k = node_costs_all(m, sol, i, sc.buf)
            cur = sol[i]
            so = m.soff[i]
            base = sc.buf[cur]
            anyimp = False
            for s in range(k):
                if s != cur and m.alive[so + s] and sc.buf[s] < base:
                    anyimp = True
                    break
            if not anyimp:
                continue
            piece_query(m, t, d, i, sc.qbuf)
            br = -1.0
            bs = -1
            for s in range(k):
                dc = sc.buf[s] - base
                if s == cur or not m.alive[so + s] or dc >= 0:
                    continue
                if not fits(m, sc.qbuf, i, cur, s):
                    continue
                dv = 0.0
                for p in range(m.pc_off[i], m.pc_off[i + 1]):
                    u = m.pc_uoff[p]
                    dv += (np.float64(m.pc_use[u + s] - m.pc_use[u + cur])
                           * (m.pc_hi[p] - m.pc_lo[p]))
                r = -np.float64(dc) / max(dv, 1.0)
                if r > br:
                    br = r
                    bs = s
            if bs >= 0:
                ratio[nc] = -br
                target[nc] = bs
                sc.nodes[nc] = i
                nc += 1
        if nc == 0:
            break
        idx = np.argsort(ratio[:nc])
        moved = 0
        for r in range(nc):
            j = idx[r]
            i = sc.nodes[j]
            s = target[j]
            if node_delta_one(m, sol, i, s) >= 0:
                continue
            piece_query(m, t, d, i, sc.qbuf)
            if not fits(m, sc.qbuf, i, sol[i], s):
                continue
            move_logged(m, sol, t, d, i, s, sc)
            moved += 1
        applied += moved
        if moved == 0:
            break
    return applied
