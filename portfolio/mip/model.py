"""The standard ILP of one Problem as arrays for HiGHS (:class:`~.engine.MipEngine` solves it).

Built from the shared exact model (:func:`portfolio.exact.build_exact_model`: usable strategies,
folded factors, the memory part), so every forbidden entry is already out: a forbidden strategy or
pair has no column, which fixes it to 0. Columns and rows:

* one binary ``x[i, s]`` per usable strategy, ``sum_s x[i, s] = 1`` per node;
* ``marginal`` linking (the formulation of Alpa and AutoParallel, at the local polytope): one
  column ``y[t]`` in [0, 1] per allowed entry of a factor, and per position and usable strategy
  ``sum_{t with that strategy there} y[t] = x[v, s]``. The ``y`` are continuous: with ``x``
  integral each node's rows leave exactly one entry at 1 (an entry at a positive value must agree
  with the chosen strategy at every position), so branching on them is never needed;
* ``weak`` linking (the lighter one): ``y[t] >= x[u, p] + x[v, q] - 1`` only for the entries of a
  two-node factor whose residual is positive (all residuals are >= 0 after folding, so the
  objective keeps every other ``y`` at 0); hyperedge factors keep the marginal rows;
* a factor that only forbids pairs (zero residuals) gets no ``y``: per strategy ``p`` of one end,
  ``x[u, p] <= sum of x[v, q]`` over the partners ``q`` it allows, both ways (this is also how the
  weak linking excludes forbidden pairs);
* memory: the rows of :mod:`.memory` (one per distinct maximal live set, explicit or lazy).

The objective, exact and then made small for doubles: each node's least folded cost goes into the
constant, so ``cost(plan) = offset + scale * (HiGHS objective)`` with an exact Python-int
``offset`` and ``scale`` a power of two (dividing by it changes no bit of a double's mantissa)
chosen so that the largest coefficient handed to HiGHS is at most ``COEF_TARGET``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from portfolio.exact import ExactModel

from .memory import MemoryRows

COEF_TARGET = 2.0 ** 20
"""Largest objective coefficient handed to HiGHS after the power-of-two scale (about 1e6), so its
absolute tolerances (1e-7, 1e-6) apply to numbers of a sensible size. Measured neutral on B, G
and A against no scale (docs/benchmarks/mip.md, "Objective scale"); kept as the safe side for
costs of 1e12 and more per entry."""

ROWS_TERMS_LIMIT = 400_000
"""Memory ``auto``: explicit rows while their terms (before merging) stay below this, else lazy.
Measured: presolved B and G need 12-13k terms (rows), A 173 million (lazy)."""

MEMORY_MODES = ("auto", "rows", "lazy")
"""How memory rows enter the model: all maximal rows, lazily, or by size (``auto``)."""

LINKINGS = ("marginal", "weak")
"""How entry columns are tied to strategy columns (see the module docstring)."""


class _Rows:
    """Rows collected as CSR pieces: (columns, coefficients, lower, upper)."""

    def __init__(self) -> None:
        self.index: list[np.ndarray] = []
        self.value: list[np.ndarray] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, cols, coefs, lower: float, upper: float) -> None:
        self.index.append(np.asarray(cols, dtype=np.int64))
        self.value.append(np.asarray(coefs, dtype=np.float64))
        self.lower.append(lower)
        self.upper.append(upper)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        lengths = [len(c) for c in self.index]
        starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        empty_i, empty_v = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return (starts, np.concatenate(self.index) if self.index else empty_i,
                np.concatenate(self.value) if self.value else empty_v,
                np.asarray(self.lower, dtype=np.float64), np.asarray(self.upper, dtype=np.float64))


@dataclass
class MipModel:
    """The MIP as arrays (rows in CSR), and what decoding and hinting need."""

    md: ExactModel
    cost: np.ndarray              # (columns,) scaled objective coefficients
    upper: np.ndarray             # (columns,) upper bounds (lower bounds are all 0)
    integer: np.ndarray           # (columns,) bool: the x columns
    rows: tuple                   # CSR: starts, index, value, lower, upper
    x_col: np.ndarray             # per global strategy: its column, -1 when unusable
    offset: int                   # exact constant: cost = offset + scale * objective
    scale: int                    # a power of two
    memory: MemoryRows
    entries: list = field(default_factory=list)   # (first column, nodes, choices) per y block
    stats: dict = field(default_factory=dict)

    @property
    def num_cols(self) -> int:
        return len(self.cost)

    def start(self, plan: np.ndarray) -> np.ndarray:
        """Every column's value under ``plan`` (a complete MIP start)."""
        plan = np.asarray(plan, dtype=np.int64)
        so = self.md.problem.strategy_offsets
        values = np.zeros(self.num_cols, dtype=np.float64)
        chosen = self.x_col[so[:-1] + plan]
        values[chosen[chosen >= 0]] = 1.0
        for first, nodes, choices in self.entries:
            on = np.all(choices == plan[list(nodes)][None, :], axis=1)
            values[first + np.flatnonzero(on)] = 1.0
        return values

    def decode(self, values: np.ndarray) -> np.ndarray:
        """The plan of a MIP solution: each node's strategy with the largest ``x``."""
        problem = self.md.problem
        so = problem.strategy_offsets
        plan = np.zeros(problem.num_nodes, dtype=np.int64)
        score = np.full(len(self.x_col), -1.0)
        usable = self.x_col >= 0
        score[usable] = np.asarray(values, dtype=np.float64)[self.x_col[usable]]
        for i in range(problem.num_nodes):
            seg = score[so[i]:so[i + 1]]
            if len(seg):
                plan[i] = int(np.argmax(seg))
        return plan


