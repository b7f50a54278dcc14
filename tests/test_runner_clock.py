"""Clocks (issue 16): the runner's deadlines are time.monotonic() values; the backend's wall-clock
deadline is made in its worker right before solve, so no time.time() value crosses a process."""

from __future__ import annotations

import time

import numpy as np
import pytest

from portfolio.backend import Backend, Capabilities, SolveResult, Status, time_left
from portfolio.cli import bundled_example
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.runner import deadline_plan, run_portfolio
from portfolio.runner.worker import wall_deadline


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


class SaysTimeLeft(Backend):
    """Returns at once; its note says how many seconds its deadline left it."""

    name = "time-left"
    capabilities = Capabilities()

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies),
                           note=f"{time_left(deadline):.3f}")


def test_the_backend_deadline_is_the_runners_monotonic_one_on_the_wall_clock(example):
    start = time.monotonic() - 1.0   # as the CLI does: the process started a second ago
    result = run_portfolio(example, [SaysTimeLeft()], RunOptions(time_limit=6.0, start=start))
    soft = deadline_plan(start, 6.0)[0]
    run = result.runs["time-left"]
    left = float(run.note)
    # the backend was started at run.started seconds after start; its deadline is the soft one
    assert left == pytest.approx(soft - start - run.started, abs=0.5)
    assert 0.0 < left < 6.0 - 1.0


def test_wall_deadline_converts_once():
    mono = time.monotonic() + 5.0
    assert wall_deadline(mono) - time.time() == pytest.approx(5.0, abs=0.05)


def test_a_wall_clock_start_is_refused(example):
    with pytest.raises(ValueError, match="time.monotonic"):
        run_portfolio(example, [SaysTimeLeft()], RunOptions(time_limit=2.0, start=time.time()))
