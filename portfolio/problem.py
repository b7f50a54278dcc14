"""The immutable problem instance, held as flat numpy arrays.

Why flat arrays: contest instances have up to 65k nodes, 100k edges and tens of millions of edge-table
entries; nested Python lists of that size cost gigabytes and are slow to walk. Every variable-length
collection is stored CSR-style: a flat value array plus an ``offsets`` array of length ``count + 1``.

The model is a little more general than a contest file, because exact presolve produces it:

* a node may own several intervals, each with its own usage per strategy (a merged node carries the
  intervals of the nodes folded into it, with their usages mapped onto its strategies);
* capacity may vary over time (a piecewise-constant step function);
* a constant ``cost_offset`` is added to every solution's cost.

A contest instance is the special case of one interval per node and one global limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, TypeVar

import numpy as np

FORBIDDEN = 10**18
"""A cost of exactly this value means the strategy or edge entry must not be chosen."""

INT64_MAX = np.iinfo(np.int64).max

_T = TypeVar("_T")


class cached_property(Generic[_T]):  # noqa: N801 -- a drop-in for functools.cached_property
    """Compute once per instance, store in the instance's ``__dict__``; no lock.

    ``functools.cached_property`` of Python 3.11 holds one lock shared by every instance. A process
    forked while another thread held it (a runner started from a Dask worker's thread, say) waits
    for that lock forever. Computing a value twice in a race is harmless here: it is pure.
    """

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> _T:
        if obj is None:
            return self  # type: ignore[return-value]
        value = self.func(obj)
        obj.__dict__[self.name] = value
        return value


def _frozen(a: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Return ``a`` as a contiguous array of ``dtype`` that cannot be written through."""
    out = np.ascontiguousarray(a, dtype=dtype)
    if out is a and a.flags.writeable:
        out = out.view()
    out.flags.writeable = False
    return out


def offsets_from_counts(counts: np.ndarray) -> np.ndarray:
    """CSR offsets (length ``len(counts) + 1``) for rows of the given lengths."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def fold_repeated_nodes(nodes: Any, table: np.ndarray, counts: Any,
                        sort: bool = False) -> tuple[tuple[int, ...], np.ndarray]:
    """An edge's cost table over its node list, as a table over its distinct nodes.

    An edge may name a node twice (a self-loop, a hyperedge with a repeat); a plan gives that node
    one strategy, so only the entries where its positions agree can ever be chosen. ``table`` has
    one axis per entry of ``nodes`` (or is flat in their mixed radix, the last node fastest);
    ``counts[v]`` is node ``v``'s number of strategies. Returns the distinct nodes (in order of
    first appearance, or increasing with ``sort``) and the table with one axis per distinct node;
    an edge already on distinct nodes in that order comes back as a view of ``table``. The one
    implementation of this folding: presolve, the exact model, the kernels' accessors and the
    toulbar2 networks all call it."""
    nodes = [int(v) for v in nodes]
    scope = sorted(set(nodes)) if sort else list(dict.fromkeys(nodes))
    shape = tuple(int(counts[v]) for v in scope)
    table = np.asarray(table)
    if nodes == scope:
        return tuple(scope), table.reshape(shape)
    grid = np.indices(shape)
    index = tuple(grid[scope.index(v)] for v in nodes)
    return tuple(scope), table.reshape(tuple(int(counts[v]) for v in nodes))[index]


def _csr_of_pairs(pairs: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Read-only CSR ``(offsets, values)`` with ``rows`` rows from ``(row, value)`` pairs (a 2 x m
    array sorted by row): row ``r`` lists the values of the pairs whose row is ``r``."""
    offsets = offsets_from_counts(np.bincount(pairs[0], minlength=rows))
    return _frozen(offsets), _frozen(pairs[1])


