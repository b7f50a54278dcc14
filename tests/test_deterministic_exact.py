"""The exact backends ``cpsat`` and ``maxsat`` in deterministic mode (issue 31), and their warm starts.

Deterministic mode is driven in-process: a ``NullReporter`` whose ``work`` is a ``CountingWork``
plays the runner (its ``on_exchange`` hands a plan at a point). Same problem, seed and work: the
same plan, bound and exchange points, also with a CPU hog on the other core.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import ortools  # noqa: F401  -- hard dependencies: a broken install fails here, never skips
import pysat  # noqa: F401
import pytest

from portfolio import cpsat, maxsat
from portfolio.backend import NullReporter, Status, declared
from portfolio.evaluate import evaluate
from portfolio.exact import ModelSize, WorkLimit, solve_with_engine
from portfolio.exact.lns import MIN_WINDOW_UNITS, LnsParams
from portfolio.generate import generate_problem
from portfolio.testing import cpu_hog
from portfolio.work import CountingWork, Meter
from portfolio_plugins.cpsat import CpSatBackend
from portfolio_plugins.maxsat import MaxSatBackend

ENGINES = {"cpsat": cpsat.CpSatEngine, "maxsat": maxsat.MaxSatEngine}
SMALL_BUDGET = {"cpsat": {"budget": ModelSize(500, 500, 3000)},
                "maxsat": {"limit": ModelSize(500, 1000, 3000)}}
"""Engine budgets that force LNS windows on the mid-size instance."""
WINDOW_UNITS = 400.0
LNS = LnsParams(initial_size=30, window_units=WINDOW_UNITS)


class Runner(NullReporter):
    """Plays the runner: counts work, remembers the exchange points, hands ``plan`` from point
    ``at`` on (``best()`` is then that plan, as the runner's incumbent of the point)."""

    def __init__(self, total: int, exchange: int = 500, plan: Optional[np.ndarray] = None,
                 at: int = 1) -> None:
        super().__init__()
        self.handed: Optional[np.ndarray] = None
        self.asked_after_exhaustion = 0
        self.work = CountingWork(total, exchange, on_exchange=self._point)
        self._plan, self._at = plan, at

    def _point(self, k: int) -> None:
        if self._plan is not None and k >= self._at:
            self.handed = self._plan

    def best(self) -> Optional[np.ndarray]:
        return self.handed


class Requested(CountingWork):
    """Counts every unit asked for, past the total too (CountingWork caps what it records)."""

    def __init__(self, total: int, exchange: int = 500) -> None:
        super().__init__(total, exchange)
        self.requested = 0.0
        self.calls_after_false = 0

    def spend(self, units: float) -> bool:
        if self.spent() >= self.total:
            self.calls_after_false += 1
        self.requested += units
        return super().spend(units)


def run(name: str, problem, total: int, lns_mode: bool = False, warm_start=None,
        report: Optional[Runner] = None, seed: int = 3):
    engine = ENGINES[name](**(SMALL_BUDGET[name] if lns_mode else {}))
    report = report or Runner(total)
    result = solve_with_engine(engine, problem, time.time() + 300, seed, warm_start, report,
                               lns_params=LNS)
    return result, report


def fingerprint(result, report: Runner) -> tuple:
    plan = None if result.solution is None else tuple(result.solution.tolist())
    return (result.status, plan, result.lower_bound, tuple(report.work.points),
            report.work.spent())


@pytest.mark.parametrize("backend", [CpSatBackend, MaxSatBackend])
def test_both_exact_backends_declare_deterministic_mode(backend):
    meta, problems = declared(backend())
    assert meta.deterministic and not problems
    assert meta.engines[0] in ("ortools", "python-sat")    # the other fields are kept


# ------------------------------------------------------------------------------------------ same answer
@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
def test_a_small_instance_is_proven_the_same_way_twice_even_under_load(name):
    problem = generate_problem(60, 4, seed=3)
    first, report = run(name, problem, 20_000)
    with cpu_hog():
        second, again = run(name, problem, 20_000)
    assert first.status is Status.OPTIMAL
    assert first.lower_bound == evaluate(problem, first.solution).cost
    assert fingerprint(first, report) == fingerprint(second, again)
    assert 0 < report.work.spent() < 20_000          # the proof ended the run, work was counted


@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
def test_lns_windows_give_the_same_plan_and_points_twice_even_under_load(name):
    problem = generate_problem(300, 6, seed=1)
    first, report = run(name, problem, 2500, lns_mode=True)
    with cpu_hog():
        second, again = run(name, problem, 2500, lns_mode=True)
    assert "LNS" in first.note and "too big" in first.note
    assert first.status is Status.FEASIBLE
    assert fingerprint(first, report) == fingerprint(second, again)
    spent = report.work.spent()
    assert spent > 2400 and report.work.points == list(range(1, spent // 500 + 1))
    start = evaluate(problem, np.array(problem.min_usage_strategies)).cost
    assert evaluate(problem, first.solution).cost < start


@pytest.fixture(scope="module")
def presolved_b(bench_dir):
    from portfolio.io import load_problem
    from portfolio.presolve import presolve

    return presolve(load_problem(bench_dir / "asplos-2025-iopddl-B.json.gz")).reduced


@pytest.fixture(scope="module")
def local_search_plan(presolved_b):
    """A strong plan of presolved B (2 s of the kernels, computed once: both runs get the same)."""
    from portfolio.exact.driver import kernel_polish

    return kernel_polish(presolved_b, time.monotonic() + 2, 0, None)


@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
def test_a_full_model_cut_by_the_work_limit_is_the_same_twice_even_under_load(
        name, presolved_b, local_search_plan):
    """Presolved B (the full model fits): two slices, the second from the plan the portfolio
    hands at the first exchange point, both stopped by work counts (CP-SAT's deterministic time,
    SAT conflicts)."""
    def runner():
        return Runner(1800, exchange=1000, plan=local_search_plan, at=1)

    first, report = run(name, presolved_b, 1800, report=runner())
    with cpu_hog():
        second, again = run(name, presolved_b, 1800, report=runner())
    assert "too big" not in first.note and "LNS" not in first.note
    assert fingerprint(first, report) == fingerprint(second, again)
    assert report.work.points == [1]
    handed = evaluate(presolved_b, local_search_plan).cost
    assert evaluate(presolved_b, first.solution).cost <= handed
    assert first.lower_bound is not None and first.lower_bound <= handed


# ------------------------------------------------------------------------------------------ budget
@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
@pytest.mark.parametrize("lns_mode", [False, True])
def test_the_total_is_respected(name, lns_mode):
    """Never more than one solve's units past the total, and solve returns once it is spent."""
    problem = generate_problem(300, 6, seed=1) if lns_mode else generate_problem(120, 8, seed=2)
    report = Runner(0)
    report.work = Requested(900, 300)
    result, _ = run(name, problem, 0, lns_mode=lns_mode, report=report)
    assert result.solution is not None and evaluate(problem, result.solution).feasible
    if result.status is not Status.OPTIMAL:       # used up to the last window that fits
        assert report.work.spent() >= 900 - MIN_WINDOW_UNITS
    assert report.work.requested <= 900 + WINDOW_UNITS
    assert report.work.calls_after_false <= 1


def test_meter_reads_the_incumbent_only_after_an_exchange_point():
    handed = np.array([1, 2, 3])
    report = Runner(10_000, exchange=100, plan=handed, at=1)
    meter = Meter(report.work, report)
    assert meter.spend(60) and meter.fresh_best() is None          # no point passed yet
    assert meter.spend(60)
    assert meter.fresh_best() is handed and meter.fresh_best() is None   # once per point
    limit = WorkLimit(50, meter)
    assert limit.spend(30) and not limit.spend(30)                  # the call's own limit
    assert limit.left() == 0 and meter.left() == 10_000 - 180


# ------------------------------------------------------------------------------------------ exchange
@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
def test_a_better_plan_handed_at_an_exchange_point_is_adopted(name):
    problem = generate_problem(300, 6, seed=1)
    optimum = cpsat.CpSatEngine().solve(problem, 60, None, 1, 0, lambda plan: None)
    assert optimum.status == "optimal"
    alone, _ = run(name, problem, 1500, lns_mode=True)
    assert evaluate(problem, alone.solution).cost > optimum.cost   # not found alone
    report = Runner(1500, plan=optimum.plan, at=1)
    result, _ = run(name, problem, 1500, lns_mode=True, report=report)
    assert evaluate(problem, result.solution).cost == optimum.cost


# ------------------------------------------------------------------------------------------ warm starts
@pytest.mark.parametrize("deterministic", [False, True])
def test_cpsat_starts_from_the_warm_start_as_its_first_solution(deterministic):
    """The hint is complete (entry variables included), so CP-SAT's first solution is the hint
    itself; unhinted, at the same work, it finds nothing or worse."""
    problem = generate_problem(300, 6, seed=1)
    good = cpsat.CpSatEngine().solve(problem, 60, None, 1, 0, lambda plan: None).plan
    good_cost = evaluate(problem, good).cost

    def first(hint):
        work = None
        if deterministic:
            report = Runner(10**9)
            work = WorkLimit(300, Meter(report.work, report))
        out = cpsat.CpSatEngine().solve(problem, 10, hint, 1, 0, lambda plan: None, work=work)
        return out.stats.get("first_cost")

    assert first(good) == good_cost
    if deterministic:
        unhinted = first(None)
        assert unhinted is None or unhinted > good_cost


@pytest.mark.parametrize("deterministic", [False, True])
def test_maxsat_takes_the_warm_start_as_phases(deterministic):
    """RC2's first model (the end of its first stratification level) follows the oracle's phases
    wherever that level leaves a choice: from the warm start it is ten times cheaper here."""
    problem = generate_problem(150, 6, seed=1)
    good = cpsat.CpSatEngine().solve(problem, 60, None, 1, 0, lambda plan: None).plan

    def first(hint):
        work = None
        if deterministic:
            report = Runner(10**9)
            work = WorkLimit(5000, Meter(report.work, report))
        out = maxsat.MaxSatEngine().solve(problem, 30, hint, 1, 0, lambda plan: None, work=work)
        return out.stats["first_cost"]

    assert first(good) * 5 < first(None)


@pytest.mark.parametrize("name", ["cpsat", "maxsat"])
def test_a_warm_start_is_never_made_worse_and_lns_starts_from_it(name):
    problem = generate_problem(300, 6, seed=1)
    good = cpsat.CpSatEngine().solve(problem, 60, None, 1, 0, lambda plan: None).plan
    result, report = run(name, problem, 600, lns_mode=True, warm_start=good)
    assert evaluate(problem, result.solution).cost == evaluate(problem, good).cost
    notes = [n for _, _, n in report.reports]
    assert "least-memory plan avoiding forbidden entries" not in notes   # started from it
