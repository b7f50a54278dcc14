"""Warm starts: never a worse answer than the plan given, a forbidden or infeasible one repaired (and
said so), a bad one refused with one line, an XLA request's s_hint used; the repair on its own."""

from __future__ import annotations

import copy
import json
import math
import time

import numpy as np
import pytest
from click.testing import CliRunner

import portfolio
from portfolio.backend import Backend, BackendMeta, Capabilities, SolveResult, Status
from portfolio.cli import bundled_example, cli
from portfolio.evaluate import evaluate
from portfolio.io import load_problem, parse_document
from portfolio.options import RunOptions
from portfolio.problem import FORBIDDEN
from portfolio.runner import run_portfolio
from portfolio.runner.repair import Repair, fill_open, repair_plan
from portfolio.runner.warmstart import HINT, REPAIRED, WARM_START, report_text, take_warm_start
from conftest import live_children
from xla_reference import HALVES, to_message

GOOD = [0, 0, 0, 2, 0, 0, 1, 1]        # the example's optimum, 305
OVER = [1, 2, 0, 1, 1, 0, 2, 0]        # over the example's memory limit (70) at four time points


class OnlyWorse(Backend):
    """Reports, and returns, only plans worse than the warm start (the least-memory plan)."""

    name = "only-worse"
    description = "test backend"
    meta = BackendMeta(test_only=True)
    capabilities = Capabilities(anytime=True, warm_start=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.array(problem.min_usage_strategies)
        report(plan, "worse")
        return SolveResult(Status.FEASIBLE, plan, note=f"warm={None if warm_start is None else [int(s) for s in warm_start]}")


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


def _doc() -> dict:
    return json.loads(open(bundled_example()).read())


def test_a_warm_started_run_never_answers_worse(example):
    result = run_portfolio(example, [OnlyWorse()], RunOptions(time_limit=3.0, warm_start=GOOD))
    assert result.cost == evaluate(example, GOOD).cost == 305
    assert result.winner == WARM_START
    assert result.runs["only-worse"].best_cost > 305          # it did report, worse
    assert "warm=[0, 0, 0, 2, 0, 0, 1, 1]" in result.runs["only-worse"].note   # and got the plan
    report = result.warm_start
    assert report["status"] == "as given" and report["cost"] == 305
    assert report["improvement"] == 0 and report["final_cost"] == 305


def test_an_infeasible_warm_start_is_repaired_before_the_backends_and_said_so(example):
    assert not evaluate(example, OVER).feasible
    result = run_portfolio(example, [OnlyWorse()], RunOptions(time_limit=3.0, warm_start=OVER))
    report = result.warm_start
    assert report["status"] == REPAIRED and report["cost"] is None
    assert "over the memory limit at 4 time points" in report["why"]
    repaired = report["repair"]
    assert repaired["feasible"] and "moves to fit memory" in repaired["did"]
    assert result.cost <= repaired["cost"] == report["start_cost"]
    assert result.winner == WARM_START      # the backend's plan is worse than the repaired one
    warm = json.loads(result.runs["only-worse"].note.split("warm=")[1])
    assert evaluate(example, warm).feasible   # the backend started from the repaired plan


def test_a_forbidden_warm_start_is_repaired():
    doc = _doc()
    doc["problem"]["nodes"]["costs"][0] = [FORBIDDEN, 10]
    doc["problem"]["edges"]["costs"][0] = [5, 0, FORBIDDEN, 30, 10, 0]   # node 0 = 1 with node 1 = 0
    problem = parse_document(doc)
    given = [0, 0, 0, 2, 0, 0, 1, 1]
    ev = evaluate(problem, given)
    assert ev.feasible and ev.forbidden_node_choices == 1
    result = portfolio.solve(problem, time_limit=3, backends=["greedy"],
                             exhaustive=False, warm_start=given)
    report = result.warm_start
    assert report["status"] == REPAIRED and report["cost"] == ev.cost
    assert report["why"].startswith("forbidden (1 node strategies, 0 edge entries)")
    assert report["repair"]["cost"] < FORBIDDEN and result.cost <= report["repair"]["cost"]
    assert evaluate(problem, result.plan).forbidden_node_choices == 0


def test_a_warm_start_that_cannot_fit_is_only_a_hint(example, monkeypatch):
    """When the repair cannot bring memory under the limit, no plan comes from the warm start: the
    backends get it to start from, the result says so, and the run answers as without it."""
    from portfolio.runner import warmstart

    monkeypatch.setattr(warmstart, "repair_plan", lambda problem, plan, seconds: Repair(
        np.array(plan), memory_moves=3, fits=False))
    result = run_portfolio(example, [OnlyWorse()], RunOptions(time_limit=2.0, warm_start=OVER))
    report = result.warm_start
    assert report["status"] == HINT and report["start_cost"] is None and report["improvement"] is None
    assert result.cost == 465 and result.winner == "only-worse"
    assert f"warm={OVER}" in result.runs["only-worse"].note   # handed on as a hint
    assert "kept only as the backends' starting plan" in report_text(report)


def _greedy():
    from portfolio_plugins.greedy import GreedyBackend

    return GreedyBackend()


def test_a_deterministic_repair_that_finishes_is_the_one_made_in_process(example):
    """Deterministic mode repairs in a child the run's clock can end; when it finishes, the plan is
    the one the clock-free repair makes in process, and the answer is the deterministic one."""
    seen = []
    result = run_portfolio(example, [_greedy()], RunOptions(
        time_limit=30.0, deterministic=True, work=2_000, warm_start=OVER),
        on_update=lambda runner: seen.append(runner.warm))
    inline = take_warm_start(example, OVER, math.inf)
    assert inline.status == REPAIRED and seen[0].status == REPAIRED
    assert np.array_equal(seen[0].start, inline.start) and seen[0].cut is None
    report = result.warm_start
    assert report["repair"]["finished"] and report["repair"]["did"] == inline.repair.text()
    assert result.deterministic["complete"], result.deterministic


def test_a_deterministic_repair_is_ended_at_the_deadline_and_said_so(example, monkeypatch):
    """A repair that would outlive the run (it reads no clock in this mode) is ended at the
    backends' deadline: the run answers on time from the plan as given, and says that its answer
    is not the deterministic one."""
    from portfolio.runner import warmstart

    monkeypatch.setattr(warmstart, "repair_plan", lambda problem, plan, seconds: time.sleep(60))
    before = live_children()
    limit = 3.0
    t0 = time.monotonic()
    result = run_portfolio(example, [_greedy()], RunOptions(
        time_limit=limit, deterministic=True, work=2_000, warm_start=OVER, fallback=True))
    assert time.monotonic() - t0 <= limit + 0.5
    assert live_children() <= before                 # the repair's child is gone
    report = result.warm_start
    assert report["status"] == HINT and report["repair"]["finished"] is False
    assert report["repair"]["seconds"] <= limit
    assert "its repair did not finish by the run's deadline" in report_text(report)
    det = result.deterministic
    assert not det["complete"]
    assert det["reason"].startswith("the warm start's repair did not finish by the backends' deadline")
    assert result.solution is not None and evaluate(example, result.solution).feasible


@pytest.mark.parametrize("plan, line", [
    ("[0, 1]", "solution has 2 entries but the problem has 8 nodes"),
    ("[0, 0, 5, 0, 0, 0, 0, 0]", "solution[2] = 5 is out of range: node 2 has 1 strategies (0..0)"),
    ('{"cost": 3}', "JSON object has no 'solution' field"),
    ("hello", "not a solution"),
])
def test_a_bad_warm_start_is_one_line_in_the_api_and_the_cli(tmp_path, plan, line):
    path = tmp_path / "plan.json"
    path.write_text(plan)
    with pytest.raises(portfolio.ProblemError) as api:
        portfolio.solve(bundled_example(), time_limit=2, backends=["greedy"], warm_start=str(path))
    assert f"warm start {path}" in str(api.value) and line in str(api.value)
    out = CliRunner().invoke(cli, ["solve", "-q", "-t", "2", "-b", "greedy", "--warm-start", str(path)])
    assert out.exit_code == 2
    assert out.stderr.strip() == f"error: {api.value}"


def test_a_missing_warm_start_file_and_a_list_not_a_plan():
    with pytest.raises(portfolio.ProblemError, match=r"warm start /no/plan\.json: no such file"):
        portfolio.solve(bundled_example(), time_limit=2, warm_start="/no/plan.json")
    with pytest.raises(portfolio.ProblemError, match=r"warm start: solution\[1\] = 0\.5 is not an integer"):
        portfolio.solve(bundled_example(), time_limit=2, warm_start=[0, 0.5] + [0] * 6)
    with pytest.raises(portfolio.ProblemError, match=r"warm start: expected a plan"):
        portfolio.solve(bundled_example(), time_limit=2, warm_start=3)


def test_the_cli_reads_a_result_document_and_says_what_it_made_of_it(tmp_path):
    first = tmp_path / "first.json"
    out = CliRunner().invoke(cli, ["solve", "-t", "3", "-b", "greedy", "--no-exhaustive",
                                   "-o", str(first)])
    assert out.exit_code == 0, out.output
    cost = json.loads(first.read_text())["cost"]
    out = CliRunner().invoke(cli, ["solve", "-t", "3", "-b", "greedy", "--no-exhaustive",
                                   "--warm-start", str(first), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["warm_start"]["source"] == str(first) and doc["warm_start"]["cost"] == cost
    assert doc["cost"] <= cost
    assert f"warm start ({first}): cost {cost:,}" in out.stderr


# ------------------------------------------------------------------------------------------ s_hint
def _request(tmp_path, hint, name="r.pb"):
    path = tmp_path / name
    path.write_bytes(to_message({**HALVES, "s_hint": hint}).SerializeToString())
    return path


def test_a_valid_s_hint_is_the_warm_start_and_the_answer_is_no_worse(tmp_path):
    hint = [1, 1, 1, 1]                           # feasible, not optimal
    path = _request(tmp_path, hint)
    conv = portfolio.api.inputs.read(path)
    assert conv.hint is not None and conv.hint.tolist() == conv.restrict(hint).tolist()
    given = evaluate(conv.problem, conv.hint)
    assert given.feasible
    result = portfolio.solve(path, time_limit=3, backends=["greedy"], exhaustive=False)
    assert result.warm_start["source"] == "the request's s_hint"
    assert result.warm_start["cost"] == given.cost and result.cost <= given.cost
    # the caller's plan wins over the hint
    result = portfolio.solve(path, time_limit=3, backends=["greedy"], exhaustive=False,
                             warm_start=[0, 0, 0, 1])
    assert result.warm_start["source"] == "the caller's plan"
    out = CliRunner().invoke(cli, ["solve", str(path), "-t", "3", "-b", "greedy", "--no-exhaustive"])
    assert out.exit_code == 0 and "warm start (the request's s_hint)" in out.stderr


@pytest.mark.parametrize("hint, why", [
    ([0, 1], "it has 2 entries but the request has 4 nodes"),
    ([0, 0, 0, 2], "s_hint[3] = 2 is out of range (node 3 has 2 strategies)"),
    ([0, 1, 0, 0], "s_hint[2] = 0 differs from the strategy of the node it follows (1)"),
])
def test_an_invalid_s_hint_is_noted_and_ignored(tmp_path, hint, why):
    path = _request(tmp_path, hint)
    conv = portfolio.api.inputs.read(path)
    assert conv.hint is None and f"s_hint ignored: {why}" in conv.notes
    result = portfolio.solve(path, time_limit=2, backends=["greedy"], exhaustive=False)
    assert result.warm_start is None and result.feasible


# ------------------------------------------------------------------------------------------ the repair
def test_the_repair_fits_memory_and_keeps_what_it_can(example):
    fixed = repair_plan(example, OVER)
    ev = evaluate(example, fixed.plan)
    assert fixed.fits and ev.feasible and not ev.has_forbidden
    assert fixed.memory_moves > 0 and fixed.seconds < 2


def test_open_nodes_take_their_cheapest_strategy_with_their_neighbours(example):
    plan = fill_open(example, np.array([-1, 0, 0, -1, 0, 0, 1, 1]))
    # node 3 first takes 25, its cheapest; node 0 then 40 + 5 + 0 = 45 (its cost, edges to nodes 1
    # and 3), not 10 + 30 + 20 = 60, though 10 is its cheapest cost alone
    assert plan.tolist()[:4] == [0, 0, 0, 1]
    assert repair_plan(example, [-1] * 8).fits
