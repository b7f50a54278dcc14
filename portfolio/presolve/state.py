"""The working instance of the presolve: original node ids, masked strategies, flat edge tables.

Why one mutable state: every reduction family (the sibling modules) reads and narrows the same
arrays, so each pass costs O(size) and nothing is copied between passes. Node ids stay the original
ones and each table keeps the original strategy numbering; removed strategies are only masked
(``alive``) until :func:`portfolio.presolve.mapping.build` lays out the reduced problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..problem import FORBIDDEN, INT64_MAX, Problem, fold_repeated_nodes, offsets_from_counts

_F = FORBIDDEN


class Infeasible(Exception):
    """Raised inside the presolve when a reduction proves that no plan avoids forbidden choices or
    fits in memory."""


@njit(cache=True)
def absorb_add(a, b):
    """Absorbing addition: a forbidden operand makes the sum forbidden."""
    if a == FORBIDDEN or b == FORBIDDEN:
        return FORBIDDEN
    return a + b


def absorb_addv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Absorbing elementwise addition (numpy)."""
    return np.where((a == _F) | (b == _F), _F, a + b)


def segment_fill_index(offsets: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR rows of the given lengths: (row of each slot, position of each slot within its row)."""
    total = int(counts.sum())
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    within = np.arange(total, dtype=np.int64) - offsets[:-1][rows]
    return rows, within


@dataclass
class Chunk:
    """Expansion records appended together: ``x[nodes] = table[off + x[d1] * s1 + x[d2]]``.

    Dependencies are original nodes whose strategy is known when the chunk is replayed (chunks are
    replayed newest first); the sentinel node ``n`` always holds 0.
    """

    nodes: np.ndarray
    d1: np.ndarray
    s1: np.ndarray
    d2: np.ndarray
    off: np.ndarray
    table: np.ndarray


class State:
    """The working instance. Node ids stay the original ones and every table keeps each node's
    original strategy numbering; removed strategies are only masked (``alive``) until the final build."""

    def __init__(self, problem: Problem, sw: dict, counts: dict) -> None:
        self.P = problem
        self.sw = sw
        self.c = counts
        n = problem.num_nodes
        self.n = n
        self.K = np.array(problem.strategy_counts, dtype=np.int64)
        self.SO = np.array(problem.strategy_offsets, dtype=np.int64)
        self.alive = np.ones(len(problem.node_costs), dtype=np.bool_)
        self.ncost = np.array(problem.node_costs, dtype=np.int64)
        self.active = np.ones(n, dtype=np.bool_)
        self.pinned = np.zeros(n, dtype=np.bool_)
        self.offset = 0
        self.chunks: list[Chunk] = []
        # intervals (only those still owned by active nodes and possibly relevant)
        self.iv_start = np.array(problem.interval_start, dtype=np.int64)
        self.iv_end = np.array(problem.interval_end, dtype=np.int64)
        self.iv_owner = np.array(problem.interval_node, dtype=np.int64)
        self.iv_uoff = np.array(problem.interval_usage_offsets, dtype=np.int64)
        self.iv_use = np.array(problem.interval_usages, dtype=np.int64)
        # usage moved into the capacity profile (fixed nodes, constant intervals)
        self.fx_start: list[np.ndarray] = []
        self.fx_end: list[np.ndarray] = []
        self.fx_use: list[np.ndarray] = []
        # binary edges between distinct active nodes, tables over original strategy numbering
        self.eu = np.zeros(0, dtype=np.int64)
        self.ev = np.zeros(0, dtype=np.int64)
        self.toff = np.zeros(1, dtype=np.int64)
        self.tab = np.zeros(0, dtype=np.int64)
        self.hyper: list[tuple[np.ndarray, np.ndarray]] = []  # (nodes, table with one axis per node)
        self.time_info: dict | None = None
        self.combine = True  # set by normalise(): False when the magnitude guard tripped
        # The judge checks memory from the first start of a non-empty interval on (see
        # Problem.time_points): capacity before it, even negative, binds nothing.
        nonempty = problem.interval_end > problem.interval_start
        self.t0 = int(problem.interval_start[nonempty].min()) if nonempty.any() else None

    # ------------------------------------------------------------------ small utilities
    def count(self, key: str, k: int) -> None:
        self.c[key] = self.c.get(key, 0) + int(k)

    def domain(self, i: int) -> np.ndarray:
        return np.flatnonzero(self.alive[self.SO[i]:self.SO[i] + self.K[i]])

    def alive_counts(self) -> np.ndarray:
        seg = np.repeat(np.arange(self.n), self.K)
        return np.bincount(seg[self.alive], minlength=self.n)

    def table(self, e: int) -> np.ndarray:
        return self.tab[self.toff[e]:self.toff[e + 1]].reshape(self.K[self.eu[e]], self.K[self.ev[e]])

    def incidence(self) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.eu)
        ends = np.concatenate([self.eu, self.ev])
        edges = np.concatenate([np.arange(m), np.arange(m)])
        order = np.argsort(ends, kind="stable")
        off = offsets_from_counts(np.bincount(ends, minlength=self.n))
        return off, edges[order].astype(np.int64)

    def add_chunk(self, nodes, d1, s1, d2, off, table) -> None:
        if len(nodes):
            self.chunks.append(Chunk(*(np.asarray(a, dtype=np.int64) for a in
                                        (nodes, d1, s1, d2, off, table))))

    def set_edges(self, eu, ev, tables_flat, sizes) -> None:
        self.eu = np.asarray(eu, dtype=np.int64)
        self.ev = np.asarray(ev, dtype=np.int64)
        self.toff = offsets_from_counts(np.asarray(sizes, dtype=np.int64))
        self.tab = np.ascontiguousarray(tables_flat, dtype=np.int64)

    def keep_edges(self, keep: np.ndarray, extra: list[tuple[int, int, np.ndarray]] = ()) -> None:
        """Keep the edges flagged in ``keep`` and append ``extra`` (u, v, table) edges."""
        sizes = np.diff(self.toff)
        if not keep.all():
            slot_keep = np.repeat(keep, sizes)
            tab = self.tab[slot_keep]
            eu, ev, sz = self.eu[keep], self.ev[keep], sizes[keep]
        else:
            tab, eu, ev, sz = self.tab, self.eu, self.ev, sizes
        if extra:
            eu = np.concatenate([eu, [x[0] for x in extra]])
            ev = np.concatenate([ev, [x[1] for x in extra]])
            sz = np.concatenate([sz, [x[2].size for x in extra]])
            tab = np.concatenate([tab] + [x[2].ravel() for x in extra])
        self.set_edges(eu, ev, tab, sz)

    def kill_forbidden(self, key: str) -> int:
        if not self.sw["forbidden"]:
            return 0
        bad = self.alive & (self.ncost == _F)
        k = int(np.count_nonzero(bad))
        if k:
            self.alive[bad] = False
            self.count(key, k)
            self.check_domains()
        return k

    def check_domains(self) -> None:
        empty = np.flatnonzero(self.active & (self.alive_counts() == 0))
        if len(empty):
            i = int(empty[0])
            raise Infeasible(f"node {i}: every strategy is forbidden (after folding the nodes and "
                              f"edges reduced into it, no strategy avoids a forbidden choice)")

    def fixed_usage(self, starts, ends, uses) -> None:
        keep = (ends > starts) & (uses != 0)
        if keep.any():
            self.fx_start.append(starts[keep])
            self.fx_end.append(ends[keep])
            self.fx_use.append(uses[keep])

    # ------------------------------------------------------------------ normalisation
    def normalise(self, combine: bool) -> None:
        """Binary edges between distinct nodes go to the flat store; repeated nodes are folded onto
        the diagonal; arity-1 edges into node costs, arity-0 into the offset; arity >= 3 become
        hyperedges (their nodes are pinned). Without ``combine`` (magnitude guard) anything but a
        plain binary edge is kept as a hyperedge, untouched."""
        P = self.P
        self.combine = combine
        if np.any(self.K == 0):
            i = int(np.flatnonzero(self.K == 0)[0])
            raise Infeasible(f"node {i} has no strategies")
        arity = np.asarray(P.edge_arity)
        starts = P.edge_node_offsets[:-1]
        plain = arity == 2
        if plain.any():
            first = P.edge_nodes[starts[plain]]
            second = P.edge_nodes[starts[plain] + 1]
            distinct = first != second
            idx = np.flatnonzero(plain)[distinct]
            plain = np.zeros_like(plain)
            plain[idx] = True
        sizes = np.diff(P.edge_cost_offsets)
        slot = np.repeat(plain, sizes)
        eu = P.edge_nodes[starts[plain]]
        ev = P.edge_nodes[starts[plain] + 1]
        self.set_edges(eu, ev, P.edge_costs[slot], sizes[plain])
        extra_u, extra_v, extra_t = [], [], []
        for e in np.flatnonzero(~plain).tolist():
            nodes = P.nodes_of_edge(e).astype(np.int64)
            table = np.array(P.edge_table(e), dtype=np.int64)
            if not combine:
                self.hyper.append((nodes, table))
                self.pinned[nodes] = True
                continue
            uniq = list(dict.fromkeys(nodes.tolist()))
            if len(uniq) < len(nodes):
                table = fold_repeated_nodes(nodes, table, self.K)[1]
                self.count("diagonal_edges", 1)
            if len(uniq) == 0:
                value = int(table.reshape(-1)[0])
                if value == _F:
                    raise Infeasible(f"edge {e} names no node and its only entry is forbidden")
                self.offset += value
            elif len(uniq) == 1:
                s = self.SO[uniq[0]]
                self.ncost[s:s + self.K[uniq[0]]] = absorb_addv(self.ncost[s:s + self.K[uniq[0]]],
                                                          table.reshape(-1))
                self.count("unary_edges", 1)
            elif len(uniq) == 2:
                extra_u.append(uniq[0])
                extra_v.append(uniq[1])
                extra_t.append(table)
            else:
                self.hyper.append((np.array(uniq, dtype=np.int64), table))
                self.pinned[uniq] = True
        if extra_u:
            self.keep_edges(np.ones(len(self.eu), dtype=bool), list(zip(extra_u, extra_v, extra_t)))

    # ------------------------------------------------------------------ intervals
    def drop_intervals(self, drop: np.ndarray) -> None:
        if not drop.any():
            return
        keep = ~drop
        counts = np.diff(self.iv_uoff)
        slot = np.repeat(keep, counts)
        self.iv_use = self.iv_use[slot]
        self.iv_uoff = offsets_from_counts(counts[keep])
        self.iv_start, self.iv_end, self.iv_owner = (self.iv_start[keep], self.iv_end[keep],
                                                     self.iv_owner[keep])

    def usage_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Per interval, the least and greatest usage over its owner's alive strategies."""
        J = len(self.iv_owner)
        if J == 0:
            z = np.zeros(0, dtype=np.int64)
            return z, z
        counts = np.diff(self.iv_uoff)
        rows, within = segment_fill_index(self.iv_uoff, counts)
        ok = self.alive[self.SO[self.iv_owner[rows]] + within]
        lo = np.where(ok, self.iv_use, INT64_MAX)
        hi = np.where(ok, self.iv_use, np.iinfo(np.int64).min)
        return np.minimum.reduceat(lo, self.iv_uoff[:-1]), np.maximum.reduceat(hi, self.iv_uoff[:-1])

