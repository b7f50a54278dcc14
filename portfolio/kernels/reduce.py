"""Functional merging: the search's own exact "group view" of an instance.

Why: on most contest instances forbidden entries tie nodes into long chains. An edge ``u -> v`` is
*functional* when every usable strategy of ``u`` has exactly one finite partner in ``v``: in any
forbidden-free plan ``v`` is then a function of ``u``. Following such edges from a root determines
a whole group (A: 35k nodes collapse to a few hundred groups, techniques.md section 0). A move of
the root *is* the "follow" move of the whole group, so searching over roots, with group costs summed
into unaries, group-to-group edges summed into tables and the members' intervals attached (mapped
usages; a merged node owns many intervals), is exact for forbidden-free plans and much stronger
than single-node moves that every chain blocks. Merging repeats until no functional edge is left.

A reduced plan expands with one gather: ``orig[v] = maps[mapoff[v] + red[root[v]]]``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
from numba import njit

from .model import KModel, assemble
from .moves import functional_incidences

MAX_TABLE_ENTRIES = 40_000_000
"""Give up merging when the reduced edge tables would exceed this many entries."""


class Reduction(NamedTuple):
    """A reduced model plus the way back to the original nodes."""

    model: KModel
    root: np.ndarray      # int64[n_orig]: reduced node of each original node
    mapoff: np.ndarray    # int64[n_orig]: start of the node's map in ``maps``
    maps: np.ndarray      # original strategy when the reduced node takes s (-1: impossible)
    origin: np.ndarray    # int64[n_red]: an original node whose strategy equals the reduced one


def identity(m: KModel) -> Reduction:
    n = len(m.soff) - 1
    counts = np.diff(m.soff)
    maps = np.arange(len(m.ncost), dtype=np.int64) - np.repeat(m.soff[:-1], counts)
    return Reduction(m, np.arange(n, dtype=np.int64), m.soff[:-1].copy(), maps,
                     np.arange(n, dtype=np.int64))


def expand(red: Reduction, sol: np.ndarray) -> np.ndarray:
    """The original plan of a reduced plan.

    A map entry of -1 (a strategy with no allowed partner) only exists on instances without any
    forbidden-free plan, where arc consistency gave up; strategy 0 stands in, so the plan stays valid
    (and is scored as forbidden).
    """
    return np.maximum(red.maps[red.mapoff + sol[red.root]], 0)


def contract(red: Reduction, sol: np.ndarray) -> Optional[np.ndarray]:
    """The reduced plan of an original plan, or None when the plan is not one of its expansions
    (it then has a forbidden choice the reduction ruled out)."""
    out = np.asarray(sol, np.int64)[red.origin]
    if not np.array_equal(expand(red, out), sol):
        return None
    return out


@njit(cache=True)
def _assign(m, func, order, eligible):  # pragma: no cover - numba
    """Roots in ``order``; each root claims, breadth first along functional incidences, every
    unclaimed eligible node. Returns (root, parent incidence, visiting sequence)."""
    n = len(m.soff) - 1
    root = np.full(n, -1, np.int64)
    via = np.full(n, -1, np.int64)
    seq = np.empty(n, np.int64)
    ns = 0
    for r in range(n):
        x = order[r]
        if root[x] >= 0:
            continue
        root[x] = x
        seq[ns] = x
        head = ns
        ns += 1
        while head < ns:
            u = seq[head]
            head += 1
            for q in range(m.inc_off[u], m.inc_off[u + 1]):
                if not func[q]:
                    continue
                v = m.inc_other[q]
                if root[v] >= 0 or not eligible[v]:
                    continue
                root[v] = x
                via[v] = q
                seq[ns] = v
                ns += 1
    return root, via, seq


@njit(cache=True)
def _maps(m, root, via, seq, inc_owner, mapoff, maps):  # pragma: no cover - numba
    """Fill each node's map (root strategy -> own strategy) in visiting order."""
    for j in range(len(seq)):
        v = seq[j]
        r = root[v]
        kr = m.soff[r + 1] - m.soff[r]
        mv = mapoff[v]
        if via[v] < 0:
            for s in range(kr):
                maps[mv + s] = s if m.alive[m.soff[r] + s] else -1
            continue
        q = via[v]
        u = inc_owner[q]
        mu = mapoff[u]
        vo = m.soff[v]
        kv = m.soff[v + 1] - vo
        b = m.eoff[m.inc_edge[q]]
        for s in range(kr):
            a = maps[mu + s]
            maps[mv + s] = -1
            if a < 0:
                continue
            for t in range(kv):
                if m.alive[vo + t] and m.ecost[b + t * m.inc_mo[q] + a * m.inc_ms[q]] < m.pen:
                    maps[mv + s] = t
                    break


