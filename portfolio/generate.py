"""Synthetic IOPDDL instances with the contest's shape, at any size.

The contest ships only a handful of instances, and the biggest private ones (1.1-1.3 GB of JSON) are
not available at all, so scaling tests, fuzzing and backend development need a generator whose output
*looks like* the real files (measured facts: ``/work/shared/docs/techniques.md`` section 0). Each
shape choice below copies one of those facts, because a solver tuned on unrealistic instances learns
the wrong lessons:

* **Program order = node order = time.** Node ``i`` is produced at time ``i`` (horizon ~ nodes), as a
  tensor in a compiled program is; its live range ends at its last consumer. Intervals therefore
  follow from the dataflow edges instead of being drawn independently.
* **Dataflow edges, mostly local.** Most edges join a node to one a few steps earlier; some jump far
  (skip connections), some fan out of a few "parameter" hubs (heavy-tailed degree, max in the
  thousands like the real files), and some join forward node ``i`` to its backward mirror ``~n - i``.
  The mirror edges make the long live ranges *nested* (``[i, n - i)``), the parameter hubs live from
  time 0, some outputs stay live to the end, and ~8 % of nodes have zero-length intervals: together
  ~10 % of the nodes are live at the peak, as in the contest (3k of 35k).
* **Strategy counts** vary around ``strategies`` (log-normal, 1 .. 2 x strategies) with ~4 %
  single-strategy nodes, as sharding-option counts do.
* **Usages are one tensor size sharded** ``2**r`` ways (r = 0..5): a node's usages share one base size
  (up to ~1e8) and differ by powers of two, and the max/min ratio is often 32, as measured.
* **Costs are sparse and heavy-tailed**: ~85 % of node costs are 0; the rest, and the resharding costs
  on edges, scale with the tensor size and reach ~1e9-1e12.
* **Edge tables come in the measured kinds**: all-zero tables (pure compatibility), *functional* tables
  where each strategy of the first node allows exactly one strategy of the second (identity-like when
  the counts agree; everything else is forbidden), and generic resharding tables (free on the diagonal,
  sparse forbidden entries).
* **Forbidden (10**18) entries never make the instance infeasible**: every node's minimum-usage strategy
  (:attr:`Problem.min_usage_strategies`) stays allowed, and every table allows the pair those plans pick,
  so the all-min-usage plan is finite and, with ``usage_limit = ceil(1.1 x its peak)`` (the contest's
  ratio), feasible.

Everything is vectorised numpy and driven by one seeded generator, so a seed always gives the same
instance and 300k nodes take a few seconds.
"""

from __future__ import annotations

import numpy as np

from .evaluate import min_usage_profile
from .problem import FORBIDDEN, Problem, offsets_from_counts

# Edge mix (fractions of the drawn edges): local dataflow, forward->backward mirror, parameter fan-out,
# long skip connections. Tuned so ~10 % of the nodes are live at the peak, as measured.
_EDGE_MIX = {"local": 0.70, "mirror": 0.06, "hub": 0.14, "skip": 0.10}
_HUB_FRACTION = 0.01        # parameter nodes: live from time 0, consumed all over the program
_OUTPUT_FRACTION = 0.08     # unconsumed nodes kept live to the end (outputs, gradients)
_ZERO_LENGTH_FRACTION = 0.08
_SINGLE_FRACTION = 0.04     # single-strategy nodes
_ZERO_TABLE_FRACTION = 0.10
_FUNCTIONAL_FRACTION = 0.30
_NODE_COST_DENSITY = 0.15   # share of non-zero node costs
_MAX_COST = 10**12
_MAX_SHARD_LOG2 = 5         # usages are base >> r for r in 0..5
_CHUNK_ENTRIES = 1 << 22    # edge-table entries generated per step (bounds temporary memory)


