"""Deterministic mode (issue 31): the same plan for the same problem, seed and work, with one or two
workers, on an idle or a loaded machine; plans exchanged at fixed points in a fixed order; the
safety net; the choice of backends; the CLI's and the API's errors.

The backends are the small deterministic ones of tests/det_backends.py, so that these tests do not
depend on how far the built-in backends have come.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from click.testing import CliRunner

import det_backends as db
from conftest import TESTS, bundled_example_path
from portfolio.api import choose_backends, solve
from portfolio.cli import _iopddl, cli
from portfolio.errors import ProblemError
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io import load_problem, write_problem
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from portfolio.runner.result import plan_hash
from portfolio.testing import PortfolioCli, cpu_hog
from tiny import make_problem

SEARCHES = "det-block,det-edge,det-node"


def _searches() -> list:
    return [cls() for cls in db.SEARCHES]


def _run(problem, backends, work: int = 24_000, **options):
    options.setdefault("time_limit", 30)
    return run_portfolio(problem, backends, RunOptions(deterministic=True, work=work, **options))


@pytest.fixture(scope="module")
def small():
    return generate_problem(150, seed=1)


@pytest.fixture(scope="module")
def mid():
    return generate_problem(2000, seed=3)


# ------------------------------------------------------------------------------ the same plan
@pytest.mark.parametrize("instance, work, presolve", [("small", 24_000, False),
                                                      ("mid", 45_000, True)])
def test_the_same_plan_with_one_or_two_workers_idle_or_loaded(instance, work, presolve, request):
    problem = request.getfixturevalue(instance)
    # with the adaptive rule on: the work it moves at its points moves the same way every time
    results = [_run(problem, _searches(), work, workers=1, presolve=presolve, adaptive=True),
               _run(problem, _searches(), work, workers=2, presolve=presolve, adaptive=True)]
    with cpu_hog():
        results.append(_run(problem, _searches(), work, workers=2, presolve=presolve,
                            adaptive=True))
    hashes = {r.plan_hash for r in results}
    assert len(hashes) == 1, [(r.cost, r.plan_hash) for r in results]
    for r in results:
        assert r.deterministic["complete"], r.deterministic
        # the adaptive rule moves work between the three at its points: the last point is the
        # largest share's (work // 3 // 1000 + 1 with the rule off)
        assert r.deterministic["points"] == max(r.deterministic["work_per_backend"].values()) \
            // 1000 + 1
        assert sum(r.deterministic["work_per_backend"].values()) == pytest.approx(work, abs=3)
        assert r.plan_hash == plan_hash(r.solution)
        assert evaluate(problem, r.solution).cost == r.cost
    # the rows too: every backend found the same plans at the same points
    assert len({tuple((n, run.best_cost) for n, run in r.runs.items()) for r in results}) == 1


def test_the_exchange_happens_and_a_backend_builds_on_another_ones_plan(small):
    result = _run(small, _searches())
    built_on = [i for run in result.runs.values() for i in run.incumbents if db.BUILT_ON in i.note]
    assert built_on, "no backend continued from the portfolio's incumbent"
    alone = _run(small, [db.NodeSearch()], work=8_000)   # the same share, without the others
    assert alone.runs["det-node"].best_cost != result.runs["det-node"].best_cost


def test_the_fixed_order_decides_between_equal_plans_not_the_arrival():
    """Two plans of equal cost at point 1: det-twin-a's arrives 0.4 s later, but its name comes
    first, so it is the incumbent (a timed run would keep the first to arrive)."""
    problem = make_problem([[5, 5]], [(0, 1)], [[1, 1]], [], [])
    result = _run(problem, [db.TwinB(), db.TwinA()], work=4_000)
    assert result.deterministic["complete"]
    assert result.winner == "det-twin-a" and list(result.solution) == [1]


def test_a_step_over_several_points_takes_part_in_each(small):
    result = _run(small, [db.Jumper(), db.NodeSearch()], work=16_000)
    assert result.deterministic["complete"], result.deterministic
    assert result.deterministic["points"] == 9
    assert result.runs["det-jumper"].note == "saw an incumbent 3 times"
    assert result.winner == "det-node"


def test_an_exact_claim_ends_the_run_at_its_point():
    problem = load_problem(bundled_example_path())
    results = [_run(problem, [db.Exact(), db.NodeSearch()], work=20_000) for _ in range(2)]
    for result in results:
        assert result.cost == 305 and result.stopped_early
        assert result.deterministic["complete"] and result.deterministic["points"] == 4
    assert results[0].plan_hash == results[1].plan_hash


def test_backends_that_do_not_support_the_mode_are_left_out_with_a_note(small):
    result = _run(small, [db.NodeSearch(), db.NotDeterministic()], work=4_000)
    assert result.deterministic["left_out"] == ["timed-toy"]
    assert list(result.runs) == ["det-node"]
    assert result.to_dict()["deterministic"]["left_out"] == ["timed-toy"]


def test_a_timed_run_says_nothing_of_determinism_but_hashes_its_plan(small):
    result = run_portfolio(small, [db.NotDeterministic()], RunOptions(time_limit=5))
    doc = result.to_dict()
    assert doc["deterministic"] is None and doc["plan_hash"] == plan_hash(result.solution)
    assert len(doc["plan_hash"]) == 16


# ------------------------------------------------------------------------------ the safety net
@pytest.mark.parametrize("hostile, words", [
    (db.NeverSpends, "wall-clock limit fired at exchange point 8 of 8: det-never-spends returned "
                     "at the backends' deadline, at its point 1"),
    (db.SleepsAtPoint, "wall-clock limit fired at exchange point 2 of 8"),
    (db.CrashesAtPoint, "det-crashes ended without its final word at exchange point 2: worker "
                        "died by signal SIGKILL"),
])
def test_a_hostile_backend_costs_the_guarantee_not_the_answer(small, hostile, words):
    t0 = time.monotonic()
    result = _run(small, [db.NodeSearch(), hostile()], work=14_000, time_limit=3)
    assert time.monotonic() - t0 < 3.0
    assert not result.deterministic["complete"]
    # how far the well-behaved backend got before the clock fired depends on the machine's load
    assert re.fullmatch(re.escape(words).replace(r"point\ 8\ of", r"point\ \d+\ of"),
                        result.deterministic["reason"]), result.deterministic["reason"]
    assert result.solution is not None and evaluate(small, result.solution).feasible
    assert result.cost <= result.runs["det-node"].best_cost


# ------------------------------------------------------------------------------ the worker's meter
def test_spend_refuses_negative_and_non_finite_units(small):
    class Odd(db.NodeSearch):
        name = "det-odd"

        def solve(self, problem, deadline, seed, warm_start, report):
            report.work.spend(float("nan"))

    result = _run(small, [Odd()], work=2_000)
    assert result.runs["det-odd"].status.value == "error"
    assert "work units must be a finite number >= 0" in result.runs["det-odd"].note
    assert result.deterministic["complete"]   # an exception is the backend's own final word


# ------------------------------------------------------------------------------ the CLI
def _cli(*args, plugins: bool = True):
    env = {"COLUMNS": "1000"}
    if plugins:
        env["PORTFOLIO_PLUGINS"] = "det_backends"
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


@pytest.mark.parametrize("value, words", [("0", "0 is not in the range x>=1"),
                                          ("-3", "-3 is not in the range x>=1"),
                                          ("abc", "'abc' is not a valid integer")])
def test_a_bad_work_value_is_one_line_and_exit_2(value, words):
    for out in (_cli("solve", "--work", value), CliRunner().invoke(_iopddl, ["x.json", "5", "--work", value])):
        assert out.exit_code == 2, out.output
        lines = [line for line in out.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "--work" in lines[0] and words in lines[0], out.output


def test_a_named_backend_without_the_mode_is_refused_with_exit_2():
    out = _cli("solve", "--deterministic", "-b", "det-node,timed-toy", "-t", "5", "-q")
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        "error: deterministic mode: timed-toy does not support it; backends that support it: "
        + out.output.split("backends that support it: ")[1].strip()]
    assert "det-node" in out.output.split("backends that support it: ")[1]


def test_a_cluster_solve_is_refused_in_deterministic_mode():
    out = _cli("solve", "--work", "1000", "--dask-workers", "2", plugins=False)
    assert out.exit_code == 2
    assert out.output.strip() == ("error: deterministic: not supported in a cluster solve "
                                  "(dask_scheduler, dask_workers); run it on one machine")


def _det(cli: PortfolioCli) -> PortfolioCli:
    """Commands with the deterministic test backends (tests/det_backends.py) registered."""
    return cli.configured(plugins="det_backends", path=[TESTS], timeout=60)


def test_the_cli_gives_the_same_plan_and_says_its_hash(small, tmp_path, portfolio_cli):
    path = tmp_path / "small.json"
    write_problem(small, path)
    docs = []
    for workers in ("1", "2"):
        proc = _det(portfolio_cli).run("solve", path, "--work", "24000", "-b", SEARCHES, "-w",
                                       workers, "--json")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["deterministic"]["complete"] and doc["deterministic"]["work"] == 24_000
        assert f"plan {doc['plan_hash']}" in proc.stderr
        assert "not the deterministic answer" not in proc.stderr
        docs.append(doc)
    assert docs[0]["plan_hash"] == docs[1]["plan_hash"] and docs[0]["solution"] == docs[1]["solution"]
    direct = _run(small, _searches())
    assert direct.plan_hash == docs[0]["plan_hash"]


def test_the_cli_says_when_the_answer_is_not_the_deterministic_one(small, tmp_path,
                                                                   portfolio_cli):
    path = tmp_path / "small.json"
    write_problem(small, path)
    proc = _det(portfolio_cli).run("solve", path, "--work", "14000", "-b", "det-node,det-sleeps",
                                   "-t", "4", "-q")
    assert proc.returncode == 0, proc.stderr
    assert ("warning: not the deterministic answer: wall-clock limit fired at exchange point 2"
            in proc.stderr)
    assert evaluate(small, json.loads(proc.stdout)).feasible


# ------------------------------------------------------------------------------ the API
def test_the_api_gives_the_same_answer_and_the_same_errors(small, monkeypatch, caplog):
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "det_backends")
    result = solve(small, backends=SEARCHES, work=24_000, presolve=False)
    assert result.plan_hash == _run(small, _searches()).plan_hash
    assert result.deterministic["complete"] and result.to_dict()["plan_hash"] == result.plan_hash
    shares = result.to_dict()["deterministic"]["work_per_backend"]
    assert result.to_dict()["deterministic"]["points"] == max(shares.values()) // 1000 + 1
    with pytest.raises(ProblemError, match="^work: expected a positive integer number of work "
                                           "units, got 0$"):
        solve(small, backends=SEARCHES, work=0)
    with pytest.raises(ProblemError, match="^deterministic mode: timed-toy does not support it; "):
        solve(small, backends=["det-node", "timed-toy"], deterministic=True)
    with pytest.raises(ProblemError, match="^deterministic: not supported in a cluster solve"):
        solve(str(bundled_example_path()), deterministic=True, dask_workers=2)
    caplog.clear()
    late = solve(small, backends="det-node,det-sleeps", work=14_000, time_limit=3, presolve=False)
    assert not late.deterministic["complete"]
    assert any("not the deterministic answer: wall-clock limit fired" in r.message
               for r in caplog.records)


def test_the_default_set_leaves_out_the_backends_without_the_mode(monkeypatch):
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "det_backends")
    lines: list[str] = []
    chosen = choose_backends(None, 10, warn=lines.append, deterministic=True,   # a config's
                             add_to_default=("det-node", "det-edge", "det-block", "timed-toy"))
    names = {b.name for b in chosen}
    assert {"det-node", "det-edge", "det-block", "timed-toy"} <= names   # the runner leaves out
    notes = [line for line in lines if line.startswith("deterministic mode: left out ")]
    assert len(notes) == 1 and "timed-toy" in notes[0], lines
    assert "det-node" not in notes[0]


def test_no_deterministic_backend_in_the_default_set_is_an_error(monkeypatch):
    import portfolio.runner.exchange as exchange

    monkeypatch.setattr(exchange, "deterministic_split", lambda bs: ([], [b.name for b in bs]))
    with pytest.raises(ProblemError, match="^deterministic mode: no backend of the default set "
                                           "supports it; backends that support it: "):
        choose_backends(None, 10, warn=lambda line: None, deterministic=True)


def test_points_held_for_presolve_are_settled_when_it_ends(small):
    """Backends that end before their first point, while presolve runs: their plans count at point
    1, settled once presolve has finished, and the run is complete."""
    class Brief(db.NodeSearch):
        name = "det-brief"

        def solve(self, problem, deadline, seed, warm_start, report):
            report(np.array(problem.min_usage_strategies), "least memory")
            report.work.spend(10)
            return super().solve(problem, deadline, seed, warm_start, report)

    result = _run(small, [Brief()], work=500, presolve=True)
    assert result.deterministic["complete"] and result.deterministic["points"] == 1
    assert result.winner == "det-brief"


def test_a_cluster_hook_is_refused_in_deterministic_mode(small):
    with pytest.raises(ValueError, match="deterministic mode takes no hold or keep_open"):
        run_portfolio(small, [db.NodeSearch()], RunOptions(work=1000), keep_open=lambda: False)
