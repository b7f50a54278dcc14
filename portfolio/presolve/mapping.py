"""The map back: the reduced problem laid out from the state, and :class:`Presolved`, which maps
plans between the reduced and the original problem.

Why here and not in the state: this is the only part a caller of the presolve touches after it
ran (``expand`` a reduced plan, ``restrict`` or ``project`` an original one), so it should read on
its own. The map is a CSR table of kept strategies per reduced node plus the expansion chunks the
reductions recorded, replayed newest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..evaluate import as_solution
from ..problem import FORBIDDEN, Capacity, Problem, offsets_from_counts
from .state import State, segment_fill_index

_F = FORBIDDEN


@njit(cache=True)
def _gather_tables(tab, toff, kv_old, dom_flat, off_u, off_v, ku, kv, out):
    """Each edge's table restricted to the kept strategies of its ends (``dom_flat[off + i]`` is
    the original number of kept strategy ``i``), laid out one edge after the other."""
    o = 0
    for e in range(len(ku)):
        base = toff[e]
        for p in range(ku[e]):
            row = base + dom_flat[off_u[e] + p] * kv_old[e]
            for q in range(kv[e]):
                out[o] = tab[row + dom_flat[off_v[e] + q]]
                o += 1


def build(st: State) -> tuple[Problem, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reduced problem, its node ids in the original, the strategy map (CSR), and the time map:
    only alive strategies of active nodes remain, renumbered; time is renumbered to the kept
    segments, reduced time ``t`` standing for the original time ``time_of[t]`` (the start of the
    ``t``-th kept segment)."""
    P = st.P
    nid = np.flatnonzero(st.active).astype(np.int64)
    index = np.full(st.n + 1, -1, dtype=np.int64)
    index[nid] = np.arange(len(nid))
    seg = np.repeat(np.arange(st.n), st.K)
    local = np.arange(len(st.alive)) - st.SO[seg]
    keep_slot = st.alive & st.active[seg]
    dom_counts = np.bincount(seg[keep_slot], minlength=st.n)[nid]
    dom_off = offsets_from_counts(dom_counts)
    dom_flat = local[keep_slot].astype(np.int64)  # ordered by node id, then strategy
    node_costs = st.ncost[keep_slot]
    # strategy renumbering: original slot -> new local index (or -1)
    newloc = np.full(len(st.alive), -1, dtype=np.int64)
    newloc[keep_slot] = np.arange(int(keep_slot.sum())) - np.repeat(dom_off[:-1], dom_counts)
    # intervals
    info = st.time_info
    ps = info["ps"] if info is not None and "ps" in info else None
    time_of = (np.asarray(info["pts"][:-1][info["kept"]], dtype=np.int64) if ps is not None
               else np.zeros(0, dtype=np.int64))
    J = len(st.iv_owner)
    if J and ps is not None:
        new_start = ps[info["lo"]]
        new_end = ps[info["hi"]]
        own = st.iv_owner
        counts = dom_counts[index[own]]
        uoff = offsets_from_counts(counts)
        rows, within = segment_fill_index(uoff, counts)
        src = dom_flat[dom_off[index[own[rows]]] + within]
        usages = st.iv_use[st.iv_uoff[:-1][rows] + src]
        iv_node = index[own]
        order = np.argsort(iv_node, kind="stable")
        # keep intervals grouped by node (stable), re-laying the usage CSR accordingly
        counts_o = counts[order]
        uoff_o = offsets_from_counts(counts_o)
        rows_o, within_o = segment_fill_index(uoff_o, counts_o)
        usages = usages[uoff[:-1][order][rows_o] + within_o]
        iv = (iv_node[order], new_start[order], new_end[order], uoff_o, usages)
        kept_R = info["R"][info["kept"]]
        values = np.array([int(x) for x in kept_R], dtype=np.int64) if kept_R.dtype == object \
            else kept_R.astype(np.int64)
        change = np.ones(len(values), dtype=bool)
        change[1:] = values[1:] != values[:-1]
        capacity = Capacity(np.flatnonzero(change).astype(np.int64), values[change])
    else:
        z = np.zeros(0, dtype=np.int64)
        iv = (z, z, z, np.zeros(1, dtype=np.int64), z)
        capacity = Capacity.unlimited()
    # edges: binary then hyper
    enodes, esizes, etabs = [], [], []
    if len(st.eu):
        ku = dom_counts[index[st.eu]]
        kv = dom_counts[index[st.ev]]
        sizes = ku * kv
        if np.array_equal(ku, st.K[st.eu]) and np.array_equal(kv, st.K[st.ev]):
            flat = st.tab  # every edge end keeps its whole domain: the tables are laid out already
        else:
            flat = np.empty(int(sizes.sum()), dtype=np.int64)
            _gather_tables(st.tab, st.toff, st.K[st.ev], dom_flat, dom_off[index[st.eu]],
                           dom_off[index[st.ev]], ku, kv, flat)
        enodes.append(np.stack([index[st.eu], index[st.ev]], axis=1).ravel())
        esizes.append(sizes)
        etabs.append(flat)
    arities = [np.full(len(st.eu), 2, dtype=np.int64)]
    for nodes, table in st.hyper:
        doms = [st.domain(v) for v in nodes.tolist()]
        sub = table[np.ix_(*doms)] if len(doms) else table
        enodes.append(index[nodes])
        esizes.append(np.array([sub.size], dtype=np.int64))
        etabs.append(sub.ravel().astype(np.int64))
        arities.append(np.array([len(nodes)], dtype=np.int64))
    edge_nodes = np.concatenate(enodes) if enodes else np.zeros(0, dtype=np.int64)
    edge_costs = np.concatenate(etabs) if etabs else np.zeros(0, dtype=np.int64)
    sizes = np.concatenate(esizes) if esizes else np.zeros(0, dtype=np.int64)
    if st.combine and (np.any(node_costs > _F) or np.any(edge_costs > _F)):
        raise AssertionError("presolve produced a cost above 10**18: magnitude guard failed")
    reduced = Problem(
        name=P.name,
        strategy_offsets=dom_off,
        node_costs=node_costs,
        interval_node=iv[0],
        interval_start=iv[1],
        interval_end=iv[2],
        interval_usage_offsets=iv[3],
        interval_usages=iv[4],
        edge_node_offsets=offsets_from_counts(np.concatenate(arities)),
        edge_nodes=edge_nodes,
        edge_cost_offsets=offsets_from_counts(sizes),
        edge_costs=edge_costs,
        capacity=capacity,
        cost_offset=int(P.cost_offset) + int(st.offset),
    )
    return reduced, nid, dom_off, dom_flat, time_of



