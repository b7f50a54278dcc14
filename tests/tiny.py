"""Tiny random instances and an independent brute force, shared by the exact-method tests.

The brute force enumerates every plan and scores it in plain Python over every integer time, so it
judges the library (presolve, exact backends, bounds) rather than repeating it. ``tiny`` draws
instances with forbidden entries, functional edges, self-loops, duplicate edges and hyperedges;
``general`` adds several intervals per node, capacity over time and a cost offset.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
from hypothesis import strategies as st

from portfolio.problem import Capacity, Problem, offsets_from_counts

F = 10**18


# ------------------------------------------------------------------------------------------ building
def make_problem(costs, intervals, usages, edges, tables, capacity=None, offset=0, owners=None,
                 name="t") -> Problem:
    """A Problem from Python lists; ``owners[j]`` is the node of interval j (default: j)."""
    owners = list(range(len(costs))) if owners is None else owners
    arr = lambda x: np.array(x, dtype=np.int64).reshape(-1)  # noqa: E731
    return Problem(
        name=name,
        strategy_offsets=offsets_from_counts(arr([len(c) for c in costs])),
        node_costs=arr([c for row in costs for c in row]),
        interval_node=arr(owners),
        interval_start=arr([s for s, _ in intervals]),
        interval_end=arr([e for _, e in intervals]),
        interval_usage_offsets=offsets_from_counts(arr([len(u) for u in usages])),
        interval_usages=arr([x for row in usages for x in row]),
        edge_node_offsets=offsets_from_counts(arr([len(e) for e in edges])),
        edge_nodes=arr([v for e in edges for v in e]),
        edge_cost_offsets=offsets_from_counts(arr([len(t) for t in tables])),
        edge_costs=arr([x for t in tables for x in t]),
        capacity=capacity if capacity is not None else Capacity.unlimited(),
        cost_offset=offset,
    )


# ------------------------------------------------------------------------------------------ brute force
def _every_plan(problem: Problem):
    """Every plan with (finite cost part, has forbidden choice, the usage at each covered integer
    time as a dict, the capacity at each such time, None: unlimited), in plain Python."""
    counts = [int(k) for k in problem.strategy_counts]
    so = problem.strategy_offsets.tolist()
    costs = problem.node_costs.tolist()
    eo, co = problem.edge_node_offsets.tolist(), problem.edge_cost_offsets.tolist()
    en, ec = problem.edge_nodes.tolist(), problem.edge_costs.tolist()
    io = problem.interval_usage_offsets.tolist()
    use = problem.interval_usages.tolist()
    ivs = list(zip(problem.interval_node.tolist(), problem.interval_start.tolist(),
                   problem.interval_end.tolist()))
    times = sorted({t for _, s, e in ivs for t in range(s, e)})
    cap_t, cap_v = problem.capacity.times.tolist(), problem.capacity.values.tolist()

    def capacity(t: int) -> int | None:
        k = max((i for i, x in enumerate(cap_t) if x <= t), default=None)
        return None if k is None else cap_v[k]

    caps = {t: capacity(t) for t in times}
    for plan in product(*(range(k) for k in counts)):
        total, forbidden = int(problem.cost_offset), False
        for i, s in enumerate(plan):
            c = costs[so[i] + s]
            forbidden |= c == F
            total += 0 if c == F else c
        for e in range(len(eo) - 1):
            index = 0
            for v in en[eo[e]:eo[e + 1]]:
                index = index * counts[v] + plan[v]
            c = ec[co[e] + index]
            forbidden |= c == F
            total += 0 if c == F else c
        used = {t: sum(use[io[j] + plan[i]] for j, (i, s, e) in enumerate(ivs) if s <= t < e)
                for t in times}
        yield list(plan), total, forbidden, used, caps


def brute(problem: Problem) -> list[tuple[list[int], int, bool, bool]]:
    """Every plan with (finite cost part, has forbidden choice, feasible), in plain Python."""
    return [(plan, total, forbidden,
             all(caps[t] is None or u <= caps[t] for t, u in used.items()))
            for plan, total, forbidden, used, caps in _every_plan(problem)]


def brute_peaks(problem: Problem) -> list[tuple[list[int], int, bool, int]]:
    """Every plan with (finite cost part, has forbidden choice, peak usage: the most memory live
    at any integer time, 0 when nothing is ever live), in plain Python, whatever the capacity."""
    return [(plan, total, forbidden, max(used.values(), default=0))
            for plan, total, forbidden, used, _ in _every_plan(problem)]


def best(scored) -> int | None:
    values = [c for _, c, forbidden, feasible in scored if feasible and not forbidden]
    return min(values) if values else None


@st.composite
def tiny(draw, general: bool | None = None, max_nodes: int = 5, loose: bool = False) -> Problem:
    """A tiny instance with forbidden entries, functional edges, self-loops, duplicate edges and
    hyperedges; ``general`` adds several intervals per node, capacity over time and an offset;
    ``loose`` makes memory rarely bind (more memory-free nodes to eliminate)."""
    if general is None:
        general = draw(st.booleans())
    n = draw(st.integers(1, max_nodes))
    counts = [draw(st.integers(1, 3)) for _ in range(n)]
    small = st.integers(0, 20)

    def value(forbidden_in_ten: int) -> int:
        return F if draw(st.integers(0, 9)) >= 10 - forbidden_in_ten else draw(small)

    costs = [[value(1) for _ in range(k)] for k in counts]
    for row in costs:  # an all-forbidden node is tested on its own below
        if all(c == F for c in row):
            row[draw(st.integers(0, len(row) - 1))] = draw(small)
    owners, intervals, usages = [], [], []
    for i in range(n):
        for _ in range(draw(st.integers(0, 2)) if general else 1):
            s = draw(st.integers(0, 5))
            owners.append(i)
            intervals.append((s, s + draw(st.integers(0, 4))))
            same, constant = draw(st.integers(0, 10)), draw(st.integers(0, 2)) == 0
            usages.append([same if constant or draw(st.integers(0, 3)) == 0
                           else draw(st.integers(0, 10)) for _ in range(counts[i])])
    edges, tables = [], []
    for _ in range(draw(st.integers(0, max_nodes + 1))):
        kind = draw(st.integers(0, 9))
        if kind < 7 and n >= 2:
            u, v = draw(st.permutations(range(n)))[:2]
            nodes = [u, v]
        elif kind == 7:
            v = draw(st.integers(0, n - 1))
            nodes = [v, v] if draw(st.booleans()) else [v]
        else:
            nodes = [draw(st.integers(0, n - 1)) for _ in range(draw(st.integers(2, 3)))]
        size = math.prod(counts[v] for v in nodes)
        if len(nodes) == 2 and nodes[0] != nodes[1] and draw(st.integers(0, 2)) > 0:
            # functional: each row allows exactly one column
            ku, kv = counts[nodes[0]], counts[nodes[1]]
            table = [F] * size
            for p in range(ku):
                table[p * kv + draw(st.integers(0, kv - 1))] = draw(small)
        else:
            zero = draw(st.booleans())  # zero tables exercise deletion and degree elimination
            table = [0 if zero and draw(st.integers(0, 3)) else value(2) for _ in range(size)]
        edges.append(nodes)
        tables.append(table)
        if draw(st.integers(0, 5)) == 0:  # a parallel copy with its own table
            edges.append(list(nodes))
            tables.append([value(2) for _ in range(size)])
    # capacity near the least possible peak, so that memory often binds
    horizon = max((e for _, e in intervals), default=0)
    low = [0] * (horizon + 1)
    for (s, e), u in zip(intervals, usages):
        for t in range(s, e):
            low[t] += min(u)
    peak = max(low, default=0)
    mode = draw(st.integers(0, 3))
    if mode == 0:
        capacity = Capacity.unlimited()
    elif mode == 3 and general and horizon > 0:
        # never negative: a negative capacity where nothing is live is infeasible by the rules
        # ("at every integer time"), which this brute force (covered times only) cannot see
        times = sorted(set(draw(st.lists(st.integers(0, horizon), min_size=1, max_size=3))))
        capacity = Capacity(np.array(times), np.array([max(0, peak + draw(st.integers(-2, 12)))
                                                       for _ in times]))
    else:
        capacity = Capacity.uniform(max(0, peak + draw(st.integers(-1, 8)) + (20 if loose else 0)))
    offset = draw(st.integers(0, 50)) if general else 0
    return make_problem(costs, intervals, usages, edges, tables, capacity, offset, owners)


def optimum(problem: Problem) -> int | None:
    """The brute-force optimum over feasible plans without forbidden choices (offset included)."""
    return best(brute(problem))


def assert_exact(problem: Problem, outcome, found: list) -> None:
    """An exact engine's outcome on a tiny instance against the brute force: the optimum with a
    matching bound, or ``infeasible`` exactly when no plan without forbidden choices fits; every
    plan it reported on the way is a real feasible plan."""
    from portfolio.evaluate import evaluate

    best_cost = optimum(problem)
    if best_cost is None:
        assert outcome.status == "infeasible", (outcome.status, outcome.note)
        assert outcome.plan is None
        return
    assert outcome.status == "optimal", (outcome.status, outcome.note)
    ev = evaluate(problem, outcome.plan)
    assert ev.feasible and not ev.has_forbidden
    assert outcome.cost == ev.cost == best_cost
    assert outcome.bound == best_cost
    for plan in found:
        assert evaluate(problem, plan).feasible


def scaled_costs(problem: Problem, scale: int) -> Problem:
    """``problem`` with every finite node and edge cost times ``scale`` plus a distinct low digit
    (forbidden entries stay forbidden): costs near the contest's 1e13, where float arithmetic or an
    int64 wrap would show."""
    node = problem.node_costs.copy()
    edge = problem.edge_costs.copy()
    node[node != F] = node[node != F] * scale + 1
    edge[edge != F] = edge[edge != F] * scale + 3
    return Problem(**{**{k: getattr(problem, k) for k in problem.__dataclass_fields__},
                      "node_costs": node, "edge_costs": edge})
