"""Issue 14: claims are claims, verified plans are never lost, every worker message is checked.

Each test is one measured case of the issue, on the bundled example (optimum 305, min-usage plan
465) or a 2-node instance, asserting the answer and the labels.
"""

from __future__ import annotations

import json
import time

import pytest

import faulty_backends as fb
from portfolio.backend import Status
from portfolio.cli import bundled_example
from portfolio.io import load_problem
from portfolio.problem import FORBIDDEN
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from test_runner import OPTIMUM, _cli

MIN_USAGE = 465


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


def test_false_infeasibility_claim_does_not_empty_the_answer(example):
    result = run_portfolio(example, [fb.ClaimsInfeasible(), fb.Enumerate()],
                           RunOptions(time_limit=4.0))
    assert result.cost == OPTIMUM and result.infeasible_proven_by is None
    row = result.runs["claims-infeasible"]
    assert row.status is Status.NO_SOLUTION and row.note.startswith("false claim: infeasible")


def test_false_infeasibility_claim_alone_is_contradicted_by_the_fallback(example):
    result = run_portfolio(example, [fb.ClaimsInfeasible()],
                           RunOptions(time_limit=3.0, fallback=True))
    assert result.cost == MIN_USAGE and result.winner == "fallback"
    assert [c.false for c in result.claims] == [True]


@pytest.mark.parametrize("early_stop", [True, False])
def test_false_optimum_is_not_the_answer_nor_labelled_optimal(example, early_stop):
    # early_stop=False makes the outcome independent of timing; True checks the safety net waits
    result = run_portfolio(example, [fb.QuickFalseOptimum(), fb.Enumerate()],
                           RunOptions(time_limit=4.0, early_stop=early_stop))
    assert result.cost == OPTIMUM and result.winner == "enumerate"
    assert result.proof is None
    row = result.runs["quick-false-optimum"]
    assert row.status is Status.FEASIBLE and not row.claimed_optimal and row.lower_bound is None
    assert "false claim: optimal at 465" in row.note and "enumerate verified" in row.note


def test_false_bound_after_the_optimum_keeps_the_verified_optimum(example):
    result = run_portfolio(example, [fb.OptimumThenFalseBound()], RunOptions(time_limit=4.0))
    assert result.cost == OPTIMUM and result.winner == "optimum-then-false-bound"
    row = result.runs["optimum-then-false-bound"]
    assert row.status is Status.FEASIBLE and row.lower_bound is None
    assert "false claim: lower bound 1,000,000,000" in row.note


@pytest.mark.parametrize("bound, words", [
    (float("nan"), "not finite"), (float("inf"), "not finite"), (-float("inf"), "not finite"),
    ("305", "not a number"), (True, "boolean"), (10**400, "too large"), (object(), "not a number"),
])
def test_malformed_bound_is_dropped_and_the_run_goes_on(example, bound, words):
    result = run_portfolio(example, [fb.OddBound(bound)], RunOptions(time_limit=4.0))
    row = result.runs["odd-bound"]
    assert result.cost == OPTIMUM and row.status is Status.FEASIBLE
    assert row.lower_bound is None and "dropped: lower_bound" in row.note and words in row.note


def test_float_bound_is_rounded_down_and_recorded_as_a_claim(example):
    result = run_portfolio(example, [fb.OddBound(304.9)], RunOptions(time_limit=4.0))
    assert result.runs["odd-bound"].lower_bound == 304
    assert [(c.kind, c.value, c.false) for c in result.claims] == [("lower-bound", 304, False)]


def test_bound_meeting_the_plan_from_another_backend_is_a_claim_unless_exact(example):
    """Issue 47: a backend that does not declare ``exact`` cannot prove; its bound meeting another
    backend's plan stays its claim (an exact one proves: test_runner_bounds)."""
    result = run_portfolio(example, [fb.OddBound(OPTIMUM, "bounder"), fb.Enumerate()],
                           RunOptions(time_limit=4.0, early_stop=False))
    assert result.cost == OPTIMUM and not result.proven_optimal
    if result.winner == "enumerate":
        assert result.proof == ("claimed optimal by bounder (not exact): plan by enumerate meets "
                                "its bound")
    else:  # both found 305; the bounder's own plan meets only its own bound
        assert result.proof == "claimed optimal by bounder"


def test_a_non_exact_bound_is_a_claim_in_the_api_and_the_text(example):
    """Issue 47: a backend without ``exact`` claims the optimum's cost as its bound, and another
    finds the plan: the API's ``optimal`` stays False and every text says claim."""
    import portfolio

    result = portfolio.solve(example, time_limit=3, exhaustive=False, early_stop=False,
                             backends=[fb.ClaimsBound(OPTIMUM), fb.Enumerate()])
    assert result.cost == OPTIMUM and result.winner == "enumerate"
    assert not result.optimal and result.status == "feasible" and result.lower_bound == OPTIMUM
    assert result.proof == ("claimed optimal by claims-bound (not exact): plan by enumerate meets "
                            "its bound")
    assert result.run.bound_text() == ("lower bound 305 claimed by claims-bound (not exact), gap "
                                       "to bound 0.000 %")
    assert result.to_dict()["optimal"] is False


