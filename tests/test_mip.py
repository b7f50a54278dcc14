"""The ``mip`` backend (issue 49): HiGHS on the standard ILP against brute force, honest bounds,
MIP starts, incumbents as they come, deterministic work limits, forbidden entries and big costs.

The brute force (tests/tiny.py) is independent of the library; its instances include
multi-interval nodes, time-varying capacity, forbidden entries, self-loops and hyperedges.
"""

from __future__ import annotations

import subprocess
import sys
import time

import highspy  # noqa: F401  -- a hard dependency: a broken install fails here, never skips
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portfolio import mip
from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate, min_usage_profile
from portfolio.exact import WorkLimit, build_exact_model, solve_with_engine
from portfolio.generate import generate_problem
from portfolio.presolve import presolve
from portfolio.problem import Capacity, Problem
from portfolio.work import CountingWork, Meter
from portfolio_plugins.mip import MipBackend
from tiny import F, assert_exact, brute, make_problem, optimum, scaled_costs, tiny

EXACT = settings(max_examples=50, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def solve(problem: Problem, limit: float = 20.0, hint=None, work=None, **options):
    found: list[np.ndarray] = []
    out = mip.MipEngine(**options).solve(problem, limit, hint, 1, 0, found.append, work=work)
    return out, found


def work_limit(units: float) -> WorkLimit:
    return WorkLimit(units, Meter(CountingWork(10**9), NullReporter(), time.monotonic() + 60))


# ------------------------------------------------------------------------------- exact on tiny
@pytest.mark.parametrize("linking,memory", [("marginal", "rows"), ("marginal", "lazy"),
                                            ("weak", "rows"), ("weak", "lazy")])
@EXACT
@given(problem=tiny(general=True))
def test_optimal_and_infeasible_claims_match_brute_force(linking, memory, problem):
    """Optimal cost equals brute force, and ``infeasible`` exactly when no plan without forbidden
    choices fits (forbidden entries, 10**18, never chosen); every reported plan is feasible."""
    out, found = solve(problem, linking=linking, memory=memory)
    assert_exact(problem, out, found)


@EXACT
@given(problem=tiny(general=True))
def test_lazy_rows_one_at_a_time_still_exact(problem):
    saved = mip.MemoryRows.BATCH
    mip.MemoryRows.BATCH = 1
    try:
        out, found = solve(problem, memory="lazy")
    finally:
        mip.MemoryRows.BATCH = saved
    assert_exact(problem, out, found)


@EXACT
@given(problem=tiny(general=True))
def test_maximal_points_keep_exactly_the_feasible_plans(problem):
    """A plan fits every kept memory point exactly when it fits the maximal ones."""
    md = build_exact_model(problem)
    if md.infeasible is not None or len(md.memory.rhs) == 0:
        return
    rows = mip.MemoryRows(md, np.arange(len(md.usable)))
    kept = mip.maximal_points(md)
    assert len(kept) >= 1
    for plan, _, forbidden, _ in brute(problem):
        if forbidden:
            continue
        over = rows.usage(np.array(plan)) > md.memory.rhs
        assert bool(over.any()) == bool(over[kept].any())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=True), st.integers(10**11, 10**12))
def test_costs_near_1e12_per_entry_stay_exact(problem, scale):
    """Costs of the contest's range: the power-of-two scale and the offset lose nothing, and the
    cost and bound are the brute force's."""
    big = scaled_costs(problem, scale)
    out, found = solve(big)
    assert_exact(big, out, found)


def test_sums_past_int64_are_exact_and_the_bound_safe():
    """Costs near 10**18 (below the forbidden marker) whose sums pass int64: the plan's cost is
    the exact Python-int optimum and the bound never above it."""
    near = F - 10**12
    n = 11
    costs = [[near - 3 * i, near - 7 * i - 1] for i in range(n)]
    edges = [[i, i + 1] for i in range(n - 1)]
    tables = [[near, 1 + i, 2, near - i] if i % 3 else [F, 6, 7, 8] for i in range(n - 1)]
    capacity = Capacity.uniform(n + 4)   # only four nodes may take their cheaper, larger strategy
    problem = make_problem(costs, [(0, 2)] * n, [[1, 2]] * n, edges, tables, capacity)
    best = optimum(problem)
    assert best is not None and best > 2**63
    out, found = solve(problem)
    assert out.plan is not None and evaluate(problem, out.plan).cost == out.cost
    assert out.cost == best
    assert out.bound is None or out.bound <= best
    assert found and all(evaluate(problem, p).feasible for p in found)