@dataclass(frozen=True, eq=False)
class Capacity:
    """Piecewise-constant memory capacity over time.

    ``values[k]`` applies from ``times[k]`` (inclusive) until ``times[k + 1]``; before ``times[0]``
    (and everywhere when both arrays are empty) usage is unlimited. ``times`` is strictly increasing.
    """

    times: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        times, values = _frozen(self.times), _frozen(self.values)
        if times.ndim != 1 or times.shape != values.shape:
            raise ValueError("capacity times and values must be 1-D arrays of equal length")
        if len(times) > 1 and not bool(np.all(np.diff(times) > 0)):
            raise ValueError("capacity times must be strictly increasing")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "values", values)

    @staticmethod
    def unlimited() -> Capacity:
        return Capacity(_frozen(np.zeros(0)), _frozen(np.zeros(0)))

    @staticmethod
    def uniform(limit: int | None) -> Capacity:
        """The contest's single ``usage_limit``, valid at every time (times are non-negative)."""
        if limit is None:
            return Capacity.unlimited()
        return Capacity(_frozen(np.array([0])), _frozen(np.array([limit])))

    @property
    def is_unlimited(self) -> bool:
        return len(self.times) == 0

    @property
    def uniform_limit(self) -> int | None:
        """The single limit when capacity is one global value from time 0, else ``None``."""
        if len(self.times) == 1 and self.times[0] <= 0:
            return int(self.values[0])
        return None

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Capacity at times ``t``: (values, limited mask). Unlimited entries get INT64_MAX."""
        t = np.asarray(t, dtype=np.int64)
        piece = np.searchsorted(self.times, t, side="right") - 1
        limited = piece >= 0
        values = np.full(t.shape, INT64_MAX, dtype=np.int64)
        values[limited] = self.values[piece[limited]]
        return values, limited


@dataclass(frozen=True, eq=False)
class Problem:
    """An instance: nodes with strategies, owned intervals, hyperedges with cost tables, capacity.

    Node ``i`` has strategies ``0 .. k_i - 1`` with ``k_i = strategy_offsets[i+1] - strategy_offsets[i]``
    and cost ``node_costs[strategy_offsets[i] + s]``.

    Interval ``j`` belongs to node ``interval_node[j]``, covers the integer times
    ``[interval_start[j], interval_end[j])`` and, when its node picks strategy ``s``, uses
    ``interval_usages[interval_usage_offsets[j] + s]``.

    Edge ``e`` joins ``edge_nodes[edge_node_offsets[e]:edge_node_offsets[e+1]]`` (usually two nodes;
    self-loops and repeated edges are legal) and its mixed-radix cost table lives at
    ``edge_costs[edge_cost_offsets[e]:edge_cost_offsets[e+1]]``: for nodes ``[u, v]`` the entry of
    ``(s_u, s_v)`` is at ``s_u * k_v + s_v`` (first node most significant).
    """

    name: str
    strategy_offsets: np.ndarray
    node_costs: np.ndarray
    interval_node: np.ndarray
    interval_start: np.ndarray
    interval_end: np.ndarray
    interval_usage_offsets: np.ndarray
    interval_usages: np.ndarray
    edge_node_offsets: np.ndarray
    edge_nodes: np.ndarray
    edge_cost_offsets: np.ndarray
    edge_costs: np.ndarray
    capacity: Capacity = field(default_factory=Capacity.unlimited)
    cost_offset: int = 0

    def __post_init__(self) -> None:
        for name in (
            "strategy_offsets", "node_costs", "interval_node", "interval_start", "interval_end",
            "interval_usage_offsets", "interval_usages", "edge_node_offsets", "edge_nodes",
            "edge_cost_offsets", "edge_costs",
        ):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    # ------------------------------------------------------------------ construction
    @staticmethod
    def from_contest_arrays(
        name: str,
        intervals: np.ndarray,
        strategy_counts: np.ndarray,
        costs: np.ndarray,
        usages: np.ndarray,
        edge_node_counts: np.ndarray,
        edge_nodes: np.ndarray,
        edge_costs: np.ndarray,
        usage_limit: int | None,
    ) -> Problem:
        """Build a contest-shaped instance (one interval per node, one global limit).

        Inputs must already be validated (see :mod:`portfolio.io`).
        """
        intervals = np.asarray(intervals, dtype=np.int64).reshape(-1, 2)
        n = len(strategy_counts)
        strategy_offsets = offsets_from_counts(strategy_counts)
        edge_node_offsets = offsets_from_counts(edge_node_counts)
        edge_nodes = np.asarray(edge_nodes, dtype=np.int64)
        counts = np.asarray(strategy_counts, dtype=np.int64)
        table_sizes = _edge_table_sizes(edge_node_offsets, edge_nodes, counts)
        return Problem(
            name=name,
            strategy_offsets=strategy_offsets,
            node_costs=costs,
            interval_node=np.arange(n, dtype=np.int64),
            interval_start=intervals[:, 0],
            interval_end=intervals[:, 1],
            interval_usage_offsets=strategy_offsets,
            interval_usages=usages,
            edge_node_offsets=edge_node_offsets,
            edge_nodes=edge_nodes,
            edge_cost_offsets=offsets_from_counts(table_sizes),
            edge_costs=edge_costs,
            capacity=Capacity.uniform(usage_limit),
        )

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self) -> int:
        return len(self.strategy_offsets) - 1

    @property
    def num_edges(self) -> int:
        return len(self.edge_node_offsets) - 1

    @property
    def num_intervals(self) -> int:
        return len(self.interval_node)

    @cached_property
    def strategy_counts(self) -> np.ndarray:
        return _frozen(np.diff(self.strategy_offsets))

    @cached_property
    def edge_arity(self) -> np.ndarray:
        return _frozen(np.diff(self.edge_node_offsets))

    @property
    def usage_limit(self) -> int | None:
        """The contest's global limit, or ``None`` when unlimited or varying over time."""
        return self.capacity.uniform_limit

    def with_limit(self, limit: int | None) -> Problem:
        """The same problem with one memory limit ``limit`` at every time (None: no limit).

        Why a method: a ``Problem`` is frozen (its arrays are shared, read-only, by every backend),
        so "what if the limit were B?" is a new problem. The arrays are shared, not copied. It
        replaces the whole capacity, also one that varies over time; the cost offset and
        everything else stay. ``portfolio tradeoff`` solves each budget through this.
        """
        if isinstance(limit, bool) or not (limit is None or isinstance(limit, (int, np.integer))):
            raise TypeError(f"with_limit: expected an integer or None, got {limit!r}")
        if limit is not None and not 0 <= int(limit) <= INT64_MAX:
            raise ValueError(f"with_limit: the limit must be in 0..2**63-1, got {limit}")
        return replace(self, capacity=Capacity.uniform(None if limit is None else int(limit)))

    @property
    def is_contest_shaped(self) -> bool:
        """One interval per node (node ``i`` owns interval ``i``), one global limit, no offset."""
        return (
            self.num_intervals == self.num_nodes
            and bool(np.array_equal(self.interval_node, np.arange(self.num_nodes)))
            and (self.capacity.is_unlimited or self.capacity.uniform_limit is not None)
            and self.cost_offset == 0
        )

    # ------------------------------------------------------------------ accessors
    def strategy_slice(self, i: int) -> slice:
        """Slice of node ``i``'s strategies in ``node_costs``."""
        return slice(int(self.strategy_offsets[i]), int(self.strategy_offsets[i + 1]))

    def costs_of(self, i: int) -> np.ndarray:
        """Node ``i``'s cost per strategy (read-only view)."""
        return self.node_costs[self.strategy_slice(i)]

    def usages_of_interval(self, j: int) -> np.ndarray:
        """Interval ``j``'s usage per strategy of its node (read-only view)."""
        return self.interval_usages[self.interval_usage_offsets[j]:self.interval_usage_offsets[j + 1]]

    def intervals_of(self, i: int) -> np.ndarray:
        """Indices of the intervals node ``i`` owns."""
        lo, hi = self.node_interval_offsets[i], self.node_interval_offsets[i + 1]
        return self.node_interval_order[lo:hi]

    def nodes_of_edge(self, e: int) -> np.ndarray:
        return self.edge_nodes[self.edge_node_offsets[e]:self.edge_node_offsets[e + 1]]

    def edge_table(self, e: int) -> np.ndarray:
        """Edge ``e``'s cost table as an array with one axis per edge node (read-only view)."""
        shape = tuple(int(k) for k in self.strategy_counts[self.nodes_of_edge(e)])
        return self.edge_costs[self.edge_cost_offsets[e]:self.edge_cost_offsets[e + 1]].reshape(shape)

    def incident_edges(self, i: int) -> np.ndarray:
        """Edges that name node ``i`` (an edge naming it twice is listed once)."""
        lo, hi = self.incidence_offsets[i], self.incidence_offsets[i + 1]
        return self.incidence_edges[lo:hi]

    def neighbours(self, i: int) -> np.ndarray:
        """Distinct other nodes sharing an edge with ``i``, sorted."""
        lo, hi = self.adjacency_offsets[i], self.adjacency_offsets[i + 1]
        return self.adjacency_nodes[lo:hi]

    # ------------------------------------------------------------------ derived CSR structures
    @cached_property
    def node_interval_offsets(self) -> np.ndarray:
        return _frozen(offsets_from_counts(np.bincount(self.interval_node, minlength=self.num_nodes)))

    @cached_property
    def node_interval_order(self) -> np.ndarray:
        return _frozen(np.argsort(self.interval_node, kind="stable"))

    @cached_property
    def _incidence(self) -> tuple[np.ndarray, np.ndarray]:
        edge_of_slot = np.repeat(np.arange(self.num_edges, dtype=np.int64), self.edge_arity)
        return _csr_of_pairs(np.unique(np.stack([self.edge_nodes, edge_of_slot]), axis=1), self.num_nodes)

    @property
    def incidence_offsets(self) -> np.ndarray:
        return self._incidence[0]

    @property
    def incidence_edges(self) -> np.ndarray:
        return self._incidence[1]

    @cached_property
    def _adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        a_parts, b_parts = [], []
        # Pair every two slots of the same edge; arity is tiny (2 in practice), so loop over it.
        for p in range(int(self.edge_arity.max(initial=0))):
            for q in range(int(self.edge_arity.max(initial=0))):
                if p == q:
                    continue
                mask = self.edge_arity > max(p, q)
                a_parts.append(self.edge_nodes[self.edge_node_offsets[:-1][mask] + p])
                b_parts.append(self.edge_nodes[self.edge_node_offsets[:-1][mask] + q])
        if a_parts:
            pairs = np.stack([np.concatenate(a_parts), np.concatenate(b_parts)])
            pairs = pairs[:, pairs[0] != pairs[1]]
            pairs = np.unique(pairs, axis=1)
        else:
            pairs = np.zeros((2, 0), dtype=np.int64)
        return _csr_of_pairs(pairs, self.num_nodes)

    @property
    def adjacency_offsets(self) -> np.ndarray:
        return self._adjacency[0]

    @property
    def adjacency_nodes(self) -> np.ndarray:
        return self._adjacency[1]

    # ------------------------------------------------------------------ time
    @cached_property
    def time_points(self) -> np.ndarray:
        """The sorted times at which memory must be checked.

        Usage only rises where a non-empty interval starts, so the peak over any stretch of constant
        capacity is reached at such a start; where capacity varies, its breakpoints after the first
        start are added too. Checking these points is exactly checking every integer time.
        """
        nonempty = self.interval_end > self.interval_start
        starts = self.interval_start[nonempty]
        points = np.unique(starts)
        if len(points) and len(self.capacity.times):
            extra = self.capacity.times[self.capacity.times > points[0]]
            if len(extra):
                points = np.union1d(points, extra)
        return _frozen(points)

    @cached_property
    def interval_point_range(self) -> tuple[np.ndarray, np.ndarray]:
        """For each interval, the half-open index range ``[lo, hi)`` of ``time_points`` it covers."""
        lo = np.searchsorted(self.time_points, self.interval_start, side="left")
        hi = np.searchsorted(self.time_points, self.interval_end, side="left")
        hi = np.maximum(hi, lo)
        return _frozen(lo), _frozen(hi)

    @cached_property
    def point_capacity(self) -> np.ndarray:
        """Capacity at each time point; INT64_MAX where unlimited."""
        return _frozen(self.capacity.at(self.time_points)[0])

    def live_intervals_at(self, k: int) -> np.ndarray:
        """Intervals live at ``time_points[k]`` (computed on demand: O(intervals))."""
        lo, hi = self.interval_point_range
        return np.flatnonzero((lo <= k) & (k < hi))

    def live_nodes_at(self, k: int) -> np.ndarray:
        """Distinct nodes with an interval live at ``time_points[k]``."""
        return np.unique(self.interval_node[self.live_intervals_at(k)])

    @cached_property
    def strategy_usage_rank(self) -> np.ndarray:
        """Per strategy, its total usage over its node's intervals; only the order is meant.

        Exact: the int64 totals when they cannot overflow, else the rank of the Python-int totals
        (float64 cannot tell 2**62 from 2**62 - 256), equal totals sharing a rank.
        """
        lo, hi = self.interval_point_range
        counts = np.diff(self.interval_usage_offsets)
        rows = np.repeat(np.arange(self.num_intervals), counts)
        within = np.arange(len(self.interval_usages)) - self.interval_usage_offsets[rows]
        target = self.strategy_offsets[self.interval_node[rows]] + within
        used = np.where((hi > lo)[rows], self.interval_usages, 0)
        if int(np.abs(used).sum(dtype=np.float64)) < 2**62:
            per_strategy = np.zeros(len(self.node_costs), dtype=np.int64)
            np.add.at(per_strategy, target, used)
            return _frozen(per_strategy)
        sums = np.zeros(len(self.node_costs), dtype=object)
        for t, u in zip(target.tolist(), used.tolist()):
            sums[t] += u
        per_strategy = np.empty(len(sums), dtype=np.int64)
        order = np.argsort(sums, kind="stable")
        per_strategy[order] = np.arange(len(sums))
        per_strategy[order[1:]] -= np.cumsum(sums[order][1:] == sums[order][:-1])  # equal sums tie
        return _frozen(per_strategy)

    @cached_property
    def min_usage_strategies(self) -> np.ndarray:
        """Per node, the allowed strategy with the least total usage over its intervals (ties: cost).

        Summing over a node's intervals is an exact choice for contest shapes; for merged nodes it
        is a sound heuristic default.
        """
        per_strategy = self.strategy_usage_rank
        # A forbidden strategy is never the default while the node has an allowed one.
        forbidden = self.node_costs == FORBIDDEN
        n = self.num_nodes
        seg = np.repeat(np.arange(n), self.strategy_counts)
        order = np.lexsort((np.arange(len(per_strategy)), self.node_costs, per_strategy, forbidden, seg))
        starts = self.strategy_offsets[:-1]
        return _frozen(order[starts] - starts)


def _edge_table_sizes(node_offsets: np.ndarray, nodes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Product of the strategy counts of each edge's nodes (exact; Python ints when large)."""
    arity = np.diff(node_offsets)
    sizes = np.ones(len(arity), dtype=np.int64)
    for p in range(int(arity.max(initial=0))):
        mask = arity > p
        sizes[mask] *= counts[nodes[node_offsets[:-1][mask] + p]]
    return sizes