@njit(cache=True)
def _unaries(m, root, rid, mapoff, maps, rsoff, unary, internal):  # pragma: no cover - numba
    """Sum member node costs and group-internal edge entries into the roots' unaries."""
    n = len(m.soff) - 1
    pen = m.pen
    for v in range(n):
        r = root[v]
        kr = m.soff[r + 1] - m.soff[r]
        o = rsoff[rid[r]]
        for s in range(kr):
            a = maps[mapoff[v] + s]
            c = pen if a < 0 else m.ncost[m.soff[v] + a]
            unary[o + s] = min(unary[o + s] + c, pen)
    for e in internal:
        u = m.enodes[m.enoff[e]]
        v = m.enodes[m.enoff[e] + 1]
        r = root[u]
        kr = m.soff[r + 1] - m.soff[r]
        kv = m.soff[v + 1] - m.soff[v]
        o = rsoff[rid[r]]
        for s in range(kr):
            a = maps[mapoff[u] + s]
            b = maps[mapoff[v] + s]
            c = pen if a < 0 or b < 0 else m.ecost[m.eoff[e] + a * kv + b]
            unary[o + s] = min(unary[o + s] + c, pen)


@njit(cache=True)
def _tables(m, root, mapoff, maps, external, red_of, swap, reoff, rk2, etab):  # pragma: no cover
    """Sum the entries of group-to-group edges into the reduced tables."""
    pen = m.pen
    for j in range(len(external)):
        e = external[j]
        u = m.enodes[m.enoff[e]]
        v = m.enodes[m.enoff[e] + 1]
        if swap[j]:
            u, v = v, u
        ru = root[u]
        rv = root[v]
        ka = m.soff[ru + 1] - m.soff[ru]
        kb = m.soff[rv + 1] - m.soff[rv]
        kv_orig = m.soff[m.enodes[m.enoff[e] + 1] + 1] - m.soff[m.enodes[m.enoff[e] + 1]]
        o = reoff[red_of[j]]
        for s in range(ka):
            a = maps[mapoff[u] + s]
            for t in range(kb):
                b = maps[mapoff[v] + t]
                if a < 0 or b < 0:
                    c = pen
                elif swap[j]:
                    c = m.ecost[m.eoff[e] + b * kv_orig + a]
                else:
                    c = m.ecost[m.eoff[e] + a * kv_orig + b]
                idx = o + s * kb + t
                etab[idx] = min(etab[idx] + c, pen)


