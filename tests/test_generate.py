"""The synthetic generator makes valid, feasible, contest-shaped instances, and the streaming writer
round-trips them exactly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from portfolio.evaluate import evaluate, min_usage_profile
from portfolio.generate import generate_problem
from portfolio.io import load_problem, problem_to_dict, write_problem
from portfolio.problem import FORBIDDEN, Problem

ARRAYS = (
    "strategy_offsets", "node_costs", "interval_node", "interval_start", "interval_end",
    "interval_usage_offsets", "interval_usages", "edge_node_offsets", "edge_nodes",
    "edge_cost_offsets", "edge_costs",
)


def assert_same(a: Problem, b: Problem) -> None:
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.name == b.name
    assert a.usage_limit == b.usage_limit


@pytest.fixture(scope="module")
def medium() -> Problem:
    return generate_problem(3000, 8, seed=7)


def test_deterministic_for_a_seed() -> None:
    assert_same(generate_problem(500, 6, seed=3), generate_problem(500, 6, seed=3))
    other = generate_problem(500, 6, seed=4)
    assert not np.array_equal(other.node_costs, generate_problem(500, 6, seed=3).node_costs)


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_write_load_round_trip(tmp_path: Path, medium: Problem, suffix: str) -> None:
    path = tmp_path / f"g{suffix}"
    write_problem(medium, path)
    assert_same(medium, load_problem(path))
    raw = path.read_bytes()
    text = gzip.decompress(raw) if suffix.endswith(".gz") else raw
    assert json.loads(text) == problem_to_dict(medium)


def test_min_usage_plan_is_feasible_and_finite(medium: Problem) -> None:
    plan = medium.min_usage_strategies
    result = evaluate(medium, plan)
    assert result.feasible and not result.has_forbidden
    # usage_limit = ceil(1.1 x the min-usage peak), as in the contest.
    peak = int(min_usage_profile(medium).max())
    assert medium.usage_limit == -(-11 * peak // 10)
    assert result.peak_usage == peak


def test_min_usage_strategy_is_never_forbidden(medium: Problem) -> None:
    """The least-usage strategy (forbidden or not) of every live node is an allowed one."""
    offsets = medium.strategy_offsets
    usage = medium.interval_usages.astype(np.float64)
    live = medium.interval_end > medium.interval_start
    usage[~np.repeat(live, medium.strategy_counts)] = 0.0
    least = np.minimum.reduceat(usage, offsets[:-1])
    allowed_usage = np.where(medium.node_costs == FORBIDDEN, np.inf, usage)
    assert np.array_equal(np.minimum.reduceat(allowed_usage, offsets[:-1]), least)


def test_contest_shape(medium: Problem) -> None:
    counts = medium.strategy_counts
    assert counts.min() == 1 and counts.max() <= 16 and 6 < counts.mean() < 11
    assert np.all(medium.edge_arity == 2)
    nodes = medium.edge_nodes.reshape(-1, 2)
    assert np.all(nodes[:, 0] != nodes[:, 1])
    assert 1.2 < medium.num_edges / medium.num_nodes < 1.6
    assert np.median(np.abs(nodes[:, 0] - nodes[:, 1])) < 20  # mostly local dataflow
    length = medium.interval_end - medium.interval_start
    assert 0.03 < np.mean(length == 0) < 0.15
    assert 0.05 < np.mean(length > medium.num_nodes // 10) < 0.3  # some long-lived tensors
    assert 0 < np.mean(medium.node_costs == FORBIDDEN) < 0.1
    assert 0.1 < np.mean(medium.edge_costs == FORBIDDEN) < 0.6
    assert medium.interval_usages.max() <= 10**8
    assert medium.node_costs[medium.node_costs < FORBIDDEN].max() <= 10**12


def test_edge_kinds_present(medium: Problem) -> None:
    zero = functional = 0
    for e in range(medium.num_edges):
        table = medium.edge_table(e)
        finite = table < FORBIDDEN
        zero += bool(np.all(table == 0))
        functional += bool((~finite).any() and np.all(finite.sum(axis=1) == 1))
    assert 0.05 < zero / medium.num_edges < 0.25
    assert 0.15 < functional / medium.num_edges < 0.45


def test_intervals_nest(medium: Problem) -> None:
    """Long live ranges nest (forward activation i lives until its backward use near n - i)."""
    start, end = medium.interval_start, medium.interval_end
    long = np.flatnonzero((end - start > medium.num_nodes // 4) & (start > 0) & (end < medium.num_nodes))
    order = long[np.argsort(start[long])]
    # Among nested ranges, a later start means an earlier (or equal) end for most pairs.
    assert np.mean(np.diff(end[order]) <= 0) > 0.6


def test_no_forbidden_instance_and_hyperedges(tmp_path: Path) -> None:
    problem = generate_problem(400, 4, seed=1, forbidden_fraction=0.0, hyperedge_fraction=0.2)
    assert not np.any(problem.node_costs == FORBIDDEN) and not np.any(problem.edge_costs == FORBIDDEN)
    assert set(np.unique(problem.edge_arity).tolist()) == {1, 2, 3}
    assert np.mean(problem.edge_arity == 2) > 0.8
    assert evaluate(problem, problem.min_usage_strategies).feasible
    write_problem(problem, tmp_path / "h.json")
    assert_same(problem, load_problem(tmp_path / "h.json"))


@pytest.mark.parametrize("nodes", [1, 2, 3])
def test_tiny_instances(nodes: int) -> None:
    problem = generate_problem(nodes, 3, seed=nodes, hyperedge_fraction=0.5)
    result = evaluate(problem, problem.min_usage_strategies)
    assert result.feasible and not result.has_forbidden


def test_writer_handles_odd_values_and_long_rows(tmp_path: Path) -> None:
    """Negative and extreme int64 values, a table spanning writer blocks, and an empty edge list."""
    extremes = np.array([0, 9, 10, 99, 100, 10**8 - 1, 10**8, 10**16, 10**18, 2**63 - 1, -1, -(2**63)])
    costs = np.concatenate([extremes, np.arange(400 - len(extremes))])
    edge_costs = np.random.default_rng(0).integers(-(2**63), 2**63 - 1, 400 * 400, endpoint=True)
    problem = Problem.from_contest_arrays(
        "odd \"name\" \u00e9", np.array([[0, 5], [3, 3]]), np.array([400, 400]),
        np.concatenate([costs, costs]), np.ones(800, dtype=np.int64), np.array([2]),
        np.array([0, 1]), edge_costs, None)
    path = tmp_path / "odd.json"
    write_problem(problem, path)
    assert json.loads(path.read_text()) == problem_to_dict(problem)

    empty = np.zeros(0, dtype=np.int64)
    bare = Problem.from_contest_arrays("bare", np.array([[0, 1]]), np.array([1]), np.array([0]),
                                       np.array([1]), empty, empty, empty, 5)
    write_problem(bare, path)
    assert json.loads(path.read_text()) == problem_to_dict(bare)
    assert_same(bare, load_problem(path))