def generate_problem(
    nodes: int,
    strategies: int = 8,
    seed: int = 0,
    *,
    forbidden_fraction: float = 0.03,
    edges_per_node: float = 1.5,
    hyperedge_fraction: float = 0.0,
    name: str | None = None,
) -> Problem:
    """A feasible contest-shaped instance with ``nodes`` nodes, deterministic for ``seed``.

    ``forbidden_fraction`` is the share of node strategies and of generic edge-table entries that are
    forbidden; 0 gives an "infinity-eliminated" instance (no forbidden entry, hence no functional
    tables either, like N/R/T/U). ``edges_per_node`` pairs are drawn; duplicates are dropped, which
    leaves ~1.4 per node at the default 1.5. ``hyperedge_fraction`` appends that share of edges naming
    one or three nodes (legal in the format, absent from the contest files) to exercise general-arity
    code.
    """
    if nodes < 1 or strategies < 1:
        raise ValueError("need at least one node and one strategy per node")
    if not 0.0 <= forbidden_fraction < 1.0 or not 0.0 <= hyperedge_fraction <= 1.0:
        raise ValueError("forbidden_fraction must be in [0, 1) and hyperedge_fraction in [0, 1]")
    rng = np.random.default_rng(seed)
    counts = _strategy_counts(rng, nodes, strategies)
    hubs = rng.choice(nodes, size=max(1, round(_HUB_FRACTION * nodes)), replace=False)
    producer, consumer = _dataflow_edges(rng, nodes, hubs, round(edges_per_node * nodes))
    start, end = _live_ranges(rng, nodes, hubs, producer, consumer)
    base = _base_sizes(rng, nodes)
    usages = _usages(rng, counts, base)
    costs = _node_costs(rng, counts, base)

    name = name if name is not None else f"synthetic-n{nodes}-k{strategies}-s{seed}"
    intervals = np.stack([start, end], axis=1)
    # The plan and its peak depend on nodes only. Forbidding non-plan strategies afterwards only
    # raises other strategies' keys, so the plan stays the min-usage argmin.
    nodes_only = _nodes_only(name, intervals, counts, costs.copy(), usages)
    plan, peak = nodes_only.min_usage_strategies, _peak(nodes_only)
    _forbid_node_strategies(rng, costs, offsets_from_counts(counts), plan, forbidden_fraction)

    edge_arity, edge_nodes = _orient_and_add_hyperedges(rng, producer, consumer, hyperedge_fraction)
    edge_costs = _edge_tables(rng, counts, base, plan, edge_arity, edge_nodes, forbidden_fraction)
    return Problem.from_contest_arrays(
        name=name, intervals=intervals, strategy_counts=counts, costs=costs, usages=usages,
        edge_node_counts=edge_arity, edge_nodes=edge_nodes, edge_costs=edge_costs,
        usage_limit=(11 * peak + 9) // 10,  # ceil(1.1 x peak), exact in integers
    )


# ------------------------------------------------------------------------------------------ nodes
def _strategy_counts(rng: np.random.Generator, n: int, strategies: int) -> np.ndarray:
    """Log-normal around ``strategies`` within 1 .. 2 x strategies, plus some single-strategy nodes."""
    k = np.rint(strategies * np.exp2(rng.normal(0.0, 0.6, n)))
    k = np.clip(k, 1, 2 * strategies).astype(np.int64)
    k[rng.random(n) < _SINGLE_FRACTION] = 1
    return k


def _base_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unsharded tensor size per node: log2 ~ N(17, 3.5) clipped to [0, 26.5] (median 131k, max ~1e8)."""
    return np.exp2(np.clip(rng.normal(17.0, 3.5, n), 0.0, 26.5)).astype(np.int64)


def _usages(rng: np.random.Generator, counts: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Each strategy shards its node's tensor ``2**r`` ways; the usage is what one device holds."""
    owner = np.repeat(np.arange(len(counts)), counts)
    shard = rng.integers(0, _MAX_SHARD_LOG2 + 1, len(owner))
    return np.maximum(base[owner] >> shard, 1)