def test_forbidden_entries_have_no_column():
    """A forbidden node cost or edge pair is fixed to 0 by leaving its column out."""
    costs = [[F, 0, 4], [5, 0]]   # without the forbidden pair, [1, 1] would cost 0
    problem = make_problem(costs, [(0, 1), (0, 1)], [[1, 1, 1], [1, 1]], [[0, 1]],
                           [[0, 0, 9, F, 1, 1]])
    model = mip.build_mip(build_exact_model(problem))
    assert model.x_col[0] == -1
    assert model.stats["x_cols"] == 4
    out, _ = solve(problem)
    assert out.status == "optimal" and out.plan.tolist() == [2, 1]
    assert out.cost == out.bound == 5 == optimum(problem)


# ---------------------------------------------------------------------------- bounds, anytime
def _dense(nodes: int = 40) -> Problem:
    """A generated model HiGHS does not settle at its root: dense edges, memory at twice the
    least peak (40 nodes: optimal after 3 nodes and about 7 s of CPU)."""
    problem = generate_problem(nodes, 10, seed=3, forbidden_fraction=0.0, edges_per_node=4)
    return problem.with_limit(int(2 * min_usage_profile(problem).max()))


def _reference(problem: Problem) -> int:
    out, _ = solve(problem, limit=120)
    assert out.status == "optimal"
    return out.cost


@pytest.mark.parametrize("scale", [1, 10**4])
def test_bounds_of_unfinished_solves_never_exceed_the_optimum(scale):
    """Interrupted at several work limits (with ``scale``, edge costs up to ~2e13 per entry):
    every bound at most the optimum and below it while unproven, every cost at least it."""
    problem = _dense()
    problem = scaled_costs(problem, scale) if scale > 1 else problem
    best = _reference(problem)
    for units in (300, 1000):
        out, _ = solve(problem, work=work_limit(units))
        assert out.status == "feasible" and out.bound is not None
        assert out.bound < best <= out.cost, (units, out.bound, best, out.cost)


def test_improving_incumbents_arrive_as_they_are_found():
    problem = generate_problem(150, 6, seed=11)
    out, found = solve(problem, limit=30)
    assert found, "no incumbent reported"
    costs = [evaluate(problem, p).cost for p in found]
    assert all(evaluate(problem, p).feasible for p in found)
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    assert out.cost == costs[-1]


def test_a_warm_start_is_kept_when_nothing_better_is_found():
    """With no work after the build, the outcome is the hint itself; with a little, never worse."""
    problem = generate_problem(100, 5, seed=4)
    start = np.array(problem.min_usage_strategies)
    hint_cost = evaluate(problem, start).cost
    out, _ = solve(problem, hint=start, work=work_limit(0.001))
    assert out.status == "feasible" and out.cost == hint_cost
    assert np.array_equal(out.plan, start)
    out, _ = solve(problem, hint=start, work=work_limit(30))
    assert out.cost is not None and out.cost <= hint_cost


def test_a_run_hinted_with_the_optimum_ends_optimal_at_once():
    problem = generate_problem(60, 5, seed=5)
    first, _ = solve(problem, limit=30)
    assert first.status == "optimal"
    best = first.cost
    t0 = time.monotonic()
    result = solve_with_engine(mip.MipEngine(), problem, time.time() + 30, 0, first.plan,
                               NullReporter(), threads=1)
    assert result.status is Status.OPTIMAL
    assert evaluate(problem, result.solution).cost == best == result.lower_bound
    assert time.monotonic() - t0 < 10


