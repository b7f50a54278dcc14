"""Problem accessors against the raw JSON, and the general model (multi-interval nodes, capacity over
time, cost offset) built with the constructor and checked against a brute-force evaluation."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FORBIDDEN, all_plans, bundled_example_path, instances
from portfolio.evaluate import evaluate, usage_profile
from portfolio.io import load_problem, parse_problem, problem_to_dict
from portfolio.problem import Capacity, Problem, fold_repeated_nodes, offsets_from_counts


# ------------------------------------------------------------------------------------------ accessors
def check_accessors(problem: Problem, doc: dict) -> None:
    """Every accessor equals what the raw document says."""
    nodes, edges = doc["problem"]["nodes"], doc["problem"]["edges"]
    costs, usages, intervals = nodes["costs"], nodes["usages"], nodes["intervals"]
    n = len(costs)
    assert problem.num_nodes == n
    assert problem.num_edges == len(edges["nodes"])
    assert problem.strategy_counts.tolist() == [len(c) for c in costs]
    for i in range(n):
        assert problem.costs_of(i).tolist() == costs[i]
        assert problem.usages_of_interval(i).tolist() == usages[i]
        assert problem.intervals_of(i).tolist() == [i]

    for e, (enodes, table) in enumerate(zip(edges["nodes"], edges["costs"])):
        assert problem.nodes_of_edge(e).tolist() == enodes
        t = problem.edge_table(e)
        assert t.shape == tuple(len(costs[v]) for v in enodes)
        for combo in product(*(range(len(costs[v])) for v in enodes)):
            index = 0
            for v, s in zip(enodes, combo):
                index = index * len(costs[v]) + s
            assert int(t[combo]) == table[index]

    for i in range(n):
        expected_edges = [e for e, en in enumerate(edges["nodes"]) if i in en]
        assert problem.incident_edges(i).tolist() == expected_edges
        expected_nb = sorted({v for en in edges["nodes"] if i in en for v in en if v != i})
        assert problem.neighbours(i).tolist() == expected_nb

    starts = sorted({a for a, b in intervals if b > a})
    assert problem.time_points.tolist() == starts
    lo, hi = problem.interval_point_range
    for j, (a, b) in enumerate(intervals):
        covered = [k for k, t in enumerate(starts) if a <= t < b]
        assert list(range(lo[j], hi[j])) == covered
    for k, t in enumerate(starts):
        assert problem.live_nodes_at(k).tolist() == [i for i, (a, b) in enumerate(intervals) if a <= t < b]

    plan = problem.min_usage_strategies.tolist()
    for i, s in enumerate(plan):
        assert 0 <= s < len(costs[i])
        live = intervals[i][1] > intervals[i][0]
        allowed = [k for k in range(len(costs[i])) if costs[i][k] != FORBIDDEN]
        if not allowed:  # which forbidden strategy is left unspecified
            continue
        key = [((usages[i][k] if live else 0), costs[i][k], k) for k in allowed]
        assert (usages[i][s] if live else 0, costs[i][s], s) == min(key)


def example_docs(request) -> tuple[Problem, dict]:
    path = bundled_example_path() if request.param == "bundled" else request.getfixturevalue("contest_example")
    return load_problem(path), json.loads(Path(path).read_text())


@pytest.fixture(params=["bundled", "contest"])
def example(request) -> tuple[Problem, dict]:
    return example_docs(request)


def test_accessors_match_raw_json(example):
    problem, doc = example
    check_accessors(problem, doc)


def test_contest_example_structure(contest_example):
    """Facts of the contest's example.json read off its text: checked via the accessors."""
    problem = load_problem(contest_example)
    doc = json.loads(contest_example.read_text())
    assert problem.name == doc["problem"]["name"]
    assert problem.usage_limit == doc["problem"]["usage_limit"]
    # edge [1, 3]: nodes with 2 and 2 strategies -> a 2 x 2 table, row-major in the file
    assert problem.edge_table(2).tolist() == [[90, 10], [20, 80]]
    assert problem.edge_table(1).shape == (1, 3)
    assert problem.neighbours(4).tolist() == [2, 3]
    assert problem.incident_edges(0).tolist() == [0, 1]
    # two intervals start at 110: one time point
    assert problem.time_points.tolist() == sorted({a for a, _ in doc["problem"]["nodes"]["intervals"]})
    k = problem.time_points.tolist().index(110)
    assert problem.live_nodes_at(k).tolist() == [2, 3, 4]