def power_of_two_scale(largest: int) -> int:
    """The least power of two ``S`` with ``largest / S <= COEF_TARGET`` (1 for small costs)."""
    scale = 1
    while largest / scale > COEF_TARGET:
        scale *= 2
    return scale


def build_mip(md: ExactModel, linking: str = "marginal", memory: str = "auto") -> MipModel:
    """The MIP of ``md`` with the edge ``linking``; ``memory``: every maximal row now (``rows``),
    none (``lazy``: the engine adds them), or by their size (``auto``); ``stats["memory"]`` says
    which."""
    if linking not in LINKINGS:
        raise ValueError(f"unknown edge linking {linking!r}")
    problem = md.problem
    so = problem.strategy_offsets
    n = problem.num_nodes
    usable = md.usable
    x_col = np.full(len(usable), -1, dtype=np.int64)
    x_col[usable] = np.arange(int(usable.sum()))
    costs: list[int] = [0] * int(usable.sum())
    offset = int(md.offset)
    rows = _Rows()
    for i in range(n):
        g = so[i] + np.flatnonzero(usable[so[i]:so[i + 1]])
        least = min(int(md.unary[k]) for k in g.tolist())
        offset += least
        for k in g.tolist():
            costs[int(x_col[k])] = int(md.unary[k]) - least
        rows.add(x_col[g], np.ones(len(g)), 1.0, 1.0)
    entries: list = []
    y_cost: list[int] = []
    first = len(costs)
    for f in md.factors:
        pure = not f.cost.any()
        if pure and len(f.nodes) == 2:
            _support_rows(rows, md, f, x_col)
            continue
        if linking == "weak" and len(f.nodes) == 2:
            positive = np.flatnonzero(f.cost)
            base = first + len(y_cost)
            for j, t in enumerate(positive.tolist()):
                cu = x_col[so[f.nodes[0]] + f.choices[t, 0]]
                cv = x_col[so[f.nodes[1]] + f.choices[t, 1]]
                rows.add([cu, cv, base + j], [1.0, 1.0, -1.0], -np.inf, 1.0)
            y_cost.extend(int(c) for c in f.cost[positive])
            entries.append((base, f.nodes, f.choices[positive]))
            if not f.complete:
                _support_rows(rows, md, f, x_col)
            continue
        base = first + len(y_cost)
        y_cost.extend(int(c) for c in f.cost)
        entries.append((base, f.nodes, f.choices))
        for pos, v in enumerate(f.nodes):
            col = f.choices[:, pos]
            order = np.argsort(col, kind="stable")
            bounds = np.searchsorted(col[order], np.arange(int(problem.strategy_counts[v]) + 1))
            for s in np.flatnonzero(usable[so[v]:so[v + 1]]).tolist():
                members = base + order[bounds[s]:bounds[s + 1]]
                rows.add(np.concatenate([members, [x_col[so[v] + s]]]),
                         np.concatenate([np.ones(len(members)), [-1.0]]), 0.0, 0.0)
    all_costs = costs + y_cost
    largest = max((abs(c) for c in all_costs), default=0)
    scale = power_of_two_scale(largest)
    cost = np.array([c / scale for c in all_costs], dtype=np.float64)
    num_x = len(costs)
    integer = np.zeros(len(all_costs), dtype=bool)
    integer[:num_x] = True
    mem = MemoryRows(md, x_col)
    if memory == "auto":
        memory = "rows" if mem.terms() <= ROWS_TERMS_LIMIT else "lazy"
    linking_rows = len(rows.lower)
    if memory == "rows" and len(mem.points):
        starts, index, value, upper = mem.rows(mem.points)
        for r in range(len(upper)):
            rows.add(index[starts[r]:starts[r + 1]], value[starts[r]:starts[r + 1]].astype(np.float64),
                     -np.inf, float(upper[r]))
    csr = rows.csr()
    stats = {"x_cols": num_x, "y_cols": len(y_cost), "linking_rows": linking_rows,
             "memory_rows": len(rows.lower) - linking_rows, "rows": len(rows.lower),
             "nonzeros": int(len(csr[1])), "scale": scale, "memory": memory}
    return MipModel(md, cost, np.ones(len(all_costs)), integer, csr, x_col, offset, scale, mem,
                    entries, stats)


def _support_rows(rows: _Rows, md: ExactModel, f, x_col: np.ndarray) -> None:
    """Forbidden pairs of a two-node factor: each strategy of one end needs an allowed partner."""
    so = md.problem.strategy_offsets
    u, v = f.nodes
    for pos, (a, b) in enumerate(((u, v), (v, u))):
        mine, theirs = f.choices[:, pos], f.choices[:, 1 - pos]
        for s in np.flatnonzero(md.usable[so[a]:so[a + 1]]).tolist():
            partners = np.unique(theirs[mine == s])
            if len(partners) == int(md.usable[so[b]:so[b + 1]].sum()):
                continue   # every usable partner allowed: nothing to say
            rows.add(np.concatenate([[x_col[so[a] + s]], x_col[so[b] + partners]]),
                     np.concatenate([[1.0], -np.ones(len(partners))]), -np.inf, 0.0)

