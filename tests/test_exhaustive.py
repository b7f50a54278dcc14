"""Scoring every plan of a tiny instance (portfolio/exhaustive.py) and the runner's use of it: the
optimum against the independent brute force of tests/tiny.py, refusals where int64 could wrap or
the space is too large, and a run that the runner settles before any backend starts."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import bundled_example_path
from portfolio.backend import Backend, Status
from portfolio.evaluate import evaluate
from portfolio.exhaustive import MAX_PLANS, enumerate_optimum, plan_count
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from tiny import F, brute, make_problem, optimum, scaled_costs, tiny

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(problem) -> None:
    found = enumerate_optimum(problem)
    assert found is not None
    scored = brute(problem)
    assert found.plans == len(scored) == plan_count(problem)
    assert found.feasible_plans == sum(1 for *_, feasible in scored if feasible)
    best = optimum(problem)
    if best is None:
        assert found.plan is None
        return
    ev = evaluate(problem, found.plan)
    assert ev.feasible and not ev.has_forbidden
    assert ev.cost == best


@PROPERTY
@given(tiny())
def test_the_optimum_is_the_brute_forces(problem):
    _check(problem)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from([10**9, 10**12, 3 * 10**13]))
def test_contest_magnitudes_stay_exact(problem, scale):
    """Costs near the contest's 1e13 with distinct low digits: a float sum would lose them."""
    _check(scaled_costs(problem, scale))


def test_a_long_memory_check_is_refused():
    """2**12 plans, but 200 intervals at 200 time points: small arrays, a slow memory check."""
    from portfolio.exhaustive import MAX_CELLS, MAX_PRODUCTS

    n, extra = 12, 188
    costs = [[1, 2]] * n + [[0]] * extra
    intervals = [(t, t + 1) for t in range(n + extra)]
    p = make_problem(costs, intervals, [[1, 1]] * n + [[1]] * extra, [], [])
    assert 2**n * (n + extra) * (n + extra) > MAX_PRODUCTS
    assert 2**n * 3 * (n + extra) + 2**n <= MAX_CELLS  # refused for the product alone
    assert enumerate_optimum(p) is None


def test_sums_that_could_reach_the_forbidden_value_are_refused():
    # each node's cheapest finite cost 4e17: three of them would pass 10**18
    p = make_problem([[4 * 10**17, F]] * 3, [(0, 1)] * 3, [[1, 1]] * 3, [], [])
    assert enumerate_optimum(p) is None


def test_a_large_space_is_refused():
    n = 16  # 2**16 plans > MAX_PLANS
    assert 2**n > MAX_PLANS
    p = make_problem([[1, 2]] * n, [(0, 1)] * n, [[1, 1]] * n, [], [])
    assert enumerate_optimum(p) is None
    assert enumerate_optimum(p, max_plans=2**n).plan.tolist() == [0] * n


def test_no_plan_fits_memory():
    from portfolio.problem import Capacity

    p = make_problem([[1, 2], [3]], [(0, 2), (1, 3)], [[5, 6], [4]], [[0, 1]], [[1, 2]],
                     capacity=Capacity.uniform(8))
    found = enumerate_optimum(p)
    assert found.plan is None and found.feasible_plans == 0


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example_path())


class Unwanted(Backend):
    """A backend that must never start: it would fail the run loudly if it did."""

    name = "unwanted"

    def solve(self, problem, deadline, seed, warm_start, report):
        raise AssertionError("a settled run started a backend")


def test_a_settled_run_starts_no_backend(example):
    result = run_portfolio(example, [Unwanted()], RunOptions(time_limit=20.0, exhaustive=True))
    assert result.winner == "enumeration"
    assert result.cost == optimum(example) == 305
    assert result.proof.startswith("proven optimal by enumeration")
    assert result.runs["unwanted"].status is Status.PENDING
    assert "settled" in result.runs["unwanted"].note
    assert result.elapsed < 2.0


def test_without_exhaustive_the_backends_run(example):
    result = run_portfolio(example, [Unwanted()], RunOptions(time_limit=5.0))
    assert result.runs["unwanted"].status is Status.ERROR  # it ran (and raised)


def test_an_infeasible_tiny_instance_is_proven_so(tmp_path, portfolio_cli):
    from portfolio.io import write_problem
    from portfolio.problem import Capacity

    p = make_problem([[1, 2], [3]], [(0, 2), (1, 3)], [[5, 6], [4]], [[0, 1]], [[1, 2]],
                     capacity=Capacity.uniform(8))
    result = run_portfolio(p, [Unwanted()], RunOptions(time_limit=5.0, exhaustive=True))
    assert result.solution is None
    assert result.infeasible_proven_by.startswith("enumeration")
    path = tmp_path / "tight.json"
    write_problem(p, path)
    done = portfolio_cli.run("solve", path, "-t", "5")
    assert done.returncode == 1 and done.stdout.strip().splitlines()[-1] == "[]"
    assert "enumeration" in done.stderr


def test_the_cli_settles_the_example_fast(portfolio_cli):
    done = portfolio_cli.run("solve", "--json", "-q")
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert doc["cost"] == 305 and doc["winner"] == "enumeration"
    assert doc["elapsed"] < 2.0  # about 0.4 s; the speed figure itself is in docs/benchmarks.md
    slow = portfolio_cli.run("solve", "--json", "-q", "--no-exhaustive", "-b", "minusage", "-t", "3")
    assert json.loads(slow.stdout)["winner"] != "enumeration"