@settings(max_examples=100, deadline=None)
@given(instances())
def test_accessors_on_random_instances(doc):
    check_accessors(parse_problem(json.dumps(doc).encode()), doc)


def test_empty_intervals_are_not_time_points(fresh_bundled_doc):
    doc = fresh_bundled_doc
    # node 7 has the empty interval [80, 80): it is never live and never a time point
    assert doc["problem"]["nodes"]["intervals"][7] == [80, 80]
    problem = parse_problem(json.dumps(doc).encode())
    assert 80 not in problem.time_points.tolist()  # nothing else starts at 80
    lo, hi = problem.interval_point_range
    assert lo[7] == hi[7]
    assert all(7 not in problem.live_nodes_at(k).tolist() for k in range(len(problem.time_points)))


# ------------------------------------------------------------------------------------------ read-only
ARRAY_FIELDS = [
    "strategy_offsets", "node_costs", "interval_node", "interval_start", "interval_end",
    "interval_usage_offsets", "interval_usages", "edge_node_offsets", "edge_nodes", "edge_cost_offsets",
    "edge_costs", "strategy_counts", "edge_arity", "time_points", "point_capacity",
    "min_usage_strategies", "incidence_offsets", "incidence_edges", "adjacency_offsets",
    "adjacency_nodes", "node_interval_offsets", "node_interval_order",
]


def _views(problem: Problem) -> dict[str, np.ndarray]:
    out = {name: getattr(problem, name) for name in ARRAY_FIELDS}
    lo, hi = problem.interval_point_range
    out.update({
        "interval_point_range.lo": lo, "interval_point_range.hi": hi,
        "capacity.times": problem.capacity.times, "capacity.values": problem.capacity.values,
        "costs_of(1)": problem.costs_of(1), "edge_table(2)": problem.edge_table(2),
        "usages_of_interval(3)": problem.usages_of_interval(3), "intervals_of(3)": problem.intervals_of(3),
        "nodes_of_edge(0)": problem.nodes_of_edge(0), "incident_edges(1)": problem.incident_edges(1),
        "neighbours(1)": problem.neighbours(1),
    })
    return out


def test_arrays_are_read_only():
    problem = load_problem(bundled_example_path())
    before = problem_to_dict(problem)
    for name, arr in _views(problem).items():
        assert isinstance(arr, np.ndarray), name
        assert arr.size > 0, name
        with pytest.raises(ValueError):
            arr[...] = 7
        with pytest.raises(ValueError):
            arr.flat[0] = 7
    assert problem_to_dict(problem) == before


def test_constructor_freezes_its_inputs():
    problem = build(
        counts=[2], node_costs=[1, 2], intervals=[(0, 0, 5, [3, 4])], edges=[],
        capacity=None, offset=0,
    )
    for name in ARRAY_FIELDS[:11]:
        with pytest.raises(ValueError):
            getattr(problem, name)[...] = 0


def test_user_capacity_arrays_are_read_only():
    problem = build(counts=[1], node_costs=[0], intervals=[(0, 0, 5, [3])], edges=[],
                    capacity=(np.array([0, 3]), np.array([10, 2])), offset=0)
    with pytest.raises(ValueError):
        problem.capacity.values[...] = 0


# ------------------------------------------------------------------------------------------ general model
def build(counts, node_costs, intervals, edges, capacity, offset) -> Problem:
    """intervals: (node, start, end, usages-per-strategy); edges: (nodes, table)."""
    counts = np.array(counts, dtype=np.int64)
    offsets = offsets_from_counts(counts)
    edge_nodes = [v for nodes, _ in edges for v in nodes]
    return Problem(
        name="general",
        strategy_offsets=offsets,
        node_costs=np.array(node_costs, dtype=np.int64),
        interval_node=np.array([j[0] for j in intervals], dtype=np.int64),
        interval_start=np.array([j[1] for j in intervals], dtype=np.int64),
        interval_end=np.array([j[2] for j in intervals], dtype=np.int64),
        interval_usage_offsets=offsets_from_counts(np.array([len(j[3]) for j in intervals], dtype=np.int64)),
        interval_usages=np.array([u for j in intervals for u in j[3]], dtype=np.int64),
        edge_node_offsets=offsets_from_counts(np.array([len(n) for n, _ in edges], dtype=np.int64)),
        edge_nodes=np.array(edge_nodes, dtype=np.int64),
        edge_cost_offsets=offsets_from_counts(np.array([len(t) for _, t in edges], dtype=np.int64)),
        edge_costs=np.array([c for _, t in edges for c in t], dtype=np.int64),
        capacity=Capacity.unlimited() if capacity is None else Capacity(*capacity),
        cost_offset=offset,
    )


