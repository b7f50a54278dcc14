"""In-run bounds (issue 13): ``report.bound`` during a run is checked like a final bound, recorded
with its time and source (gap over time in the JSON), and an exact backend's bound that meets a
verified cost ends the run early."""

from __future__ import annotations

import time

import numpy as np
import pytest

import faulty_backends as fb
from portfolio.backend import Backend, Capabilities, NullReporter, SolveResult, Status
from portfolio.cli import bundled_example
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from portfolio.runner.claims import LOWER_BOUND

OPTIMUM = 305      # of the bundled example (tests/test_runner.py)
MIN_USAGE = 465    # the least-memory plan's cost


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


class Bounder(Backend):
    """Reports the least-memory plan, then the given bounds 0.3 s apart, then waits (no final
    bound: every bound it has is an in-run one)."""

    def __init__(self, bounds, exact=False, name="bounder", wait=1.0):
        self.bounds, self.name, self.wait = bounds, name, wait
        self.capabilities = Capabilities(exact=exact, anytime=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        report(np.array(problem.min_usage_strategies), "least memory")
        for value in self.bounds:
            time.sleep(0.3)
            report.bound(value, f"bound {value}")
        stop = time.monotonic() + self.wait
        while time.monotonic() < stop and time.time() < deadline - 0.1:
            time.sleep(0.02)
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies))


def test_in_run_bounds_are_recorded_with_time_and_source(example):
    result = run_portfolio(example, [Bounder([100, 50, 200, None])],
                           RunOptions(time_limit=4.0, fallback=False))
    run = result.runs["bounder"]
    assert [b.value for b in run.bounds] == [100, 200]     # 50 is no improvement, None nothing
    assert run.bounds[0].time < run.bounds[1].time and run.bounds[1].note == "bound 200"
    assert run.lower_bound == 200
    # the later bound implies the earlier one: one standing bound claim per backend
    assert [c.value for c in run.claims if c.kind == LOWER_BOUND] == [200]
    doc = result.to_dict()
    assert [(b["value"], b["backend"]) for b in doc["bounds"]] == [(100, "bounder"), (200, "bounder")]
    trace = doc["gap_trace"]
    assert trace[0]["cost"] == MIN_USAGE and trace[0]["bound"] is None
    assert trace[-1]["bound"] == 200 and trace[-1]["gap"] == pytest.approx((MIN_USAGE - 200) / MIN_USAGE)
    assert [t["time"] for t in trace] == sorted(t["time"] for t in trace)
    assert doc["backends"][0]["bounds"][1]["value"] == 200
    assert result.stopped_early is None    # not exact: its bounds end nothing


def test_an_in_run_bound_above_a_verified_cost_is_false(example):
    result = run_portfolio(example, [Bounder([OPTIMUM + 1000])],
                           RunOptions(time_limit=3.0, fallback=False))
    run = result.runs["bounder"]
    assert run.lower_bound is None and run.note.startswith("false claim: lower bound 1,305")
    assert result.best_bound is None and result.to_dict()["bounds"] == []
    assert run.best_cost == MIN_USAGE    # its verified plan stays eligible
    assert result.cost == MIN_USAGE


def test_a_malformed_in_run_bound_is_dropped_and_named(example):
    result = run_portfolio(example, [Bounder([float("nan")], wait=0.0)], RunOptions(time_limit=3.0))
    run = result.runs["bounder"]
    assert run.bounds == [] and run.status is Status.FEASIBLE
    assert result.best_bound is None


def test_an_exact_in_run_bound_meeting_a_verified_plan_ends_the_run(example):
    t0 = time.monotonic()
    result = run_portfolio(example, [Bounder([200, OPTIMUM], exact=True, wait=30), fb.Enumerate()],
                           RunOptions(time_limit=20.0))
    assert time.monotonic() - t0 < 10.0
    assert result.cost == OPTIMUM and result.stopped_early, result.stopped_early
    assert result.proof == "proven optimal: plan by enumerate meets the bound of bounder"
    assert result.runs["bounder"].status is Status.TIMEOUT    # stopped, its bound kept
    assert result.gap == 0.0


def test_null_reporter_records_bounds_and_demands_and_ignores_no_bound():
    null = NullReporter()   # what a direct call of solve (a test) passes as the reporter
    null.bound(7, "x")
    null.bound(None)
    null.demand("low", "why")
    assert [(v, n) for _, v, n in null.bounds] == [(7, "x")]
    assert null.demands == [("low", "why")]


def test_the_final_table_shows_the_gap_over_time(example):
    from rich.console import Console

    from portfolio.progress import final_table, gap_over_time

    result = run_portfolio(example, [Bounder([100, 200])],
                           RunOptions(time_limit=3.0, fallback=False))
    line = gap_over_time(result)
    assert line.startswith("gap to bound over time: 78.5 % at ") and line.endswith(" s")
    assert "57 % at" in line      # (465 - 200) / 465
    console = Console(width=140, record=True, file=open("/dev/null", "w"))
    console.print(final_table(result))
    assert "gap to bound over time:" in console.export_text()


def test_the_report_plots_the_gap_against_the_bound_known_at_each_time():
    from portfolio.report.plots import _gap_points

    row = {"incumbents": [{"time": 1.0, "cost": 200}, {"time": 5.0, "cost": 120}],
           "gap_trace": [{"time": 1.0, "cost": 200, "bound": None},
                         {"time": 2.0, "cost": 200, "bound": 50},
                         {"time": 5.0, "cost": 120, "bound": 50},
                         {"time": 6.0, "cost": 120, "bound": 100}]}
    times, gaps = _gap_points(row)
    assert times == [2.0, 5.0, 6.0]
    assert gaps == pytest.approx([75.0, 100 * 70 / 120, 100 * 20 / 120])
    old = {"incumbents": row["incumbents"]}           # a row written before gap_trace existed
    assert _gap_points(old) == ([], [])               # no bound known over time: no gap panel