@dataclass
class Presolved:
    """A presolved instance and the maps between its plans and the original's.

    ``reduced`` is ``None`` exactly when ``infeasible`` holds the proof that no plan of the original
    avoids forbidden choices and fits in memory.
    """

    original: Problem
    reduced: Problem | None
    infeasible: str | None
    report: dict
    _nid: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    _dom_off: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(1, dtype=np.int64))
    _dom_flat: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    _chunks: list = field(repr=False, default_factory=list)
    time_of: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per time of the reduced problem, the original time it stands for: the reduced constraint at
    ``t`` is the original one at ``time_of[t]`` (same live intervals; the capacity less the usage
    the reductions fixed), for every plan without a forbidden choice."""

    @property
    def offset(self) -> int | None:
        """The reduced problem's constant cost (``reduced.cost_offset``)."""
        return None if self.reduced is None else self.reduced.cost_offset

    def _require(self) -> Problem:
        if self.reduced is None:
            raise ValueError(f"the instance is infeasible ({self.infeasible}); there is no reduced plan")
        return self.reduced

    def expand(self, reduced_solution: object) -> np.ndarray:
        """The original plan (int64) of a plan of the reduced problem."""
        reduced = self._require()
        x = as_solution(reduced, reduced_solution)
        n = self.original.num_nodes
        full = np.zeros(n + 1, dtype=np.int64)  # slot n is the sentinel dependency (always 0)
        full[self._nid] = self._dom_flat[self._dom_off[:-1] + x]
        for ch in reversed(self._chunks):
            full[ch.nodes] = ch.table[ch.off + full[ch.d1] * ch.s1 + full[ch.d2]]
        return full[:n].copy()

    def _representatives(self, original_solution: object) -> tuple[Problem, np.ndarray, np.ndarray]:
        """(reduced problem, the original plan, each reduced node's representative choice as a
        reduced strategy or -1 where that strategy did not survive)."""
        reduced = self._require()
        y = as_solution(self.original, original_solution)
        so = self.original.strategy_offsets
        counts = np.diff(self._dom_off)
        inv = np.full(len(self.original.node_costs), -1, dtype=np.int64)
        inv[np.repeat(so[self._nid], counts) + self._dom_flat] = (
            np.arange(len(self._dom_flat)) - np.repeat(self._dom_off[:-1], counts))
        return reduced, y, inv[so[self._nid] + y[self._nid]]

    def restrict(self, original_solution: object) -> np.ndarray | None:
        """The reduced plan that expands to exactly ``original_solution``, or ``None`` if none does
        (the plan uses a removed strategy, or disagrees with a merged or eliminated node's choice)."""
        reduced, y, x = self._representatives(original_solution)
        if np.any(x < 0):
            return None
        if len(x) != reduced.num_nodes or not np.array_equal(self.expand(x), y):
            return None
        return x

    def project(self, original_solution: object) -> np.ndarray:
        """A reduced plan close to ``original_solution``, for use as a hint (never fails).

        ``restrict`` gives the exact counterpart when one exists; otherwise each reduced node keeps
        its representative's choice when that strategy survived presolve, and else takes its
        remaining strategy of least usage (ties: lowest cost). The expansion may differ from the
        given plan (and cost more): this is a starting point for a search, not a translation.
        """
        exact = self.restrict(original_solution)
        if exact is not None:
            return exact
        reduced, _, x = self._representatives(original_solution)
        missing = x < 0
        if np.any(missing):
            x[missing] = reduced.min_usage_strategies[missing]
        return x