@st.composite
def general_cases(draw):
    n = draw(st.integers(1, 4))
    counts = [draw(st.integers(1, 3)) for _ in range(n)]
    node_costs = [draw(st.integers(0, 50)) for k in counts for _ in range(k)]
    intervals = []
    for _ in range(draw(st.integers(0, 7))):
        v = draw(st.integers(0, n - 1))
        start = draw(st.integers(0, 12))
        end = start + draw(st.integers(0, 6))
        intervals.append((v, start, end, [draw(st.integers(0, 30)) for _ in range(counts[v])]))
    edges = []
    for _ in range(draw(st.integers(0, 4))):
        nodes = [draw(st.integers(0, n - 1)) for _ in range(draw(st.integers(1, 3)))]
        size = int(np.prod([counts[v] for v in nodes]))
        edges.append((nodes, [draw(st.integers(0, 40)) for _ in range(size)]))
    capacity = None
    if draw(st.booleans()):
        times = sorted(draw(st.sets(st.integers(0, 20), min_size=1, max_size=4)))
        values = [draw(st.integers(0, 80)) for _ in times]
        capacity = (np.array(times, dtype=np.int64), np.array(values, dtype=np.int64))
    offset = draw(st.integers(-100, 100))
    plan = [draw(st.integers(0, k - 1)) for k in counts]
    return counts, node_costs, intervals, edges, capacity, offset, plan


def brute_force(counts, node_costs, intervals, edges, capacity, offset, plan) -> dict:
    offsets = [0]
    for k in counts:
        offsets.append(offsets[-1] + k)
    cost = offset + sum(node_costs[offsets[i] + s] for i, s in enumerate(plan))
    for nodes, table in edges:
        index = 0
        for v in nodes:
            index = index * counts[v] + plan[v]
        cost += table[index]

    def cap(t):
        if capacity is None:
            return None
        live = [int(v) for c, v in zip(*capacity) if c <= t]
        return live[-1] if live else None

    def usage(t):
        return sum(u[plan[v]] for v, a, b, u in intervals if a <= t < b)

    nonempty = [(a, b) for _, a, b, _ in intervals if b > a]
    horizon = max([b for _, _, b, _ in intervals] + ([int(capacity[0][-1]) + 1] if capacity else []) + [0])
    peak, peak_time, first_violation = 0, None, None
    for t in range(horizon):
        u, c = usage(t), cap(t)
        if u > peak:
            peak, peak_time = u, t
        if c is not None and u > c and first_violation is None:
            first_violation = t
    # the margin is taken over the times from the first (non-empty) interval start on
    first = min((a for a, _ in nonempty), default=None)
    slacks = [] if first is None else [cap(t) - usage(t) for t in range(first, horizon) if cap(t) is not None]
    return {"cost": cost, "peak": peak, "peak_time": peak_time, "first_violation": first_violation,
            "margin": min(slacks) if slacks else "n/a", "cap": cap, "usage": usage}


