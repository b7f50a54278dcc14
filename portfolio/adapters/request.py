"""XLA's solver request as flat numpy arrays, and its exact conversion to and from a :class:`Problem`.

Both source formats (the XLA proto and Alpa's serialized arguments) carry the same request, so both
land in :class:`SolverRequest` and share :func:`to_problem`, which applies the request's semantics:
node cost = computation + communication, usage = memory cost, edge table ``i * s_len(v) + j``, an
alias pair forbids every entry whose value cost is above a threshold, followers take their leader's
strategy, liveness from ``live`` (groups included) or else ``node_intervals``, and a budget ``<= 0``
is no limit.

Where it goes further than a lossy conversion would: liveness with gaps stays exact (a node owns one
interval per run of live times), followers fold into their leader (whose node then owns their
intervals, with their usages), and fractional costs keep their precision through a cost scale, with
the worst rounding error over any plan reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..evaluate import exact_sum
from ..io import PathLike, ProblemFormatError
from ..problem import FORBIDDEN, Capacity, Problem, offsets_from_counts
from .conversion import Conversion
from .naming import NodeNaming

EXACT_DOUBLE = 2**53
"""Integers up to this magnitude are exact as doubles; the writer refuses larger finite costs."""


@dataclass(frozen=True)
class Rows:
    """A list of variable-length rows: ``counts[i]`` values each, concatenated in ``values``."""

    counts: np.ndarray
    values: np.ndarray

    @property
    def offsets(self) -> np.ndarray:
        return offsets_from_counts(self.counts)

    @staticmethod
    def empty(dtype: type = np.float64) -> Rows:
        return Rows(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=dtype))


@dataclass
class SolverRequest:
    """The request's fields as arrays; names follow XLA's proto (``labels`` renames them in errors)."""

    s_len: np.ndarray
    computation_costs: Rows
    communication_costs: Rows
    memory_costs: Rows
    edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    resharding_costs: Rows = field(default_factory=Rows.empty)
    num_nodes: int | None = None
    s_follow: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    aliases: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    value_costs: Rows = field(default_factory=Rows.empty)
    live: Rows = field(default_factory=lambda: Rows.empty(np.int64))
    node_intervals: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    node_groups: Rows = field(default_factory=lambda: Rows.empty(np.int64))
    memory_budget: int = 0
    request_name: str = ""
    s_hint: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """A plan in the request's node order, as XLA's previous solve left it (or none)."""
    instruction_names: tuple[str, ...] = ()
    """One name per node (XLA's HLO instruction), when the request carries them."""
    labels: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ reading
class _Checker:
    """Raises the one :class:`ProblemFormatError` of a bad request, naming the field and index."""

    def __init__(self, path: PathLike, labels: dict[str, str]) -> None:
        self.path, self.labels = path, labels

    def fail(self, where: str, message: str) -> None:
        name, _, rest = where.partition("[")
        raise ProblemFormatError(self.path, self.labels.get(name, name) + ("[" + rest if rest else ""),
                                 message)

    def rows(self, name: str, rows: Rows, expected: np.ndarray, what: str) -> None:
        if len(rows.counts) != len(expected):
            self.fail(name, f"has {len(rows.counts)} entries, expected one per {what} ({len(expected)})")
        bad = np.flatnonzero(rows.counts != expected)
        if len(bad):
            i = int(bad[0])
            self.fail(f"{name}[{i}].costs", f"has {rows.counts[i]} entries, expected {expected[i]}")

    def values(self, name: str, rows: Rows, bad: np.ndarray, message: str) -> None:
        """Fail at the first value where ``bad`` holds, as ``name[row].costs[k]``."""
        hits = np.flatnonzero(bad)
        if len(hits):
            k = int(hits[0])
            offsets = rows.offsets
            row = int(np.searchsorted(offsets, k, side="right") - 1)
            self.fail(f"{name}[{row}].costs[{k - offsets[row]}]", f"{rows.values[k]} {message}")

    def pairs(self, name: str, pairs: np.ndarray, n: int) -> None:
        bad = np.flatnonzero((pairs < 0) | (pairs >= n))
        if len(bad):
            e, side = divmod(int(bad[0]), 2)
            self.fail(f"{name}[{e}].{('first', 'second')[side]}",
                      f"node {pairs[e, side]} is out of range (the request has {n} nodes)")


def _row_index(rows_offsets: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Flat positions of the entries of rows ``which`` (in that order) in a CSR array."""
    counts = rows_offsets[which + 1] - rows_offsets[which]
    starts = np.repeat(rows_offsets[which] - offsets_from_counts(counts)[:-1], counts)
    return starts + np.arange(int(counts.sum()), dtype=np.int64)


def _leaders(chk: _Checker, follow: np.ndarray, s_len: np.ndarray) -> np.ndarray:
    """Each node's group root (the least index among the nodes its follow links join)."""
    n = len(s_len)
    if len(follow) == 0:
        return np.arange(n, dtype=np.int64)
    if len(follow) != n:
        chk.fail("s_follow", f"has {len(follow)} entries, expected none or one per node ({n})")
    bad = np.flatnonzero(follow >= n)
    if len(bad):
        chk.fail(f"s_follow[{bad[0]}]", f"node {follow[bad[0]]} is out of range (the request has {n} nodes)")
    followers = np.flatnonzero(follow >= 0)
    bad = followers[s_len[followers] != s_len[follow[followers]]]
    if len(bad):
        i = int(bad[0])
        chk.fail(f"s_follow[{i}]", f"node {i} has {s_len[i]} strategies but node {follow[i]}, which it "
                                   f"follows, has {s_len[follow[i]]}")
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in zip(followers.tolist(), follow[followers].tolist()):
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


def _liveness(chk: _Checker, req: SolverRequest, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Request liveness as half-open intervals ``(node, start, end)``: runs of live times, exact."""
    groups = req.node_groups
    g = len(groups.counts)
    gbad = np.flatnonzero((groups.values < 0) | (groups.values >= n))
    if len(gbad):
        chk.fail("node_groups", f"prims entry {groups.values[gbad[0]]} is out of range (the request "
                                f"has {n} nodes)")
    goffsets = groups.offsets
    if len(req.live.counts):
        ids = req.live.values
        times = np.repeat(np.arange(len(req.live.counts), dtype=np.int64), req.live.counts)
        bad = np.flatnonzero((ids < 0) | (ids >= n + g))
        if len(bad):
            k = int(bad[0])
            t = int(times[k])
            chk.fail(f"live[{t}].nodes[{k - req.live.offsets[t]}]",
                     f"{ids[k]} names neither a node (0..{n - 1}) nor a group ({n}..{n + g - 1})")
        starts, ends = times, times + 1
    elif len(req.node_intervals):
        k = len(req.node_intervals)
        if k not in (n, n + g):
            chk.fail("node_intervals", f"has {k} entries, expected one per node ({n}) or per node "
                                       f"and group ({n + g})")
        ids = np.arange(k, dtype=np.int64)
        starts, ends = req.node_intervals[:, 0], req.node_intervals[:, 1] + 1
    else:
        ids = starts = ends = np.zeros(0, dtype=np.int64)
    in_group = ids >= n
    if in_group.any():  # members inherit their group's liveness
        which = ids[in_group] - n
        members = groups.values[_row_index(goffsets, which)]
        reps = np.diff(goffsets)[which]
        ids = np.concatenate([ids[~in_group], members])
        starts = np.concatenate([starts[~in_group], np.repeat(starts[in_group], reps)])
        ends = np.concatenate([ends[~in_group], np.repeat(ends[in_group], reps)])
    keep = ends > starts
    return _union(ids[keep], starts[keep], ends[keep])


def _union(node: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node, the union of its intervals as disjoint maximal runs (touching ones joined), sorted."""
    if len(node) == 0:
        return node, start, end
    order = np.lexsort((start, node))
    node, start, end = node[order], start[order], end[order]
    lo, hi = int(start.min()), int(end.max())
    span = hi - lo + 2
    rank = np.cumsum(np.r_[0, node[1:] != node[:-1]])
    if span * (int(rank[-1]) + 1) < 2**62:  # a running maximum per node, in one pass
        reach = np.maximum.accumulate((end - lo) + rank * span) - rank * span + lo
    else:
        reach = end.copy()
        for k in range(1, len(end)):
            if node[k] == node[k - 1]:
                reach[k] = max(reach[k], reach[k - 1])
    new_run = np.r_[True, (node[1:] != node[:-1]) | (start[1:] > reach[:-1])]
    first = np.flatnonzero(new_run)
    last = np.r_[first[1:], len(node)] - 1
    return node[first], start[first], reach[last]


def _scaled(chk: _Checker, name: str, rows: Rows, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(integer values, forbidden mask, rounding error per value) of cost rows times ``scale``."""
    x = rows.values.astype(np.float64) * scale
    chk.values(name, rows, np.isnan(x), "is not a number")
    forbidden = x >= FORBIDDEN
    ints = np.where(forbidden, 0.0, np.rint(x))
    return ints.astype(np.int64), forbidden, np.where(forbidden, 0.0, np.abs(x - ints))


def _row_max(values: np.ndarray, offsets: np.ndarray, initial: float = 0.0) -> np.ndarray:
    """Maximum of each row (``initial`` for an empty row)."""
    out = np.full(len(offsets) - 1, initial, dtype=values.dtype)
    nonempty = np.diff(offsets) > 0
    if len(values):
        out[nonempty] = np.maximum(np.maximum.reduceat(values, offsets[:-1][nonempty]), initial)
    return out


def to_problem(req: SolverRequest, path: PathLike = "<request>", cost_scale: float = 1.0,
               alias_threshold: float = 0.0) -> Conversion:
    """Validate ``req`` and convert it exactly (up to the reported rounding) into a :class:`Problem`."""
    chk = _Checker(path, req.labels)
    if not (np.isfinite(cost_scale) and cost_scale > 0):
        chk.fail("", f"cost scale must be a positive number, got {cost_scale}")
    s_len = np.asarray(req.s_len, dtype=np.int64)
    n = len(s_len)
    if req.num_nodes is not None and req.num_nodes != n:
        chk.fail("s_len", f"has {n} entries but num_nodes is {req.num_nodes}")
    bad = np.flatnonzero(s_len < 1)
    if len(bad):
        chk.fail(f"s_len[{bad[0]}]", f"node {bad[0]} has {s_len[bad[0]]} strategies; at least 1 is needed")
    for name in ("computation_costs", "communication_costs", "memory_costs"):
        chk.rows(name, getattr(req, name), s_len, "node")
    for name in ("computation_costs", "communication_costs", "memory_costs"):
        rows = getattr(req, name)
        chk.values(name, rows, np.isnan(rows.values), "is not a number")
        chk.values(name, rows, rows.values < 0, "is negative")
    mem = req.memory_costs
    chk.values("memory_costs", mem, np.isinf(mem.values) | (mem.values >= 2.0**63), "is too large")
    edges = np.asarray(req.edges, dtype=np.int64).reshape(-1, 2)
    aliases = np.asarray(req.aliases, dtype=np.int64).reshape(-1, 2)
    chk.pairs("edges", edges, n)
    chk.pairs("aliases", aliases, n)
    chk.rows("resharding_costs", req.resharding_costs, s_len[edges[:, 0]] * s_len[edges[:, 1]], "edge")
    chk.rows("value_costs", req.value_costs, s_len[aliases[:, 0]] * s_len[aliases[:, 1]], "alias")
    chk.values("value_costs", req.value_costs, np.isnan(req.value_costs.values), "is not a number")
    chk.values("resharding_costs", req.resharding_costs, req.resharding_costs.values == -np.inf,
               "cannot be shifted to a non-negative cost")
    notes: list[str] = []

    # followers fold into the least node of their group
    root = _leaders(chk, np.asarray(req.s_follow, dtype=np.int64), s_len)
    roots, node_of = np.unique(root, return_inverse=True)
    node_of = node_of.astype(np.int64)
    counts = s_len[roots]
    so = offsets_from_counts(counts)
    if len(roots) < n:
        notes.append(f"{n - len(roots)} followers folded into their leaders ({len(roots)} nodes left)")

    # node costs: computation + communication, scaled; a folded node pays every member's cost
    both = Rows(s_len, req.computation_costs.values + req.communication_costs.values)
    ints, forb, err = _scaled(chk, "computation_costs", both, cost_scale)
    req_so = offsets_from_counts(s_len)
    error = float(_row_max(err, req_so).sum())
    target = so[node_of].repeat(s_len) + (np.arange(len(ints)) - req_so[:-1].repeat(s_len))
    costs = np.zeros(int(so[-1]), dtype=np.int64)
    np.add.at(costs, target, ints)
    forbidden = np.zeros(len(costs), dtype=bool)
    np.logical_or.at(forbidden, target, forb)
    if np.any(costs[~forbidden] >= FORBIDDEN):
        chk.fail("computation_costs", "the costs of a node and its followers add up to 10**18 or more")
    costs[forbidden] = FORBIDDEN

    # edge tables, shifted per edge where negative; alias pairs as 0 / forbidden tables
    res = req.resharding_costs
    ints, forb, err = _scaled(chk, "resharding_costs", res, cost_scale)
    roff = res.offsets
    error += float(_row_max(err, roff).sum())
    low = -_row_max(np.where(forb, np.int64(0), -ints), roff, initial=0)  # min(0, least allowed entry)
    shift = exact_sum(low)
    ints = ints - np.repeat(low, res.counts)
    chk.values("resharding_costs", res, ~forb & (ints >= FORBIDDEN),
               "leaves its table spanning 10**18 or more once shifted to non-negative costs")
    ints[forb] = FORBIDDEN
    if shift:
        notes.append(f"negative edge costs shifted to non-negative: {shift:,} kept as the cost offset")
    vals = req.value_costs
    alias_tables = np.where(vals.values > alias_threshold, FORBIDDEN, 0).astype(np.int64)
    used = _row_max(alias_tables, vals.offsets) > 0
    alias_index = _row_index(vals.offsets, np.flatnonzero(used))
    edge_nodes = node_of[np.concatenate([edges, aliases[used]])].reshape(-1)
    edge_costs = np.concatenate([ints, alias_tables[alias_index]])
    table_sizes = np.concatenate([res.counts, vals.counts[used]])

    # intervals: exact runs of live times per request node, owned by its (folded) node
    live_node, start, end = _liveness(chk, req, n)
    silent = np.setdiff1d(np.arange(n), live_node)
    if len(silent):  # a node never live keeps an empty interval (the contest's [s, s))
        at = (req.node_intervals[silent, 0] if len(req.node_intervals) and not len(req.live.counts)
              else np.zeros(len(silent), dtype=np.int64))
        live_node, start, end = (np.concatenate(a) for a in ((live_node, silent), (start, at), (end, at)))
        order = np.lexsort((start, live_node))
        live_node, start, end = live_node[order], start[order], end[order]
    owner = node_of[live_node]
    order = np.argsort(owner, kind="stable")
    live_node, owner, start, end = live_node[order], owner[order], start[order], end[order]
    usage = np.ceil(mem.values[_row_index(req_so, live_node)])
    if np.any(usage != mem.values[_row_index(req_so, live_node)]):
        notes.append("fractional memory costs rounded up (a plan that fits here fits the request)")
    budget = int(req.memory_budget)
    problem = Problem(
        name=req.request_name or _stem(path),
        strategy_offsets=so, node_costs=costs,
        interval_node=owner, interval_start=start, interval_end=end,
        interval_usage_offsets=offsets_from_counts(s_len[live_node]),
        interval_usages=usage.astype(np.int64),
        edge_node_offsets=np.arange(0, 2 * len(table_sizes) + 1, 2, dtype=np.int64),
        edge_nodes=edge_nodes, edge_cost_offsets=offsets_from_counts(table_sizes),
        edge_costs=edge_costs,
        capacity=Capacity.uniform(budget) if budget > 0 else Capacity.unlimited(),
        cost_offset=shift,
    )
    if error:
        notes.append(f"costs rounded at scale {cost_scale:g}: any plan's cost is within "
                     f"{error / cost_scale:.6g} of the request's")
    hint = _hint(req.s_hint, s_len, node_of, len(roots), notes)
    names = _names(req.instruction_names, n, notes)
    used_aliases = np.flatnonzero(used)
    naming = NodeNaming(
        node_of, names=_labels(req.instruction_names, n), interval_source=live_node,
        edge_source=np.concatenate([np.arange(len(edges), dtype=np.int64), -1 - used_aliases]),
        edge_ends=np.concatenate([edges, aliases[used_aliases]]).reshape(-1, 2))
    return Conversion(problem, node_of, float(cost_scale), error / cost_scale, shift, tuple(notes),
                      foreign=True, hint=hint, names=names, naming=naming)


def _hint(s_hint: np.ndarray, s_len: np.ndarray, node_of: np.ndarray, nodes: int,
          notes: list[str]) -> np.ndarray | None:
    """The request's ``s_hint`` as a plan of the problem when it is a full, valid plan; else None,
    with a note saying why it is ignored (a hint is advice: a bad one is not fatal)."""
    hint = np.asarray(s_hint, dtype=np.int64).reshape(-1)
    n = len(s_len)
    if len(hint) == 0:
        return None
    why = None
    if len(hint) != n:
        why = f"it has {len(hint)} entries but the request has {n} nodes"
    else:
        bad = np.flatnonzero((hint < 0) | (hint >= s_len))
        if len(bad):
            i = int(bad[0])
            why = f"s_hint[{i}] = {hint[i]} is out of range (node {i} has {s_len[i]} strategies)"
    if why is None:
        first = np.unique(node_of, return_index=True)[1]    # each group's least node leads it
        plan = hint[first]
        bad = np.flatnonzero(plan[node_of] != hint)
        if len(bad):
            i = int(bad[0])
            why = (f"s_hint[{i}] = {hint[i]} differs from the strategy of the node it follows "
                   f"({plan[node_of[i]]})")
        else:
            return plan
    notes.append(f"s_hint ignored: {why}")
    return None


def _names(names: tuple[str, ...], n: int, notes: list[str]) -> tuple[str, ...] | None:
    """The instruction names when there is one distinct, non-empty name per node (a re-solve maps
    plans by them); else None, with a note when the request has some."""
    if not names:
        return None
    names = tuple(str(x) for x in names)
    if len(names) != n or "" in names or len(set(names)) != n:
        notes.append(f"instruction_names: not one distinct name per node ({len(names)} names, "
                     f"{len(set(names))} distinct, {n} nodes); a re-solve maps plans by index")
        return None
    return names


def _labels(names: tuple[str, ...], n: int) -> tuple[str, ...] | None:
    """The instruction names as messages show them: one per node (repeated or empty ones too: a
    message names a node by its index first), or None when the count is not the node count."""
    return tuple(str(x) for x in names) if len(names) == n and any(names) else None


def _stem(path: PathLike) -> str:
    name = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".pb", ".binpb", ".textproto", ".txtpb", ".pbtxt"):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    return name


# ------------------------------------------------------------------------------------------ writing
def _as_doubles(values: np.ndarray, scale: float, where: str) -> np.ndarray:
    """Integer costs as doubles divided by ``scale``; forbidden entries read back as forbidden."""
    finite = values != FORBIDDEN
    big = np.flatnonzero(finite & (np.abs(values) > EXACT_DOUBLE))
    if len(big):
        raise ValueError(f"{where}: cost {values[big[0]]} (entry {big[0]}) cannot be written exactly "
                         f"as a double (more than 2**53)")
    marker = float(FORBIDDEN) if scale == 1 else FORBIDDEN / scale * (1 + 2.0**-40)
    return np.where(finite, values / scale, marker)


def from_problem(problem: Problem, cost_scale: float = 1.0) -> SolverRequest:
    """The request of a problem: extra intervals of a node become followers of it (zero cost).

    Refused with ``ValueError``: edges that are not pairs, a capacity that varies over time or is
    0 (``memory_budget <= 0`` reads as no limit), negative node costs, finite costs above 2**53.
    """
    if np.any(problem.edge_arity != 2):
        e = int(np.flatnonzero(problem.edge_arity != 2)[0])
        raise ValueError(f"edge {e} names {problem.edge_arity[e]} nodes; a request holds pairs only")
    cap = problem.capacity
    limit = cap.uniform_limit
    if not cap.is_unlimited and (limit is None or limit <= 0):
        raise ValueError("the capacity varies over time or is 0; a request holds one budget > 0")
    if np.any(problem.node_costs < 0):
        raise ValueError("negative node costs cannot be written (a request's node costs are >= 0)")
    n = problem.num_nodes
    node_costs = problem.node_costs.copy()
    edge_costs = problem.edge_costs.copy()
    offset = int(problem.cost_offset)
    if offset:  # every plan pays each edge once: the constant goes onto one edge, or node 0
        allowed = edge_costs != FORBIDDEN
        carrier = np.flatnonzero(allowed)
        if len(carrier):
            e = int(np.searchsorted(problem.edge_cost_offsets, carrier[0], side="right") - 1)
            sl = slice(int(problem.edge_cost_offsets[e]), int(problem.edge_cost_offsets[e + 1]))
            edge_costs[sl] = np.where(allowed[sl], edge_costs[sl] + offset, FORBIDDEN)
        elif n and offset > 0:
            sl = problem.strategy_slice(0)
            node_costs[sl] = np.where(node_costs[sl] != FORBIDDEN, node_costs[sl] + offset, FORBIDDEN)
        else:
            raise ValueError(f"the cost offset {offset} has no edge or node cost to go onto")
    counts = problem.strategy_counts
    first = problem.node_interval_offsets[:-1]
    has = np.diff(problem.node_interval_offsets) > 0
    own = problem.node_interval_order[first[has]]
    extra = np.setdiff1d(np.arange(problem.num_intervals), own)
    iv = np.full((n, 2), (0, -1), dtype=np.int64)
    iv[has, 0] = problem.interval_start[own]
    iv[has, 1] = problem.interval_end[own] - 1
    iv_x = np.stack([problem.interval_start[extra], problem.interval_end[extra] - 1], axis=1)
    owners = np.concatenate([np.arange(n), problem.interval_node[extra]])
    s_len = counts[owners]
    usage_index = _row_index(problem.interval_usage_offsets, np.r_[own, extra])
    usages = np.zeros(int(s_len.sum()), dtype=np.float64)
    place = np.r_[np.flatnonzero(has), n + np.arange(len(extra))]
    usages[_row_index(offsets_from_counts(s_len), place)] = problem.interval_usages[usage_index]
    zeros_x = np.zeros(int(counts[problem.interval_node[extra]].sum()))
    follow = np.r_[np.full(n, -1, dtype=np.int64), problem.interval_node[extra]] if len(extra) else \
        np.zeros(0, dtype=np.int64)
    computation = np.concatenate([_as_doubles(node_costs, cost_scale, "node costs"), zeros_x])
    return SolverRequest(
        num_nodes=len(s_len), s_len=s_len, s_follow=follow,
        computation_costs=Rows(s_len, computation),
        communication_costs=Rows(s_len, np.zeros(len(computation))),
        memory_costs=Rows(s_len, usages),
        edges=problem.edge_nodes.reshape(-1, 2),
        resharding_costs=Rows(np.diff(problem.edge_cost_offsets),
                              _as_doubles(edge_costs, cost_scale, "edge costs")),
        node_intervals=np.concatenate([iv, iv_x]),
        memory_budget=int(limit) if limit is not None else 0,
        request_name=problem.name,
    )
