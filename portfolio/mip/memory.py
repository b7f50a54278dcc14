"""The memory rows of the MIP: one linear row per distinct binding live set, explicit or lazy.

Starting point: the shared exact model's memory part (:class:`portfolio.exact.MemoryPart`), which
already keeps only the time points where the worst case can exceed what is left of the capacity,
with every interval's usage above its least usage. Two more reductions make the rows few:

* **dominance between neighbours**: where no interval ends between two kept points, the live set of
  the first is contained in the second's, and the usages are non-negative, so the first row is
  implied when the second's capacity is no larger (and symmetrically where nothing starts). Only
  the maximal live sets survive (:func:`maximal_points`), at most one per interval end: 66 of 70
  points on presolved B, 73 of 77 on G, 15,353 of 16,109 on A;
* **one row per distinct row**: intervals of one node add into the same strategy columns, and a row
  equal to another (same columns and coefficients) keeps the smaller capacity only.

Rows are built with numpy from the intervals live at each chosen point (:class:`MemoryRows`).
Where the explicit rows would be too many terms (A: 173 million before merging), the engine adds
them lazily (:meth:`MemoryRows.violated`): the rows of the points where the starting plan has the
least slack, then those a solution overflows, a batch per round. Every round solves a relaxation,
so its bound is valid, and a plan that fits every row of the problem is feasible.
"""

from __future__ import annotations

import numpy as np

from portfolio.evaluate import range_sum
from portfolio.exact import ExactModel


def maximal_points(md: ExactModel) -> np.ndarray:
    """The kept points whose row no neighbour implies (see the module docstring), ascending.

    A point is dropped for its right neighbour when no interval ends there and the neighbour's
    capacity is at most its own; for its left neighbour when no interval starts at it and the
    neighbour's row is strictly stronger (a smaller capacity, or an interval fewer ended). A tie
    is broken to the right, so no two points drop each other."""
    mem = md.memory
    npts = len(mem.rhs)
    if npts == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.zeros(npts + 1, dtype=bool)
    ends = np.zeros(npts + 1, dtype=bool)
    starts[mem.lo] = True
    ends[mem.hi] = True
    rhs = mem.rhs
    drop = np.zeros(npts, dtype=bool)
    drop[:-1] = ~ends[1:npts] & (rhs[1:] <= rhs[:-1])
    left = ~starts[1:npts] & (rhs[:-1] <= rhs[1:]) & (ends[1:npts] | (rhs[:-1] < rhs[1:]))
    drop[1:] |= left
    return np.flatnonzero(~drop).astype(np.int64)


class MemoryRows:
    """The memory rows of one exact model over the MIP's strategy columns.

    ``x_col[g]`` is the column of global strategy ``g`` (-1: unusable). :meth:`rows` gives the rows
    of chosen points as CSR arrays; :attr:`added` remembers which points a model holds."""

    BATCH = 48
    """Rows added per lazy round (the points with the least slack, or the most overflow)."""

    def __init__(self, md: ExactModel, x_col: np.ndarray) -> None:
        mem = md.memory
        so = md.problem.strategy_offsets
        self.md = md
        self.points = maximal_points(md)
        cols, vals, counts = [], [], []
        for r in range(len(mem.node)):
            c = mem.coef[r]
            nz = np.flatnonzero(c)
            cols.append(x_col[int(so[int(mem.node[r])]) + nz])
            vals.append(c[nz].astype(np.int64))
            counts.append(len(nz))
        empty = np.zeros(0, dtype=np.int64)
        self._cols = np.concatenate(cols) if cols else empty
        self._vals = np.concatenate(vals) if vals else empty
        self._ptr = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
        self._nz = np.asarray(counts, dtype=np.int64)
        self.added: set[int] = set()

    def terms(self, points: np.ndarray | None = None) -> int:
        """Terms of the rows of ``points`` (all maximal points when None) before merging the
        intervals of one node: an upper bound on what :meth:`rows` builds."""
        mem = self.md.memory
        pts = self.points if points is None else points
        if len(mem.rhs) == 0 or len(pts) == 0:
            return 0
        per = range_sum(mem.lo, mem.hi, self._nz, len(mem.rhs))
        return int(np.asarray(per[pts], dtype=np.int64).sum())

    def rows(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """CSR arrays ``(starts, index, value, upper)`` of the rows at ``points`` not added yet,
        merged per column, rows equal to one before kept once (the least capacity); the points are
        marked added."""
        mem = self.md.memory
        seen: dict[bytes, int] = {}
        idx_parts: list[np.ndarray] = []
        val_parts: list[np.ndarray] = []
        uppers: list[int] = []
        for k in [int(p) for p in points if int(p) not in self.added]:
            self.added.add(k)
            live = np.flatnonzero((mem.lo <= k) & (k < mem.hi))
            take = np.concatenate([np.arange(self._ptr[r], self._ptr[r + 1]) for r in live]) \
                if len(live) else np.zeros(0, dtype=np.int64)
            cols, inverse = np.unique(self._cols[take], return_inverse=True)
            vals = np.zeros(len(cols), dtype=np.int64)
            np.add.at(vals, inverse, self._vals[take])
            keep = vals != 0
            cols, vals = cols[keep], vals[keep]
            if len(cols) == 0:
                continue
            key = cols.tobytes() + vals.tobytes()
            rhs = int(mem.rhs[k])
            if key in seen:
                uppers[seen[key]] = min(uppers[seen[key]], rhs)
                continue
            seen[key] = len(uppers)
            idx_parts.append(cols)
            val_parts.append(vals)
            uppers.append(rhs)
        lengths = [len(c) for c in idx_parts]
        starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        index = np.concatenate(idx_parts) if idx_parts else np.zeros(0, dtype=np.int64)
        value = np.concatenate(val_parts) if val_parts else np.zeros(0, dtype=np.int64)
        return starts, index, value, np.asarray(uppers, dtype=np.int64)

    def usage(self, plan: np.ndarray) -> np.ndarray:
        """Usage above the least usages at every kept point under ``plan``."""
        mem = self.md.memory
        per = np.array([int(c[plan[int(i)]]) for c, i in zip(mem.coef, mem.node.tolist())],
                       dtype=np.int64)
        return range_sum(mem.lo, mem.hi, per, len(mem.rhs)) if len(mem.rhs) else per[:0]

    def _pick(self, score: np.ndarray) -> np.ndarray:
        """Up to ``BATCH`` maximal points not added yet, highest ``score`` first (> -inf only)."""
        pts = np.array([p for p in self.points.tolist() if p not in self.added], dtype=np.int64)
        if len(pts) == 0:
            return pts
        s = score[pts]
        order = np.argsort(-s, kind="stable")[:self.BATCH]
        return pts[order[s[order] > -np.inf]]

    def tightest(self, plan: np.ndarray) -> np.ndarray:
        """The first lazy rows: the maximal points where ``plan`` leaves the least slack."""
        slack = (self.md.memory.rhs - self.usage(plan)).astype(np.float64)
        return self._pick(-slack)

    def violated(self, plan: np.ndarray) -> np.ndarray:
        """Maximal points not added yet where ``plan`` overflows, the largest overflow first."""
        over = (self.usage(plan) - self.md.memory.rhs).astype(np.float64)
        over[over <= 0] = -np.inf
        return self._pick(over)