@settings(max_examples=200, deadline=None)
@given(general_cases())
def test_general_model_matches_brute_force(case):
    counts, node_costs, intervals, edges, capacity, offset, plan = case
    problem = build(counts, node_costs, intervals, edges, capacity, offset)
    ref = brute_force(*case)
    ev = evaluate(problem, plan)
    assert ev.cost == ref["cost"]
    assert ev.feasible == (ref["first_violation"] is None)
    assert ev.first_violation_time == ref["first_violation"]
    assert ev.peak_usage == ref["peak"]
    if ref["peak"] > 0:
        assert ev.peak_time == ref["peak_time"]
        if ref["cap"](ref["peak_time"]) is not None:
            assert ev.usage_limit == ref["cap"](ref["peak_time"])
    if capacity is None:
        assert ev.margin is None and ev.usage_limit is None
    elif ref["margin"] != "n/a":
        assert ev.margin == ref["margin"]

    # the structure behind it
    nonempty_starts = sorted({a for _, a, b, _ in intervals if b > a})
    expected_points = set(nonempty_starts)
    if capacity is not None and nonempty_starts:
        expected_points |= {int(c) for c in capacity[0] if c > nonempty_starts[0]}
    assert problem.time_points.tolist() == sorted(expected_points)
    assert [int(x) for x in usage_profile(problem, np.array(plan))] == [
        ref["usage"](t) for t in problem.time_points.tolist()]
    values, limited = problem.capacity.at(np.arange(25))
    for t in range(25):
        c = ref["cap"](t)
        assert bool(limited[t]) == (c is not None)
        if c is not None:
            assert int(values[t]) == c
    for i in range(len(counts)):
        assert problem.intervals_of(i).tolist() == [j for j, iv in enumerate(intervals) if iv[0] == i]
    for k, t in enumerate(problem.time_points.tolist()):
        assert problem.live_nodes_at(k).tolist() == sorted({v for v, a, b, _ in intervals if a <= t < b})
    assert problem.is_contest_shaped == (
        len(intervals) == len(counts) and [iv[0] for iv in intervals] == list(range(len(counts)))
        and (capacity is None or (len(capacity[0]) == 1 and capacity[0][0] == 0)) and offset == 0)


def test_multi_interval_node_and_stepped_capacity():
    """A hand-made case: node 0 owns two intervals; capacity drops from 100 to 30 at t=10."""
    counts = [2, 2]
    node_costs = [5, 1, 0, 3]
    intervals = [(0, 0, 4, [10, 50]), (0, 8, 12, [40, 5]), (1, 2, 11, [20, 10])]
    edges = [([0, 1], [0, 7, 9, 0]), ([1, 1], [1, 2, 3, 4])]
    capacity = (np.array([0, 10]), np.array([100, 30]))
    problem = build(counts, node_costs, intervals, edges, capacity, offset=1000)
    assert not problem.is_contest_shaped
    assert problem.intervals_of(0).tolist() == [0, 1]
    assert problem.time_points.tolist() == [0, 2, 8, 10]
    results = {}
    for plan in all_plans(counts):
        ev = evaluate(problem, plan)
        ref = brute_force(counts, node_costs, intervals, edges, capacity, 1000, plan)
        assert ev.cost == ref["cost"]
        assert ev.feasible == (ref["first_violation"] is None)
        assert ev.peak_usage == ref["peak"]
        results[tuple(plan)] = ev
    # [0, 0]: t in [8, 11) uses 40 + 20 = 60 > 30 from t = 10 on
    assert not results[(0, 0)].feasible and results[(0, 0)].first_violation_time == 10
    # [1, 1]: at most 50 + 10 before t=4, then 5 + 10 = 15 <= 30
    assert results[(1, 1)].feasible and results[(1, 1)].peak_usage == 60
    assert results[(1, 1)].margin == 15  # at t = 10: 30 - 15 (t in [2, 4) leaves 100 - 60 = 40)
    with pytest.raises(ValueError):
        problem_to_dict(problem)


def test_fold_repeated_nodes_keeps_the_entries_where_a_repeated_node_agrees():
    """The one folding of an edge onto its distinct nodes (presolve, the exact model, the kernels
    and the toulbar2 networks use it): a node named twice takes one strategy in both places."""
    counts = [2, 3, 4]
    table = np.arange(3 * 2 * 3 * 4).reshape(3, 2, 3, 4)   # nodes 1, 0, 1, 2
    scope, folded = fold_repeated_nodes([1, 0, 1, 2], table, counts)
    assert scope == (1, 0, 2) and folded.shape == (3, 2, 4)
    ordered, by_index = fold_repeated_nodes([1, 0, 1, 2], table.reshape(-1), counts, sort=True)
    assert ordered == (0, 1, 2) and by_index.shape == (2, 3, 4)
    for a, b, c in product(range(3), range(2), range(4)):
        assert folded[a, b, c] == by_index[b, a, c] == table[a, b, a, c]
    plain = np.arange(6)
    scope, same = fold_repeated_nodes([0, 1], plain, counts)
    assert scope == (0, 1) and same.shape == (2, 3) and np.shares_memory(same, plain)
    scope, swapped = fold_repeated_nodes([1, 0], plain, counts, sort=True)
    assert scope == (0, 1) and swapped.tolist() == plain.reshape(3, 2).T.tolist()
    assert fold_repeated_nodes([], np.array([7]), counts)[1].tolist() == 7
