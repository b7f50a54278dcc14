"""The ``cpsat`` backend (issue 10): exact against brute force, honest bounds, hints, LNS windows.

The brute force (tests/tiny.py) is independent of the library; every instance family includes
multi-interval nodes, time-varying capacity, forbidden entries, self-loops and hyperedges.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import ortools  # noqa: F401  -- a hard dependency: a broken install fails here, never skips
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portfolio import cpsat
from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.exact import ModelSize, solve_with_engine
from portfolio.generate import generate_problem
from portfolio.exact.lns import LnsParams, build_window, run_lns
from portfolio.presolve import presolve
from portfolio.problem import Problem
from portfolio_plugins.cpsat import CpSatBackend
from tiny import assert_exact, brute, make_problem, optimum, scaled_costs, tiny

EXACT = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def solve(problem: Problem, memory: str = "auto", limit: float = 20.0, hint=None):
    found: list[np.ndarray] = []
    out = cpsat.CpSatEngine(memory=memory).solve(problem, limit, hint, 1, 0, found.append)
    return out, found


def check_against_brute(problem: Problem, memory: str) -> None:
    out, found = solve(problem, memory)
    assert_exact(problem, out, found)


@pytest.mark.parametrize("memory", ["rows", "lazy", "sweep", "cumulative"])
@EXACT
@given(problem=tiny(general=True))
def test_optimal_matches_brute_force(memory, problem):
    check_against_brute(problem, memory)


@EXACT
@given(problem=tiny(general=True))
def test_lazy_rows_one_at_a_time_still_exact(problem):
    """With one row per round, the lazy loop must add violated rows until the plan fits."""
    saved = cpsat.LazyRows.BATCH
    cpsat.LazyRows.BATCH = 1
    try:
        check_against_brute(problem, "lazy")
    finally:
        cpsat.LazyRows.BATCH = saved


@pytest.mark.parametrize("memory", ["rows", "lazy", "sweep", "cumulative"])
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny(general=True), data=st.data())
def test_any_complete_hint_keeps_the_answer_exact(memory, problem, data):
    """The hint gives every variable a value (entries, usages, running sums), from any plan: one
    over memory or with a forbidden choice included; the optimum must survive it."""
    plans = [plan for plan, _, _, _ in brute(problem)]
    hint = np.array(data.draw(st.sampled_from(plans)), dtype=np.int64)
    out, found = solve(problem, memory, hint=hint)
    assert_exact(problem, out, found)


@EXACT
@given(tiny(general=False))
def test_optimal_matches_brute_force_on_contest_shapes(problem):
    check_against_brute(problem, "auto")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True), st.integers(10**12, 10**13))
def test_costs_at_1e13_scale_stay_exact(problem, scale):
    """Node and edge costs near 1e13 (the contest's range) are neither rounded nor scaled."""
    big = scaled_costs(problem, scale)
    out, found = solve(big)
    assert_exact(big, out, found)


def test_objective_beyond_int64_is_refused_not_rounded():
    costs = [[2**61, 2**61 + 1], [2**61, 3], [2**61, 2**61]]
    problem = make_problem(costs, [(0, 1)] * 3, [[1, 1]] * 3, [], [])
    out, found = solve(problem)
    assert out.status == "unknown" and "int64" in out.note
    assert out.plan is None and out.bound is None and not found


# ------------------------------------------------------------------------------------------ backend
def test_backend_on_the_bundled_example(bundled_example):
    from portfolio.io import load_problem

    problem = load_problem(bundled_example)
    pre = presolve(problem)
    backend = CpSatBackend()
    result = backend.solve(pre.reduced, time.time() + 20, 0, None, NullReporter())
    assert result.status is Status.OPTIMAL
    plan = pre.expand(result.solution)
    assert evaluate(problem, plan).cost == result.lower_bound == brute_best(problem)


def brute_best(problem: Problem) -> int:
    best = optimum(problem)
    assert best is not None
    return best


def test_a_hint_is_taken_as_the_first_solution():
    """The hint is complete and feasible, so CP-SAT's first solution is the hint (or better: its
    presolve may already improve on it)."""
    problem = generate_problem(60, 4, seed=3)
    start = np.array(problem.min_usage_strategies)
    hint_cost = evaluate(problem, start).cost
    out, found = solve(problem, limit=10, hint=start)
    assert found, "no solution reported"
    assert out.stats["first_cost"] <= hint_cost
    assert evaluate(problem, found[0]).cost < hint_cost
    assert out.cost is not None and out.cost <= hint_cost


def test_a_run_hinted_with_the_optimum_ends_optimal_at_once():
    problem = generate_problem(40, 4, seed=5)
    first, _ = solve(problem, limit=30)
    assert first.status == "optimal"
    t0 = time.monotonic()
    result = solve_with_engine(cpsat.CpSatEngine(), problem, time.time() + 30, 0, first.plan,
                               NullReporter(), threads=1)
    assert result.status is Status.OPTIMAL
    assert evaluate(problem, result.solution).cost == first.cost == result.lower_bound
    assert time.monotonic() - t0 < 10


def test_size_guard_switches_to_lns_windows():
    problem = generate_problem(400, 6, seed=1)
    small = ModelSize(variables=500, constraints=500, terms=3000)
    engine = cpsat.CpSatEngine(budget=small)
    assert not engine.estimate(problem).within(small)
    out = engine.solve(problem, 5, None, 1, 0, lambda plan: None)
    assert out.status == "too-big" and out.plan is None
    reporter = NullReporter()
    result = solve_with_engine(engine, problem, time.time() + 6, 0, None, reporter, threads=1,
                               lns_params=LnsParams(initial_size=15, window_time=0.5))
    assert "too big" in result.note and "LNS" in result.note
    assert result.status is Status.FEASIBLE
    assert evaluate(problem, result.solution).feasible


def test_missing_ortools_makes_the_backend_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "ortools", None)
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    ok, why = CpSatBackend().available()
    assert not ok
    assert "pip install 'ortools>=9.10'" in why and "comes with iopddl-portfolio" in why