def _node_costs(rng: np.random.Generator, counts: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Mostly zero; otherwise a heavy-tailed multiple of the tensor size (compute or collectives)."""
    owner = np.repeat(np.arange(len(counts)), counts)
    total = len(owner)
    scale = base[owner] * np.power(10.0, rng.normal(-1.0, 1.5, total))
    costs = np.clip(np.rint(scale), 1, _MAX_COST).astype(np.int64)
    costs[rng.random(total) >= _NODE_COST_DENSITY] = 0
    return costs


def _forbid_node_strategies(rng: np.random.Generator, costs: np.ndarray, offsets: np.ndarray,
                            plan: np.ndarray, fraction: float) -> None:
    """Forbid a random ``fraction`` of strategies in place, never the node's min-usage (plan) one."""
    forbid = rng.random(len(costs)) < fraction
    forbid[offsets[:-1] + plan] = False
    costs[forbid] = FORBIDDEN


def _nodes_only(name: str, intervals: np.ndarray, counts: np.ndarray, costs: np.ndarray,
                usages: np.ndarray) -> Problem:
    """The instance without edges: enough for the min-usage plan and profile, which ignore edges."""
    empty = np.zeros(0, dtype=np.int64)
    return Problem.from_contest_arrays(name, intervals, counts, costs, usages, empty, empty, empty, None)


def _peak(problem: Problem) -> int:
    profile = min_usage_profile(problem)
    return int(profile.max()) if len(profile) else 0


# ------------------------------------------------------------------------------------------ graph
def _dataflow_edges(rng: np.random.Generator, n: int, hubs: np.ndarray,
                    m: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (producer, consumer) pairs of a dataflow graph in program order; no self-loops."""
    if n < 2 or m < 1:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    sizes = {kind: round(share * m) for kind, share in _EDGE_MIX.items()}
    # Local: a consumer reads a tensor made a few steps earlier.
    v_local = rng.integers(1, n, sizes["local"])
    u_local = np.maximum(v_local - rng.geometric(0.35, sizes["local"]), 0)
    # Mirror: backward step ~n-1-i reads forward activation i, so these live ranges nest.
    u_mirror = rng.integers(0, max(1, n // 2), sizes["mirror"])
    v_mirror = np.clip(n - 1 - u_mirror - rng.geometric(0.5, sizes["mirror"]) + 1, u_mirror + 1, n - 1)
    # Hub: a few parameters feed many consumers (Zipf-like popularity -> degree in the thousands).
    popularity = 1.0 / np.arange(1, len(hubs) + 1) ** 1.1
    u_hub = hubs[rng.choice(len(hubs), sizes["hub"], p=popularity / popularity.sum())]
    v_hub = rng.integers(0, n, sizes["hub"])
    # Skip: log-uniform distance back into the program.
    v_skip = rng.integers(1, n, sizes["skip"])
    u_skip = v_skip - np.floor(np.exp(rng.random(sizes["skip"]) * np.log(v_skip))).astype(np.int64)
    u = np.concatenate([u_local, u_mirror, u_hub, np.maximum(u_skip, 0)])
    v = np.concatenate([v_local, v_mirror, v_hub, v_skip])
    keep = u != v
    key = np.unique(u[keep] * n + v[keep])  # one edge per ordered pair, sorted by producer
    return key // n, key % n


def _live_ranges(rng: np.random.Generator, n: int, hubs: np.ndarray, producer: np.ndarray,
                 consumer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Node ``i`` lives from its step ``i`` (parameters: from 0) to just after its last consumer."""
    start = np.arange(n, dtype=np.int64)
    start[hubs] = 0
    last_use = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_use, producer, consumer)
    unconsumed = last_use < 0
    outputs = unconsumed & (rng.random(n) < _OUTPUT_FRACTION)
    end = np.maximum(start, last_use) + 1
    end[unconsumed] = start[unconsumed] + rng.geometric(0.5, int(unconsumed.sum()))
    end[outputs] = n
    end = np.minimum(end, n)
    end = np.maximum(end, start)
    zero = rng.random(n) < _ZERO_LENGTH_FRACTION  # fused or aliased tensors: never use memory
    end[zero] = start[zero]
    return start, end


def _orient_and_add_hyperedges(rng: np.random.Generator, producer: np.ndarray, consumer: np.ndarray,
                               fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs in random orientation (files list both ways), then optional arity-1 and arity-3 edges."""
    flip = rng.random(len(producer)) < 0.2
    first = np.where(flip, consumer, producer)
    second = np.where(flip, producer, consumer)
    arity = [np.full(len(first), 2, dtype=np.int64)]
    members = [np.stack([first, second], axis=1).ravel()]
    extra = round(fraction * len(first))
    if extra:
        pick = rng.integers(0, len(first), extra)
        unary = rng.random(extra) < 0.5
        third = np.maximum(np.minimum(first[pick], second[pick]) - 1, 0)
        rows = np.stack([first[pick], second[pick], third], axis=1)
        arity.append(np.where(unary, 1, 3).astype(np.int64))
        members.append(_ragged_rows(rows, unary))
    return np.concatenate(arity), np.concatenate(members)


def _ragged_rows(rows: np.ndarray, unary: np.ndarray) -> np.ndarray:
    """Flatten ``rows`` keeping only the first column of unary rows, in row order."""
    keep = np.ones(rows.shape, dtype=bool)
    keep[unary, 1:] = False
    return rows[keep]


# ------------------------------------------------------------------------------------------ tables
def _edge_tables(rng: np.random.Generator, counts: np.ndarray, base: np.ndarray, plan: np.ndarray,
                 arity: np.ndarray, members: np.ndarray, forbidden_fraction: float) -> np.ndarray:
    """All edge tables, flat in mixed-radix order, generated a chunk of edges at a time."""
    node_offsets = offsets_from_counts(arity)
    first = members[node_offsets[:-1]] if len(arity) else np.zeros(0, dtype=np.int64)
    last = members[node_offsets[1:] - 1] if len(arity) else np.zeros(0, dtype=np.int64)
    sizes, plan_entry = _table_sizes_and_plan_entry(counts, plan, arity, members, node_offsets)
    kind = _table_kinds(rng, arity, forbidden_fraction)
    radix = np.where(arity == 2, counts[last], sizes)  # pairs: (row, col) = divmod(entry, k_second)
    # Resharding moves the smaller tensor; a heavy-tailed per-edge factor reaches ~1e11.
    scale = np.minimum(base[first], base[last]) * np.power(10.0, rng.normal(0.0, 1.0, len(arity)))
    scale = np.clip(np.rint(scale), 1, _MAX_COST >> 4).astype(np.int64)
    table_offsets = offsets_from_counts(sizes)
    out = np.empty(int(table_offsets[-1]), dtype=np.int64)
    edge_lo = 0
    while edge_lo < len(arity):
        edge_hi = int(np.searchsorted(table_offsets, table_offsets[edge_lo] + _CHUNK_ENTRIES, "right"))
        edge_hi = max(edge_hi - 1, edge_lo + 1)
        part = slice(edge_lo, edge_hi)
        out[table_offsets[edge_lo]:table_offsets[edge_hi]] = _table_chunk(
            rng, sizes[part], kind[part], radix[part], scale[part], plan_entry[part],
            forbidden_fraction)
        edge_lo = edge_hi
    return out


def _table_sizes_and_plan_entry(counts: np.ndarray, plan: np.ndarray, arity: np.ndarray,
                                members: np.ndarray, node_offsets: np.ndarray
                                ) -> tuple[np.ndarray, np.ndarray]:
    """Per edge, the table size and the mixed-radix index of the entry the min-usage plan picks."""
    sizes = np.ones(len(arity), dtype=np.int64)
    entry = np.zeros(len(arity), dtype=np.int64)
    for p in range(int(arity.max(initial=0))):
        mask = arity > p
        node = members[node_offsets[:-1][mask] + p]
        sizes[mask] *= counts[node]
        entry[mask] = entry[mask] * counts[node] + plan[node]
    return sizes, entry


_GENERIC, _ZERO, _FUNCTIONAL = 0, 1, 2


def _table_kinds(rng: np.random.Generator, arity: np.ndarray, forbidden_fraction: float) -> np.ndarray:
    """Zero / functional / generic per edge; functional needs pairs and forbidden entries."""
    draw = rng.random(len(arity))
    kind = np.full(len(arity), _GENERIC, dtype=np.int8)
    kind[draw < _ZERO_TABLE_FRACTION] = _ZERO
    if forbidden_fraction > 0:
        functional = (draw >= _ZERO_TABLE_FRACTION) & (draw < _ZERO_TABLE_FRACTION + _FUNCTIONAL_FRACTION)
        kind[functional & (arity == 2)] = _FUNCTIONAL
    return kind


def _table_chunk(rng: np.random.Generator, sizes: np.ndarray, kind: np.ndarray, radix: np.ndarray,
                 scale: np.ndarray, plan_entry: np.ndarray, forbidden_fraction: float) -> np.ndarray:
    """The flat tables of a run of consecutive edges (int32 index arithmetic: chunks are small)."""
    offsets = offsets_from_counts(sizes)
    total = int(offsets[-1])
    edge = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    local = np.arange(total, dtype=np.int32) - offsets[:-1].astype(np.int32)[edge]
    radix32 = radix.astype(np.int32)
    row, col = np.divmod(local, radix32[edge])
    draw = rng.random(total, dtype=np.float32)  # one draw decides zero / forbidden per entry
    edge_kind = kind[edge]
    # Generic: the edge's resharding cost times 2**(-4..4); free on the diagonal and now and then.
    shift = rng.integers(0, 9, total, dtype=np.int8)
    value = (scale[edge] << shift) >> 4
    value[(row == col) | (draw < 0.3)] = 0
    forbidden = draw >= 1.0 - forbidden_fraction
    # Functional: row s allows exactly column f(s); f(s) = s mod k_second with the plan's row mapped
    # onto the plan's column by one swap (so a permutation stays a permutation).
    functional = np.flatnonzero(edge_kind == _FUNCTIONAL)
    if len(functional):
        e = edge[functional]
        plan_row, plan_col = np.divmod(plan_entry[e], radix[e])
        f = row[functional] % radix32[e]
        a = plan_row % radix[e]
        f = np.where(f == a, plan_col, np.where(f == plan_col, a, f))
        forbidden[functional] = col[functional] != f
        value[functional] = np.where(draw[functional] < 0.8, 0, value[functional] >> 4)
    zero = edge_kind == _ZERO
    value[zero] = 0
    forbidden[zero] = False
    forbidden[offsets[:-1] + plan_entry] = False  # the min-usage plan's pair is always allowed
    value[forbidden] = FORBIDDEN
    return value
