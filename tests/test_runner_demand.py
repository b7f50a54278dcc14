"""CPU demand: a backend that declares a low demand (an exact backend in LNS mode) gets the lowest
priority, does not hold a core against extra seeds, and the exact driver declares it in LNS mode."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import faulty_backends as fb
from portfolio.backend import LOW, PROOF, Backend, Capabilities, NullReporter, SolveResult, Status
from portfolio.cli import bundled_example
from portfolio.exact import ExactOutcome, ModelSize, solve_with_engine
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from portfolio.runner.schedule import LOW_NICE


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


class Demanding(Backend):
    """Declares a demand, then spins (or waits) to the deadline; its note says its nice value."""

    capabilities = Capabilities(anytime=True)

    def __init__(self, name: str, level: str = LOW, spin: bool = False) -> None:
        self.name, self.level, self.spin = name, level, spin

    def solve(self, problem, deadline, seed, warm_start, report):
        report(np.array(problem.min_usage_strategies), "before")
        report.demand(self.level, "testing")
        stop = time.monotonic() + min(1.0, deadline - time.time())
        x = 0
        while time.time() < deadline - 0.05 if self.spin else time.monotonic() < stop:
            x += 1
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies),
                           note=f"nice={os.nice(0)}")


def test_a_low_demand_worker_runs_at_the_lowest_priority(example):
    base = os.nice(0)
    result = run_portfolio(example, [Demanding("low"), Demanding("normal", "normal")],
                           RunOptions(time_limit=3.0, workers=2, extra_seeds=False))
    low, normal = result.runs["low"], result.runs["normal"]
    assert low.note == f"nice={LOW_NICE}" and low.demand == LOW and low.demand_note == "testing"
    assert normal.note == f"nice={base}" and normal.demand == "normal"
    assert result.to_dict()["backends"][0]["demand"] in (LOW, "normal")
    ignored = run_portfolio(example, [Demanding("low")],
                            RunOptions(time_limit=3.0, honour_demand=False))
    assert ignored.runs["low"].note == f"nice={base}" and ignored.runs["low"].demand == LOW
    assert ignored.schedule["honour_demand"] is False


def test_a_low_demand_worker_gets_only_the_cpu_nobody_else_wants(example):
    # both pinned to one core: CFS weights 15 (nice 19) against 1024 (nice 0)
    result = run_portfolio(example, [Demanding("low", spin=True), fb.Spin("normal")],
                           RunOptions(time_limit=4.0, workers=1, policy="pin", extra_seeds=False))
    low, normal = result.runs["low"].cpu_seconds, result.runs["normal"].cpu_seconds
    assert low is not None and normal is not None and normal > 0.5
    assert low < normal / 4, (low, normal)


def test_a_low_demand_worker_does_not_hold_a_core_against_extra_seeds(example):
    backends = [fb.RandomSpin(), Demanding("lns", spin=True)]
    result = run_portfolio(example, backends, RunOptions(time_limit=6.0, workers=2, seed=5))
    assert "random-spin+1" in result.runs, list(result.runs)
    plain = run_portfolio(example, backends,
                          RunOptions(time_limit=6.0, workers=2, seed=5, honour_demand=False))
    assert "random-spin+1" not in plain.runs, list(plain.runs)


def test_an_unknown_demand_rejects_its_sender(example):
    result = run_portfolio(example, [Demanding("greedy-cpu", "high")], RunOptions(time_limit=3.0))
    run = result.runs["greedy-cpu"]
    assert run.status is Status.REJECTED and "demand 'high'" in run.note, run.note


class TooBig:
    """An engine whose model never fits, so the driver runs LNS windows (that find nothing)."""

    name = "too-big"

    def estimate(self, problem):
        return ModelSize(10**9, 10**9, 10**9)

    def budget(self):
        return ModelSize(1, 1, 1)

    def solve(self, problem, time_limit, hint, threads, seed, on_solution):
        return ExactOutcome("unknown", note="fake")


class Fits(TooBig):
    def budget(self):
        return ModelSize(10**10, 10**10, 10**10)


class JustFits(TooBig):
    """A large model that fits: the full model gets a share of the time, LNS the rest."""

    def budget(self):
        return ModelSize(10**9, 10**9, 10**9)


def test_the_exact_driver_declares_a_low_demand_in_lns_mode_only(example):
    # and a proof search while its full model runs (the adaptive rule keeps its share then)
    report = NullReporter()
    result = solve_with_engine(TooBig(), example, time.time() + 1.5, 0, None, report, threads=1)
    assert result.solution is not None
    assert report.demands == [(LOW, "LNS windows (full model too big)")]
    report = NullReporter()
    solve_with_engine(Fits(), example, time.time() + 1.5, 0, None, report, threads=1, lns=False)
    assert report.demands == [(PROOF, "full model")]
    report = NullReporter()
    solve_with_engine(JustFits(), example, time.time() + 1.5, 0, None, report, threads=1)
    assert report.demands == [(PROOF, "full model"), (LOW, "LNS windows (full model unproven)")]


class PureBounder(Backend):
    """Bound-only (exact, not anytime): sends one bound, then waits to the deadline."""

    capabilities = Capabilities(exact=True)

    def __init__(self, value: int, name: str = "pure-bounder") -> None:
        self.value, self.name = value, name

    def solve(self, problem, deadline, seed, warm_start, report):
        report.bound(self.value, "early bound")
        while time.time() < deadline - 0.1:
            time.sleep(0.02)
        return SolveResult(Status.NO_SOLUTION, note=f"nice={os.nice(0)}")


@pytest.mark.parametrize("bound, honour, low", [(100, True, True), (462, True, False),
                                                (100, False, False)])
def test_a_bound_only_backend_far_from_the_plans_goes_low(example, bound, honour, low):
    # fb.Spin verifies the least-memory plan (cost 465) at once; a bound of 100 leaves a gap of
    # 78 %, one of 462 a gap of 0.6 %
    result = run_portfolio(example, [PureBounder(bound), fb.Spin()],
                           RunOptions(time_limit=4.0, workers=2, extra_seeds=False,
                                      honour_demand=honour))
    run = result.runs["pure-bounder"]
    assert run.lower_bound == bound and [b.value for b in run.bounds] == [bound]
    if low:
        assert run.demand == LOW and run.demand_note.startswith("proof out of reach: gap 78.5 %")
        assert run.note == f"nice={LOW_NICE}"
    else:
        assert run.demand == "normal" and run.note == f"nice={os.nice(0)}"


# ---------------------------------------------------------------- the budget-aware check (issue 50)
class SlowBounder(PureBounder):
    """Bound-only: sends ``value``, then ``steps`` bounds ``step`` higher one second apart, and
    returns after ``seconds`` (so that a long budget's run ends early)."""

    def __init__(self, value: int, step: int, steps: int, seconds: float, name: str) -> None:
        super().__init__(value, name)
        self.step, self.steps, self.seconds = step, steps, seconds

    def solve(self, problem, deadline, seed, warm_start, report):
        stop = time.monotonic() + self.seconds
        report.bound(self.value, "first")
        for k in range(1, self.steps + 1):
            time.sleep(1.0)
            report.bound(self.value + k * self.step, f"step {k}")
        while time.monotonic() < stop:
            time.sleep(0.02)
        return SolveResult(Status.NO_SOLUTION, note="done")


def test_the_bounder_check_follows_the_budget_and_the_bound():
    from portfolio.runner.demotion import BOUNDER_MIN, BOUNDER_STALL, check_after, last_progress
    from portfolio.runner.result import BoundPoint

    assert check_after(60, 0.0) == BOUNDER_MIN              # a stalled bound: 5 s, not 12
    assert check_after(240, 0.0) == BOUNDER_MIN             # and not 48 s at S's contest limit
    assert check_after(240, 30.0) == 30.0 + BOUNDER_STALL   # a bound that moved: its chance
    assert check_after(240, 100.0) == 48.0                  # never later than 20 % of the budget
    assert check_after(10, 0.0) == 2.0                      # a short budget: 20 % of it
    points = [BoundPoint(1.0, 100, "b"), BoundPoint(2.0, 101, "b"), BoundPoint(4.0, 130, "b")]
    assert last_progress(points, 0.5, 1000) == 3.5          # +1 is under 1 % of 1000; +29 is not
    assert last_progress(points[:2], 0.5, 1000) == 0.5


@pytest.mark.parametrize("steps, low", [(0, True), (8, False)])
def test_a_stalled_bound_goes_low_long_before_a_fifth_of_a_long_budget(example, steps, low):
    # the least-memory plan costs 465: the bounds stay under it, each step 2 % of it
    bounder = SlowBounder(100, 10, steps, 9.0, "slow-bounder")
    result = run_portfolio(example, [bounder, Demanding("plans", "normal")],
                           RunOptions(time_limit=100.0, workers=2, extra_seeds=False))
    run = result.runs["slow-bounder"]
    assert result.elapsed < 30, result.elapsed              # it ended when the bounder did
    assert (run.demand == LOW) == low, (run.demand, run.demand_note)
