"""Issue 47, point 4: no verified plan is lost to a caller's callback. An exception in a runner hook
(``on_update``) or in the API's ``on_improve`` ends the run at once, every worker ended, and the
run returns its best verified plan with the error attached (``callback_error``: the hook, the
error, its traceback), in the result, the API's result, the CLI's ``--json`` and, with ``--debug``,
the whole traceback on stderr.
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

import faulty_backends as fb
import portfolio
from portfolio.cli import cli
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from test_api import _children as _all_children

_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _children_before():
    """Processes an earlier test of the session left (a joblib pool, say) are not this run's."""
    _BEFORE.clear()
    _BEFORE.update(_all_children())


def _children() -> list[int]:
    """Live children of this process that the test started."""
    return [pid for pid in _all_children() if pid not in _BEFORE]

LIMIT = 20.0


@pytest.fixture(scope="module")
def problem():
    return generate_problem(300, strategies=6, seed=3)


class RaisesOnceAPlanIsKnown:
    """An ``on_update`` hook that raises at the first turn after a verified plan exists."""

    def __init__(self) -> None:
        self.turns = 0

    def __call__(self, runner) -> None:
        self.turns += 1
        if runner.incumbent() is not None and runner.best is not None:
            raise ZeroDivisionError("the caller's bug")


def test_a_raising_on_update_costs_the_rest_of_the_run_not_the_plan(problem):
    t0 = time.monotonic()
    result = run_portfolio(problem, [fb.Spin()], RunOptions(time_limit=LIMIT, extra_seeds=False),
                           on_update=RaisesOnceAPlanIsKnown())
    assert time.monotonic() - t0 < LIMIT / 2          # it ended at once, on the error
    assert result.solution is not None and evaluate(problem, result.solution).feasible
    assert result.cost == result.runs["spin"].best_cost
    error = result.callback_error
    assert error["hook"] == "on_update" and error["error"] == "ZeroDivisionError: the caller's bug"
    assert "raise ZeroDivisionError" in error["traceback"]
    assert "on_update raised ZeroDivisionError" in result.runs["spin"].note
    assert result.to_dict()["callback_error"] == error
    assert _children() == []


def test_a_run_whose_hooks_do_not_raise_has_no_callback_error(problem):
    result = run_portfolio(problem, [fb.Spin()], RunOptions(time_limit=2.0, extra_seeds=False),
                           on_update=lambda runner: None)
    assert result.callback_error is None and result.to_dict()["callback_error"] is None


@pytest.mark.parametrize("exhaustive", [False, True])
def test_a_raising_on_improve_returns_the_result_with_the_error(bundled_example, exhaustive):
    """``exhaustive``: the example is settled before the loop turns, so ``on_improve`` is told the
    answer after the run: its error is attached all the same."""
    def stop(*_):
        raise KeyError("enough")

    result = portfolio.solve(bundled_example, time_limit=10, backends=["localsearch"],
                             exhaustive=exhaustive, on_improve=stop)
    assert result.feasible and portfolio.evaluate(portfolio.load(bundled_example), result.plan).cost == result.cost
    assert result.callback_error["hook"] == "on_improve"
    assert result.callback_error["error"] == "KeyError: 'enough'"
    assert "in stop" in result.callback_error["traceback"]
    assert result.to_dict()["callback_error"]["hook"] == "on_improve"
    assert result.elapsed < 10
    assert _children() == []


@pytest.mark.parametrize("debug", [False, True])
def test_the_cli_says_so_and_keeps_the_answer(tmp_path, monkeypatch, problem, debug):
    from portfolio.io import write_problem
    from portfolio.progress import LiveProgress

    path = tmp_path / "p.json"
    write_problem(problem, path)
    hook = RaisesOnceAPlanIsKnown()
    monkeypatch.setattr(LiveProgress, "__call__", lambda self, runner: hook(runner))
    # in-process, the command's budget would count from this test process's start (portfolio/clock.py)
    monkeypatch.setattr("portfolio.cli.solve.command_start", lambda clock: (time.monotonic(), 0.0))
    out = CliRunner().invoke(cli, ["solve", str(path), "-t", str(LIMIT), "-b", "greedy,localsearch",
                                   "--json", *(["--debug"] if debug else [])],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["cost"] is not None and doc["solution"] is not None
    assert doc["callback_error"]["error"] == "ZeroDivisionError: the caller's bug"
    assert any("on_update raised" in row["note"] for row in doc["backends"])   # ended on it
    assert "on_update raised ZeroDivisionError: the caller's bug" in out.stderr
    assert ("raise ZeroDivisionError" in out.stderr) == debug