# ------------------------------------------------------------------------------------------ windows
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True), st.data())
def test_window_problem_costs_equal_full_costs(problem, data):
    """Every window plan costs (and fits) in the window problem exactly as the embedded plan does
    in the full problem."""
    scored = brute(problem)
    clean = [plan for plan, _, forbidden, feasible in scored if feasible and not forbidden]
    if not clean:
        return
    plan = np.array(data.draw(st.sampled_from(clean)), dtype=np.int64)
    n = problem.num_nodes
    nodes = sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n))))
    window = build_window(problem, plan, np.array(nodes))
    for wplan, _, forbidden, _ in brute(window.problem):
        full = window.embed(plan, np.array(wplan))
        a, b = evaluate(problem, full), evaluate(window.problem, wplan)
        assert a.feasible == b.feasible, (nodes, wplan)
        assert a.has_forbidden == b.has_forbidden
        if not a.has_forbidden:
            assert a.cost == b.cost


def test_lns_reports_only_better_feasible_plans():
    problem = generate_problem(300, 6, seed=7)
    start = np.array(problem.min_usage_strategies)
    start_cost = evaluate(problem, start).cost
    engine = cpsat.CpSatEngine()
    seen: list[tuple[np.ndarray, int]] = []

    def window(sub, limit, hint):
        return engine.solve(sub, limit, hint, 1, 0, lambda plan: None)

    plan, cost, stats = run_lns(problem, start, time.monotonic() + 8, window,
                                lambda p, c: seen.append((p.copy(), c)), seed=1,
                                params=LnsParams(initial_size=30, window_time=0.5))
    assert stats.windows > 0
    previous = start_cost
    for p, c in seen:
        ev = evaluate(problem, p)
        assert ev.feasible and not ev.has_forbidden and ev.cost == c < previous
        previous = c
    assert cost == previous == evaluate(problem, plan).cost
    assert cost < start_cost, "60 windows should improve the least-memory plan"


def test_a_bound_from_an_unfinished_solve_stays_below_the_optimum():
    problem = generate_problem(150, 6, seed=11)
    short, _ = solve(problem, limit=0.3)
    full, _ = solve(problem, limit=60)
    assert full.status == "optimal"
    if short.bound is not None:
        assert short.bound <= full.cost
    if short.cost is not None:
        assert short.cost >= full.cost


def test_contest_sized_instances_exceed_the_default_budget():
    problem = generate_problem(20000, 8, seed=2)
    assert not cpsat.CpSatEngine().estimate(problem).within(cpsat.BUDGET)


def test_cli_cpsat_solves_the_bundled_example_optimally(bundled_example, portfolio_cli):
    """End to end through the runner, on the original (unpresolved) example."""
    import json

    from portfolio.io import load_problem

    best = optimum(load_problem(bundled_example))
    out = portfolio_cli.run("solve", bundled_example, "--backends", "cpsat", "--no-presolve",
                            "-t", "30", "--json", "-q", "--no-exhaustive", timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["cost"] == best
    row = [b for b in doc["backends"] if b["backend"] == "cpsat"][0]
    assert row["status"] == "optimal" and row["lower_bound"] == best


def test_backends_lists_cpsat_unavailable_with_the_install_command_when_ortools_is_missing(
        tmp_path, portfolio_cli):
    """A missing ortools shows in `portfolio backends` with the extra that installs it, verbatim
    (the table once swallowed "[cpsat]" as rich markup)."""
    import json
    import re

    blocker = tmp_path / "ortools"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('ortools blocked for this test')\n")
    blocked = portfolio_cli.configured(path=[tmp_path])
    doc = json.loads(blocked.run("backends", "--json").stdout)
    row = [b for b in doc["backends"] if b["name"] == "cpsat"][0]
    assert row["available"] is False
    assert "ortools is not installed" in row["reason"] and "pip install 'ortools" in row["reason"]
    table = blocked.run("backends")
    assert table.returncode == 0, table.stderr
    flat = re.sub(r"[\s│┃|]", "", table.stdout + table.stderr)
    assert "pipinstall'ortools>=9.10'" in flat


def test_on_a_cold_cache_the_driver_skips_the_kernel_polish_and_starts_at_once(monkeypatch,
                                                                             tmp_path):
    """The exact backends never compile: no ``prepare`` (the runner starts them at once) and, with
    the kernels not in the cache, no polish; the engine starts from the forbidden-free plan."""
    from portfolio.runner.worker import has_prepare

    assert not has_prepare(CpSatBackend())
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty-cache"))
    problem = generate_problem(120, 4, seed=2)
    reporter = NullReporter()
    result = solve_with_engine(cpsat.CpSatEngine(), problem, time.time() + 20, 0, None, reporter,
                               threads=1)
    assert "polish skipped" in result.note
    assert [level for level, _ in reporter.demands] == ["low"]   # the compiling workers first
    notes = [n for _, _, n in reporter.reports]
    assert notes[0] == "least-memory plan avoiding forbidden entries"
    assert "local-search kernels" not in notes
    assert evaluate(problem, result.solution).feasible