def reduce_once(m: KModel) -> Optional[Reduction]:
    """One round of functional merging, or None when nothing merges (or tables would explode)."""
    n = len(m.soff) - 1
    if n == 0:
        return None
    counts = np.diff(m.soff)
    func = functional_incidences(m)
    on_general = np.diff(m.ginc_off) > 0
    inc_owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(m.inc_off))
    func &= ~on_general[inc_owner] & ~on_general[m.inc_other]
    if not func.any():
        return None
    indeg = np.bincount(m.inc_other[func], minlength=n)
    order = np.concatenate([np.flatnonzero(indeg == 0), np.flatnonzero(indeg > 0)])
    root, via, seq = _assign(m, func, order, ~on_general)
    roots = np.flatnonzero(root == np.arange(n))
    nr = len(roots)
    if nr == n:
        return None
    rid = np.full(n, -1, np.int64)
    rid[roots] = np.arange(nr)
    rk = counts[roots]
    rsoff = np.zeros(nr + 1, np.int64)
    np.cumsum(rk, out=rsoff[1:])
    kroot = counts[root]
    mapoff = np.zeros(n, np.int64)
    np.cumsum(kroot[:-1], out=mapoff[1:])
    maps = np.full(int(kroot.sum()), -1, np.int64)
    _maps(m, root, via, seq, inc_owner, mapoff, maps)

    arity = np.diff(m.enoff)
    ebin = np.zeros(len(arity), np.bool_)
    two = np.flatnonzero(arity == 2)
    ebin[two] = m.enodes[m.enoff[two]] != m.enodes[m.enoff[two] + 1]
    eu = np.where(ebin, m.enodes[np.minimum(m.enoff[:-1], len(m.enodes) - 1)], -1)
    ev = np.where(ebin, m.enodes[np.minimum(m.enoff[:-1] + 1, len(m.enodes) - 1)], -1)
    binary = np.flatnonzero(ebin)
    same = root[eu[binary]] == root[ev[binary]]
    internal = binary[same]
    external = binary[~same]
    ra = rid[root[eu[external]]]
    rb = rid[root[ev[external]]]
    swap = ra > rb
    lo_r, hi_r = np.minimum(ra, rb), np.maximum(ra, rb)
    keys = lo_r * nr + hi_r
    ukeys, red_of = np.unique(keys, return_inverse=True)
    ea, eb = ukeys // nr, ukeys % nr
    sizes = rk[ea] * rk[eb]
    general = np.flatnonzero(~ebin)
    gsizes = np.diff(m.eoff)[general]
    if int(sizes.sum()) + int(gsizes.sum()) > MAX_TABLE_ENTRIES:
        return None
    reoff = np.zeros(len(ukeys) + len(general) + 1, np.int64)
    np.cumsum(np.concatenate([sizes, gsizes]), out=reoff[1:])
    etab = np.zeros(int(reoff[-1]), np.int64)
    _tables(m, root, mapoff, maps, external, red_of.astype(np.int64), swap, reoff,
            rk, etab)
    # general edges: all their nodes are roots with identity maps; copy tables as they are
    renodes = [np.stack([ea, eb], axis=1).ravel()]
    rencount = [np.full(len(ukeys), 2, np.int64)]
    for j, e in enumerate(general):
        a, b = m.eoff[e], m.eoff[e + 1]
        etab[reoff[len(ukeys) + j]:reoff[len(ukeys) + j + 1]] = m.ecost[a:b]
        renodes.append(rid[m.enodes[m.enoff[e]:m.enoff[e + 1]]])
        rencount.append(np.array([m.enoff[e + 1] - m.enoff[e]], np.int64))
    enodes = np.concatenate(renodes).astype(np.int64)
    enoff = np.zeros(len(ukeys) + len(general) + 1, np.int64)
    np.cumsum(np.concatenate(rencount), out=enoff[1:])

    unary = np.zeros(int(rsoff[-1]), np.int64)
    _unaries(m, root, rid, mapoff, maps, rsoff, unary, internal)

    # members' pieces become the root's intervals, usages mapped through the member's map
    pnode = np.repeat(np.arange(n, dtype=np.int64), np.diff(m.pc_off))
    pk = kroot[pnode]
    iv_uoff = np.zeros(len(pnode) + 1, np.int64)
    np.cumsum(pk, out=iv_uoff[1:])
    within = np.arange(int(iv_uoff[-1]), dtype=np.int64) - np.repeat(iv_uoff[:-1], pk)
    src = maps[np.repeat(mapoff[pnode], pk) + within]
    vals = m.pc_use[np.repeat(m.pc_uoff, pk) + np.maximum(src, 0)]
    iv_use = np.where(src >= 0, vals, 0)
    alive = unary < m.pen
    red_model = assemble(rsoff, unary, reoff, etab, enoff, enodes, rid[root[pnode]], m.pc_lo,
                         m.pc_hi, iv_uoff, iv_use, m.base, m.cap, m.pen, True, alive)
    return Reduction(red_model, rid[root], mapoff, maps, roots.astype(np.int64))


def compose(outer: Reduction, inner: Reduction) -> Reduction:
    """``inner`` reduces ``outer.model``; the result maps original nodes straight to it."""
    mid = outer.root                                   # original -> middle node
    root = inner.root[mid]
    kmid = np.diff(outer.model.soff)                   # middle strategy counts
    kfin = np.diff(inner.model.soff)[root]             # final strategy count per original node
    mapoff = np.zeros(len(root), np.int64)
    np.cumsum(kfin[:-1], out=mapoff[1:])
    within = np.arange(int(kfin.sum()), dtype=np.int64) - np.repeat(mapoff, kfin)
    node = np.repeat(np.arange(len(root), dtype=np.int64), kfin)
    s_mid = inner.maps[inner.mapoff[mid[node]] + within]
    ok = (s_mid >= 0) & (s_mid < kmid[mid[node]])
    maps = np.full(len(within), -1, np.int64)
    maps[ok] = outer.maps[outer.mapoff[node[ok]] + s_mid[ok]]
    origin = outer.origin[inner.origin]
    return Reduction(inner.model, root, mapoff, maps, origin)


def reduce_model(m: KModel, rounds: int = 8) -> Reduction:
    """Merge functional groups until nothing changes (at most ``rounds`` rounds)."""
    red = identity(m)
    for _ in range(rounds):
        nxt = reduce_once(red.model)
        if nxt is None:
            break
        red = compose(red, nxt)
    return red