def test_deterministic_work_limits_repeat_exactly():
    """The same work gives the same plan, cost, bound, incumbents and counts, whatever the time:
    here a dense model whose root HiGHS is interrupted in (at a callback fixed by the counts)."""
    problem = _dense(80)
    runs = [solve(problem, limit=120, work=work_limit(800)) for _ in range(2)]
    (a, fa), (b, fb) = runs
    assert a.status == "feasible" and a.stats["rounds"] == 1   # interrupted, not proven
    assert a.status == b.status and a.cost == b.cost and a.bound == b.bound
    assert np.array_equal(a.plan, b.plan)
    assert [p.tolist() for p in fa] == [p.tolist() for p in fb]
    assert (a.stats["nodes"], a.stats["lp_iterations"]) == (b.stats["nodes"],
                                                           b.stats["lp_iterations"])


def test_no_run_starts_when_the_work_cannot_pay_its_root():
    from portfolio.mip import pace

    problem = generate_problem(80, 10, seed=3, forbidden_fraction=0.0, edges_per_node=4)
    model = mip.build_mip(build_exact_model(problem))
    build = pace.BUILD_UNITS_PER_TERM * mip.estimate_size(problem).terms
    root = pace.ROOT_UNITS_PER_NONZERO * model.stats["nonzeros"]
    start = np.array(problem.min_usage_strategies)
    out, found = solve(problem, hint=start, work=work_limit(build + 0.9 * root))
    assert out.status == "feasible" and np.array_equal(out.plan, start) and not found
    assert out.stats["rounds"] == 0
    out, _ = solve(problem, hint=start, work=work_limit(build + 1.1 * root))
    assert out.stats["rounds"] == 1


def test_the_size_guard_says_too_big():
    problem = generate_problem(400, 6, seed=1)
    small = mip.BUDGET.__class__(variables=500, constraints=500, terms=3000)
    out, found = solve(problem, budget=small)
    assert out.status == "too-big" and out.plan is None and not found


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="linking"):
        mip.MipEngine(linking="loose")
    with pytest.raises(ValueError, match="memory"):
        mip.MipEngine(memory="never")


# --------------------------------------------------------------------------------- backend
def test_highs_banner_never_reaches_stdout():
    """HiGHS prints a banner on stdout when a process makes its first solver object."""
    code = "from portfolio.mip.engine import new_highs; new_highs(); print('done')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "done\n"


def test_backend_on_the_bundled_example(bundled_example):
    from portfolio.io import load_problem

    problem = load_problem(bundled_example)
    pre = presolve(problem)
    result = MipBackend().solve(pre.reduced, time.time() + 20, 0, None, NullReporter())
    assert result.status is Status.OPTIMAL
    plan = pre.expand(result.solution)
    assert evaluate(problem, plan).cost == result.lower_bound == optimum(problem)


def test_cli_mip_solves_the_bundled_example_optimally(bundled_example, portfolio_cli):
    """End to end through the runner, presolved, its claim and plan checked."""
    import json

    from portfolio.io import load_problem

    best = optimum(load_problem(bundled_example))
    out = portfolio_cli.run("solve", bundled_example, "--backends", "mip", "-t", "30", "--json",
                            "-q", "--no-exhaustive", timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["cost"] == best
    row = [b for b in doc["backends"] if b["backend"] == "mip"][0]
    assert row["status"] == "optimal" and row["lower_bound"] == best


def test_the_backend_is_not_in_the_default_set_and_declares_its_engine():
    meta = MipBackend.meta
    assert meta.default is False and meta.deterministic
    assert "highspy" in meta.engines and meta.requirement.startswith("highspy")
    ok, why = MipBackend().available()
    assert ok, why


def test_named_with_others_it_is_in_the_tune_space(bundled_example):
    """Its declared options and its on/off switch are dimensions of `portfolio tune -b ...,mip`,
    deterministic mode included."""
    from portfolio.tuning.settings import TuneSettings, resolve

    for deterministic in (False, True):
        resolved = resolve(TuneSettings(files=(str(bundled_example),), time_limit=10.0,
                                        backends=["greedy", "mip"], deterministic=deterministic))
        keys = {p.key for p in resolved.space.params}
        assert {"mip.linking", "mip.memory", "mip.presolve", "mip.heuristic_effort"} <= keys
        assert "on:mip" in {p.key for p in resolved.space.switch_params()}


def test_an_empty_problem_is_settled_without_highs():
    out, found = solve(make_problem([], [], [], [], []))
    assert out.status == "optimal" and out.plan.tolist() == [] and out.cost == out.bound == 0