def test_two_non_exact_bounds_that_agree_prove_nothing(example):
    result = run_portfolio(example, [fb.ClaimsBound(OPTIMUM, "a"), fb.ClaimsBound(OPTIMUM, "b"),
                                     fb.Enumerate()], RunOptions(time_limit=3.0, early_stop=False))
    assert result.cost == OPTIMUM and not result.proven_optimal
    assert result.proof.startswith("claimed optimal by a and b (not exact)"), result.proof


def test_a_bench_row_is_optimal_only_by_an_exact_claim(bundled_example, monkeypatch):
    """A non-exact backend's true ``OPTIMAL`` makes a bench row ``feasible``, an exact one's
    ``optimal`` (bench keeps each configuration's own rows: no exhaustive scoring)."""
    from portfolio.bench.plan import Task
    from portfolio.bench.task import solve_task

    monkeypatch.delenv("PORTFOLIO_PLUGINS", raising=False)
    rows = {name: solve_task(Task("example", str(bundled_example), name, (name,), 0, 0, 3.0, 1,
                                  plugins="faulty_backends"))
            for name in ("claims-optimal", "bruteforce")}
    assert rows["claims-optimal"]["cost"] == rows["bruteforce"]["cost"] == OPTIMUM
    assert rows["claims-optimal"]["status"] == "feasible", rows["claims-optimal"]
    assert rows["bruteforce"]["status"] == "optimal"


@pytest.mark.parametrize("message, words", [
    (("incumbent", float("nan"), None, None), "not a finite number"),
    (("incumbent", 0.1, "not a plan", "x"), "invalid plan"),
    (("done", "not a dict"), "expected a dict"),
    (("done", {"status": "optimal", "solution": None}), "without a solution"),
    (("what", 1), "unknown message kind"),
    (["incumbent"], "not a tagged tuple"),
])
def test_malformed_messages_reject_the_sender_not_the_run(example, message, words):
    result = run_portfolio(example, [fb.SendsGarbage(message), fb.Enumerate()],
                           RunOptions(time_limit=3.0))
    row = result.runs["sends-garbage"]
    assert row.status is Status.REJECTED and words in row.note, row.note
    assert result.cost == OPTIMUM


def test_flood_of_reports_is_throttled_and_the_run_ends_on_time(example):
    t0 = time.time()
    result = run_portfolio(example, [fb.FloodsReports(), fb.Enumerate()],
                           RunOptions(time_limit=3.0))
    assert time.time() - t0 < 3.0
    row = result.runs["floods"]
    assert row.status in (Status.FEASIBLE, Status.TIMEOUT) and result.cost == OPTIMUM
    assert len(row.incumbents) == 1  # the same plan, verified once as an improvement


@pytest.mark.parametrize("backend, status, words", [
    (fb.PrepareHangs(), Status.TIMEOUT, "still in prepare()"),
    (fb.PrepareRaises(), Status.FEASIBLE, "prepare failed: RuntimeError: boom in prepare"),
    (fb.PrepareSegfaults(), Status.CRASHED, "in prepare() by signal SIGSEGV"),
])
def test_prepare_runs_in_the_worker_and_cannot_delay_the_answer(example, backend, status, words):
    t0 = time.time()
    result = run_portfolio(example, [backend, fb.Enumerate()], RunOptions(time_limit=3.0))
    assert time.time() - t0 < 3.5  # the runner's own end phase, on a shared machine (not 8 s)
    row = result.runs[backend.name]
    assert row.status is status and words in row.note, row.note
    assert result.cost == OPTIMUM
    if isinstance(backend, fb.PrepareRaises):  # the whole traceback, for --json and --debug
        assert "in prepare" in row.traceback and row.traceback.endswith("boom in prepare")


def _forbidden_only():
    from tiny import make_problem

    return make_problem([[1, 2], [1, 2]], [[0, 1], [0, 1]], [[1, 1], [1, 1]], [[0, 1]],
                        [[FORBIDDEN] * 4])


@pytest.mark.parametrize("use_presolve", [True, False])
def test_forbidden_only_instance_is_answered_with_or_without_presolve(use_presolve):
    prob = _forbidden_only()
    result = run_portfolio(prob, [fb.BruteForceReduced()],
                           RunOptions(time_limit=4.0, presolve=use_presolve))
    assert result.solution is not None and result.infeasible_proven_by is None
    assert result.cost == FORBIDDEN + 2


@pytest.mark.parametrize("flag", [[], ["--no-presolve"]])
def test_cli_answers_the_forbidden_only_instance(tmp_path, flag):
    path = tmp_path / "forbidden.json"
    path.write_text(json.dumps({"problem": {"name": "forbidden", "nodes": {
        "intervals": [[0, 1], [0, 1]], "costs": [[1, 2], [1, 2]], "usages": [[1, 1], [1, 1]]},
        "edges": {"nodes": [[0, 1]], "costs": [[10**18] * 4]}, "usage_limit": 5}}))
    proc = _cli(["solve", str(path), "-t", "4", "--backends", "minusage", *flag])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [0, 0]
    assert "infeasible" not in proc.stderr
