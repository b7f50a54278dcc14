"""Elimination: nodes whose choice is known or can be minimised out leave the problem.

* fixing (``single``): a node with one strategy left folds its edges into its neighbours' costs, its
  cost into the offset and its usage into the capacity profile;
* memory-free elimination (``eliminate``): a node owning no memory-relevant interval with at most
  two neighbours goes - degree 0 takes its cheapest strategy, degree 1 is minimised into the
  neighbour's costs, degree 2 becomes an edge between its neighbours (min-plus product).

Each elimination records how to recover the node's choice from its neighbours' (an expansion chunk).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..evaluate import exact_sum
from ..problem import FORBIDDEN, offsets_from_counts
from .state import Infeasible, State, absorb_add, absorb_addv

_F = FORBIDDEN


@njit(cache=True)
def fix_kernel(K, SO, alive, ncost, eu, ev, toff, tab, fixed, contrib, dead):
    """Fold edges touching fixed nodes (``fixed[i]`` = its strategy or -1) into the other end's costs;
    an edge between two fixed nodes contributes a constant."""
    for e in range(len(eu)):
        u = eu[e]
        v = ev[e]
        fu = fixed[u]
        fv = fixed[v]
        if fu < 0 and fv < 0:
            continue
        dead[e] = True
        kv = K[v]
        off = toff[e]
        if fu >= 0 and fv >= 0:
            contrib[e] = tab[off + fu * kv + fv]
        elif fu >= 0:
            for q in range(kv):
                if alive[SO[v] + q]:
                    ncost[SO[v] + q] = absorb_add(ncost[SO[v] + q], tab[off + fu * kv + q])
        else:
            for p in range(K[u]):
                if alive[SO[u] + p]:
                    ncost[SO[u] + p] = absorb_add(ncost[SO[u] + p], tab[off + p * kv + fv])



def fix_nodes(st: State, nodes: np.ndarray, strategies: np.ndarray, key: str) -> None:
    """Fix ``nodes`` at ``strategies``: edges into neighbours' costs, cost to the offset, usage to
    the capacity profile; records constants for the expansion."""
    if len(nodes) == 0:
        return
    fixed = np.full(st.n, -1, dtype=np.int64)
    fixed[nodes] = strategies
    costs = st.ncost[st.SO[nodes] + strategies]
    if np.any(costs == _F):
        i = int(nodes[np.flatnonzero(costs == _F)[0]])
        raise Infeasible(f"node {i} is left with a forbidden strategy only")
    if len(st.eu):
        contrib = np.zeros(len(st.eu), dtype=np.int64)
        dead = np.zeros(len(st.eu), dtype=np.bool_)
        fix_kernel(st.K, st.SO, st.alive, st.ncost, st.eu, st.ev, st.toff, st.tab,
                    fixed, contrib, dead)
        if np.any(contrib == _F):
            e = int(np.flatnonzero(contrib == _F)[0])
            raise Infeasible(f"nodes {int(st.eu[e])} and {int(st.ev[e])} are fixed to "
                              f"strategies whose edge entry is forbidden")
        st.offset += exact_sum(contrib)
        if dead.any():
            st.keep_edges(~dead)
    st.offset += exact_sum(costs)
    # intervals of the fixed nodes: constant usage
    own = np.flatnonzero(fixed[st.iv_owner] >= 0)
    if len(own):
        s = fixed[st.iv_owner[own]]
        st.fixed_usage(st.iv_start[own], st.iv_end[own], st.iv_use[st.iv_uoff[own] + s])
        st.drop_intervals(fixed[st.iv_owner] >= 0)
    st.active[nodes] = False
    st.add_chunk(nodes, np.full(len(nodes), st.n), np.zeros(len(nodes)),
                   np.full(len(nodes), st.n), np.arange(len(nodes)), strategies)
    st.count(key, len(nodes))
    st.kill_forbidden("forbidden_after_folding")


def single(st: State) -> bool:
    counts = st.alive_counts()
    cand = np.flatnonzero(st.active & ~st.pinned & (counts == 1))
    if len(cand) >= int(st.active.sum()):
        cand = cand[1:]  # keep one node: the reduced problem is never empty
    if len(cand) == 0:
        return False
    is_cand = np.zeros(st.n, dtype=bool)
    is_cand[cand] = True
    seg = np.repeat(np.arange(st.n), st.K)
    slots = np.flatnonzero(st.alive & is_cand[seg])  # exactly one per candidate, by node
    fix_nodes(st, seg[slots], slots - st.SO[seg[slots]], "single_strategy_nodes")
    return True


def eliminate(st: State) -> bool:
    n_active = int(st.active.sum())
    if n_active <= 1:
        return False
    has_iv = np.zeros(st.n, dtype=bool)
    has_iv[st.iv_owner] = True
    cand = st.active & ~st.pinned & ~has_iv
    if not cand.any():
        return False
    m = len(st.eu)
    # distinct neighbours per node
    a = np.concatenate([st.eu, st.ev])
    b = np.concatenate([st.ev, st.eu])
    pairs = np.unique(np.stack([a, b]), axis=1) if m else np.zeros((2, 0), dtype=np.int64)
    deg = np.bincount(pairs[0], minlength=st.n)
    pairset = set(zip(pairs[0].tolist(), pairs[1].tolist()))
    cand &= deg <= 2
    if not cand.any():
        return False
    inc_off, inc = st.incidence()
    alive_n = st.alive_counts()
    touched = np.zeros(st.n, dtype=bool)
    dead = np.zeros(m, dtype=bool)
    extra: list[tuple[int, int, np.ndarray]] = []
    rec: dict[int, list] = {0: [], 1: [], 2: []}
    for w in np.flatnonzero(cand).tolist():
        if touched[w]:
            continue
        if n_active <= 1:
            break
        edges = inc[inc_off[w]:inc_off[w + 1]]
        nbs = sorted({int(st.ev[e]) if st.eu[e] == w else int(st.eu[e]) for e in edges.tolist()})
        sw, kw = st.SO[w], st.K[w]
        cw = st.ncost[sw:sw + kw].copy()
        cw[~st.alive[sw:sw + kw]] = _F
        if len(nbs) == 0:
            s = int(np.argmin(cw))
            if cw[s] == _F:
                raise Infeasible(f"node {w}: every strategy is forbidden")
            st.offset += int(cw[s])
            rec[0].append((w, s))
        else:
            mats = {}
            for e in edges.tolist():
                t = st.table(e)
                other = int(st.ev[e]) if st.eu[e] == w else int(st.eu[e])
                t = t.T if st.eu[e] == w else t  # shape (K_other, K_w)
                mats[other] = absorb_addv(mats[other], t) if other in mats else t
            if len(nbs) == 1:
                u = nbs[0]
                C = absorb_addv(mats[u], np.broadcast_to(cw, mats[u].shape))
                best = np.argmin(C, axis=1)
                minv = C[np.arange(C.shape[0]), best]
                su = st.SO[u]
                rows = st.alive[su:su + st.K[u]]
                st.ncost[su:su + st.K[u]][rows] = absorb_addv(st.ncost[su:su + st.K[u]][rows],
                                                            minv[rows])
                rec[1].append((w, u, best))
            else:
                ua, ub = nbs
                ka, kb = int(alive_n[ua]), int(alive_n[ub])
                kk = int(alive_n[w])
                exists = (ua, ub) in pairset
                if not exists and ka * kb > 2 * (ka * kk + kk * kb) + 16:
                    continue  # the new table would be much larger than the two it replaces
                A = mats[ua]            # (Ka, Kw)
                B = mats[ub].T          # (Kw, Kb)
                mask = (A == _F)[:, :, None] | (cw == _F)[None, :, None] | (B == _F)[None, :, :]
                tot = np.where(mask, _F, A[:, :, None] + cw[None, :, None] + B[None, :, :])
                best = np.argmin(tot, axis=1)
                minv = np.take_along_axis(tot, best[:, None, :], axis=1)[:, 0, :]
                extra.append((ua, ub, minv))
                rec[2].append((w, ua, ub, best))
        touched[w] = True
        touched[nbs] = True
        dead[edges] = True
        st.active[w] = False
        n_active -= 1
    done = len(rec[0]) + len(rec[1]) + len(rec[2])
    if done == 0:
        return False
    for w, s in rec[0]:
        st.add_chunk([w], [st.n], [0], [st.n], [0], [s])
    if rec[1]:
        nodes = [r[0] for r in rec[1]]
        tables = [r[2] for r in rec[1]]
        off = offsets_from_counts(np.array([len(t) for t in tables]))
        st.add_chunk(nodes, [r[1] for r in rec[1]], np.ones(len(nodes)), np.full(len(nodes), st.n),
                       off[:-1], np.concatenate(tables))
    if rec[2]:
        nodes = [r[0] for r in rec[2]]
        tables = [r[3].ravel() for r in rec[2]]
        off = offsets_from_counts(np.array([len(t) for t in tables]))
        st.add_chunk(nodes, [r[1] for r in rec[2]], [st.K[r[2]] for r in rec[2]],
                       [r[2] for r in rec[2]], off[:-1], np.concatenate(tables))
    st.count("memory_free_degree0", len(rec[0]))
    st.count("memory_free_degree1", len(rec[1]))
    st.count("memory_free_degree2", len(rec[2]))
    st.keep_edges(~dead, extra)
    st.kill_forbidden("forbidden_after_folding")
    return True

