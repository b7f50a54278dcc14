"""Issue 47, point 1: ``complete`` is honest in both modes. A backend that says it stopped on its
wall-clock safety net (``SolveResult.safety_net``) before its work was done reaches its row in a
timed run and in a deterministic one, and a deterministic run then says it is not the
deterministic answer; a bench row says so in a field of its own, ``report`` names it, and a tune
does not count its cost.
"""

from __future__ import annotations

import json

import pytest

import det_backends as db
import faulty_backends as fb
from portfolio.bench.plan import Task
from portfolio.bench.task import solve_task
from portfolio.generate import generate_problem
from portfolio.io import write_problem
from portfolio.options import RunOptions
from portfolio.report.tune_score import usable_cost
from portfolio.runner import run_portfolio


@pytest.fixture(scope="module")
def small():
    return generate_problem(150, seed=1)


def test_a_timed_safety_net_stop_reaches_the_row(small):
    result = run_portfolio(small, [fb.StopsOnSafetyNet()], RunOptions(time_limit=3.0))
    row = result.runs["safety-net-stop"]
    assert row.safety_net and row.best_cost is not None
    assert result.to_dict()["backends"][0]["safety_net"] is True
    assert result.deterministic is None   # a timed run makes no promise to break


def test_a_deterministic_safety_net_stop_makes_the_run_incomplete(small):
    result = run_portfolio(small, [db.NodeSearch(), db.StopsOnSafetyNet()],
                           RunOptions(time_limit=30.0, deterministic=True, work=4_000))
    assert result.runs["det-safety-net"].safety_net
    assert not result.runs["det-node"].safety_net
    record = result.deterministic
    assert record["complete"] is False, record
    assert record["reason"].startswith("det-safety-net stopped on its wall-clock safety net")
    assert result.to_dict()["deterministic"]["complete"] is False


def test_a_deterministic_run_without_it_stays_complete(small):
    result = run_portfolio(small, [db.NodeSearch()],
                           RunOptions(time_limit=30.0, deterministic=True, work=4_000))
    assert result.deterministic["complete"] is True and result.deterministic["reason"] is None


def test_a_bench_row_marks_it_and_report_and_tune_read_the_mark(small, tmp_path, monkeypatch):
    from portfolio.report.provenance import incomplete_notes

    monkeypatch.delenv("PORTFOLIO_PLUGINS", raising=False)   # the task sets it (tests/ is on the path)
    path = tmp_path / "small.json"
    write_problem(small, path)
    task = Task("small", str(path), "net", ("det-node", "det-safety-net"), 0, 0, 30.0, 1,
                plugins="det_backends", deterministic=True, work=4_000)
    row = solve_task(task)
    assert row["complete"] is False and row["status"] == "feasible" and row["cost"] is not None
    assert "safety net" in row["deterministic"]["reason"]
    json.dumps(row)   # a results.jsonl line
    notes = incomplete_notes([row])
    assert len(notes) == 1 and "small/net s0" in notes[0] and "safety net" in notes[0], notes
    assert usable_cost(row) is None          # a tune does not race on a load-dependent cost
    whole = dict(row, complete=True)
    assert usable_cost(whole) == row["cost"] and incomplete_notes([whole]) == []
    timed = dict(row, complete=None, deterministic=None)
    assert usable_cost(timed) == row["cost"] and incomplete_notes([timed]) == []
