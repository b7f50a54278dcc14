"""The evaluator against an independent, slow, pure-Python reference (conftest.reference_*)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import (
    FORBIDDEN,
    INT64_MAX,
    all_plans,
    instance_and_plan,
    instances,
    reference_cost,
    reference_forbidden,
    reference_memory,
)
from portfolio.evaluate import SolutionError, delta_cost, evaluate, exact_sum, usage_profile
from portfolio.io import load_problem, parse_problem, problem_to_dict, write_problem
from portfolio.io.read import _parse_careful

INT64_MIN = -(2**63)


def dumps(doc: dict, indent: int | None) -> bytes:
    return json.dumps(doc, indent=indent).encode()


# ------------------------------------------------------------------------------------------ properties
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance_and_plan(), st.sampled_from([None, 1]))
def test_evaluate_matches_reference(case, indent):
    doc, plan = case
    problem = parse_problem(dumps(doc, indent), "hypothesis.json")
    ev = evaluate(problem, plan)
    mem = reference_memory(doc, plan)

    assert type(ev.cost) is int
    assert ev.cost == reference_cost(doc, plan)
    assert ev.feasible == mem["feasible"]
    assert ev.peak_usage == mem["peak"]
    if mem["peak"] > 0:
        assert ev.peak_time == mem["peak_time"]
    assert ev.margin == mem["margin"]
    assert ev.usage_limit == doc["problem"].get("usage_limit")
    assert ev.first_violation_time == mem["first_violation"]
    assert ev.violated_time_points == mem["violated_starts"]
    assert (ev.forbidden_node_choices, ev.forbidden_edge_entries) == reference_forbidden(doc, plan)


@settings(max_examples=100, deadline=None)
@given(instances(), st.sampled_from([None, 2]))
def test_loaded_problem_round_trips(doc, indent):
    """What the loader builds is exactly the document (both the fast scanner and json.loads path)."""
    data = dumps(doc, indent)
    problem = parse_problem(data, "x.json")
    assert problem_to_dict(problem) == doc
    assert problem.num_nodes == len(doc["problem"]["nodes"]["costs"])
    assert problem.num_edges == len(doc["problem"]["edges"]["nodes"])
    careful = _parse_careful("x.json", data)
    for key in ("costs", "usages", "intervals", "edge_nodes", "edge_costs"):
        assert careful[key].tolist() == {
            "costs": problem.node_costs, "usages": problem.interval_usages,
            "intervals": np.stack([problem.interval_start, problem.interval_end], axis=1).ravel(),
            "edge_nodes": problem.edge_nodes, "edge_costs": problem.edge_costs,
        }[key].tolist()


@settings(max_examples=60, deadline=None)
@given(instances(), st.sampled_from(["p.json", "p.json.gz"]))
def test_write_problem_round_trips(doc, name):
    """write_problem then load_problem gives back the same document (plain and gzip)."""
    problem = parse_problem(dumps(doc, None), "x.json")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        write_problem(problem, path)
        if name.endswith(".gz"):
            assert path.read_bytes()[:2] == b"\x1f\x8b"
        assert problem_to_dict(load_problem(path)) == doc


@settings(max_examples=150, deadline=None)
@given(instance_and_plan(), st.data())
def test_delta_cost_matches_full_reevaluation(case, data):
    doc, plan = case
    problem = parse_problem(dumps(doc, None))
    sol = np.array(plan, dtype=np.int64)
    for _ in range(3):
        node = data.draw(st.integers(0, len(plan) - 1), label="node")
        strategy = data.draw(st.integers(0, int(problem.strategy_counts[node]) - 1), label="strategy")
        moved = list(plan)
        moved[node] = strategy
        expected = reference_cost(doc, moved) - reference_cost(doc, plan)
        got = delta_cost(problem, sol, node, strategy)
        assert type(got) is int
        assert got == expected
        assert got == evaluate(problem, moved).cost - evaluate(problem, plan).cost
        assert sol.tolist() == plan  # delta_cost does not move the node itself


@settings(max_examples=100, deadline=None)
@given(instance_and_plan())
def test_usage_profile_is_the_usage_at_each_time_point(case):
    doc, plan = case
    problem = parse_problem(dumps(doc, None))
    nodes = doc["problem"]["nodes"]
    expected = [
        sum(nodes["usages"][i][s] for i, s in enumerate(plan)
            if nodes["intervals"][i][0] <= t < nodes["intervals"][i][1])
        for t in problem.time_points.tolist()
    ]
    assert [int(x) for x in usage_profile(problem, np.array(plan))] == expected


# ------------------------------------------------------------------------------------------ examples
def test_bundled_example_brute_force(bundled_example, bundled_doc):
    problem = load_problem(bundled_example)
    counts = problem.strategy_counts.tolist()
    plans = list(all_plans(counts))
    assert len(plans) == math.prod(counts) == 432

    best_feasible: list[tuple[int, list[int]]] = []
    best_any = None
    for plan in plans:
        ev = evaluate(problem, plan)
        assert ev.cost == reference_cost(bundled_doc, plan)
        assert ev.feasible == reference_memory(bundled_doc, plan)["feasible"]
        if best_any is None or ev.cost < best_any[0]:
            best_any = (ev.cost, plan, ev.feasible)
        if ev.feasible:
            best_feasible.append((ev.cost, plan))
    best_feasible.sort()
    assert best_feasible[0] == (305, [0, 0, 0, 2, 0, 0, 1, 1])
    assert best_feasible[1][0] > 305, "the optimum is unique"
    assert best_any[0] == 250 and best_any[2] is False  # the unconstrained optimum breaks the limit


@pytest.mark.parametrize(
    "plan, cost, feasible, peak",
    [
        ([0, 0, 2, 1, 0], 445, True, None),
        ([0, 0, 2, 0, 0], 545, None, None),
        ([0, 1, 1, 1, 0], None, False, 55),
    ],
)
def test_contest_example_facts(contest_example, plan, cost, feasible, peak):
    problem = load_problem(contest_example)
    ev = evaluate(problem, plan)
    assert problem.usage_limit == 50
    if cost is not None:
        assert ev.cost == cost
    if feasible is not None:
        assert ev.feasible is feasible
    if peak is not None:
        assert ev.peak_usage == peak
        assert ev.margin == 50 - peak
        assert ev.violated_time_points >= 1
        assert ev.first_violation_time is not None


# ------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "plan, fragments",
    [
        ([0] * 7, ["7 entries", "8 nodes"]),
        ([0] * 9, ["9 entries", "8 nodes"]),
        ([], ["0 entries", "8 nodes"]),
        ([0, 0, 0, -1, 0, 0, 0, 0], ["solution[3]", "-1"]),
        ([0, 0, 0, 0, 0, 2, 0, 0], ["solution[5]", "2", "out of range"]),
        ([0, 0, 1, 0, 0, 0, 0, 0], ["solution[2]", "out of range"]),  # node 2 has one strategy
        pytest.param([0, 0, 0, 0, 0, 0, 0, 2**63], ["solution[7]", "out of range"],
                     marks=pytest.mark.filterwarnings("ignore::RuntimeWarning")),
        pytest.param([0, 0, 0, 0, 0, 0, 0, 2**63], ["solution[7] = 9223372036854775808"], marks=[
            pytest.mark.filterwarnings("ignore::RuntimeWarning")]),
        ([0, 0, 1.5, 0, 0, 0, 0, 0], ["solution[2]", "1.5"]),
        ([0, None, 0, 0, 0, 0, 0, 0], ["solution[1]"]),
        ([[0, 1], [0]], ["flat"]),
        pytest.param([0, 0, 0, 0, "a", 0, 0, 0], ["solution[4]"]),
        pytest.param([0, 0, 0, 0, 0, 0, -(2**63) - 1, 0], ["solution[6]"]),
        pytest.param([0, 0, 0, 0, 0, 0, 0, 2**64], ["solution[7]"]),
        pytest.param([0, True, 0, 0, 0, 0, 0, 0], ["solution[1]"]),
    ],
)
def test_solution_errors_name_the_index(bundled_example, plan, fragments):
    problem = load_problem(bundled_example)
    with pytest.raises(SolutionError) as info:
        evaluate(problem, plan)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_numpy_solutions_are_accepted(bundled_example):
    problem = load_problem(bundled_example)
    plan = [0, 0, 0, 2, 0, 0, 1, 1]
    for arr in (np.array(plan, dtype=np.int32), np.array(plan, dtype=np.uint8), tuple(plan)):
        assert evaluate(problem, arr).cost == 305


# ------------------------------------------------------------------------------------------ exact_sum
@pytest.mark.parametrize(
    "values",
    [
        [],
        [INT64_MAX] * 5,
        [INT64_MAX, INT64_MAX, 1],
        [INT64_MIN] * 4,
        [INT64_MIN, INT64_MAX, INT64_MIN, -1],
        [-1, -2, -(2**32), -(2**32) - 1, 2**32 - 1],
        [FORBIDDEN] * 1000,
        [FORBIDDEN] * 10 + [-5] * 3,
    ],
)
def test_exact_sum_cases(values):
    got = exact_sum(np.array(values, dtype=np.int64))
    assert type(got) is int
    assert got == sum(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(INT64_MIN, INT64_MAX), max_size=60))
def test_exact_sum_property(values):
    assert exact_sum(np.array(values, dtype=np.int64)) == sum(values)


def test_cost_beyond_int64_is_exact(fresh_bundled_doc):
    """Several forbidden entries in one plan sum past int64 without wrapping."""
    doc = fresh_bundled_doc
    for row in doc["problem"]["nodes"]["costs"]:
        row[0] = FORBIDDEN
    for row in doc["problem"]["edges"]["costs"]:
        row[0] = FORBIDDEN
    problem = parse_problem(json.dumps(doc).encode())
    plan = [0] * 8
    ev = evaluate(problem, plan)
    assert ev.cost == reference_cost(doc, plan) > INT64_MAX
    assert ev.forbidden_node_choices == 8
    assert ev.forbidden_edge_entries == 9
    assert ev.has_forbidden
