"""The portfolio runner: best verified plan wins; faulty backends never take the run down."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import faulty_backends as fb
from portfolio.backend import Status
from portfolio.cli import bundled_example
from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio.registry import Registry, RegistryError
from portfolio.options import RunOptions
from portfolio.runner import deadline_plan, run_portfolio
from portfolio.testing import CliResult, PortfolioCli

TESTS = Path(__file__).resolve().parent
OPTIMUM = 305  # of the bundled example, by brute force (see test_evaluate)


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


@pytest.fixture(scope="module")
def faulty_run(example):
    """One run with every faulty backend beside an honest enumeration, all in parallel."""
    t0 = time.time()
    backends = [fb.Enumerate(), *fb.FAULTY]
    result = run_portfolio(example, backends, RunOptions(time_limit=4.0, workers=len(backends)))
    return result, time.time() - t0


def test_honest_exact_backend_wins_despite_faulty_ones(faulty_run, example):
    result, _ = faulty_run
    assert result.winner == "enumerate"
    assert result.cost == OPTIMUM
    assert evaluate(example, result.solution).cost == OPTIMUM


def test_run_finishes_before_its_deadline(faulty_run):
    _, wall = faulty_run
    assert wall < 4.0


@pytest.mark.parametrize("name, status, words", [
    ("raises", Status.ERROR, "boom in solve"),
    ("hangs", Status.TIMEOUT, "deadline"),
    ("hangs-silently", Status.TIMEOUT, "deadline"),
    ("segfaults", Status.CRASHED, "SIGSEGV"),
    ("exits", Status.CRASHED, "SIGKILL"),
    ("wrong-length", Status.REJECTED, "9 entries"),
    ("out-of-range", Status.REJECTED, "out of range"),
    ("infeasible", Status.REJECTED, "infeasible plan reported as feasible"),
    ("false-optimum", Status.FEASIBLE, "false claim: optimal at 465"),
    ("false-bound", Status.NO_SOLUTION, "false claim: lower bound 1,000,000,000"),
    ("bad-status", Status.REJECTED, "reserved for the runner"),
])
def test_culprit_row_says_what_went_wrong(faulty_run, name, status, words):
    run = faulty_run[0].runs[name]
    assert run.status is status, run
    assert words in run.note


def test_an_exception_keeps_its_whole_traceback(faulty_run):
    # the note shows the last line; the row (and --json) keep every frame, the plugin's included
    run = faulty_run[0].runs["raises"]
    assert run.note == "exception: RuntimeError: boom in solve"
    assert run.traceback.startswith("Traceback (most recent call last):")
    assert "faulty_backends.py" in run.traceback and "in solve" in run.traceback
    assert 'raise RuntimeError("boom in solve")' in run.traceback
    assert run.to_dict()["traceback"] == run.traceback
    assert faulty_run[0].runs["enumerate"].traceback is None


def test_every_kept_plan_was_verified_and_refused_plans_are_not_kept(faulty_run, example):
    result, _ = faulty_run
    kept = [r for r in result.runs.values() if r.best_solution is not None]
    assert {r.name for r in kept} >= {"enumerate", "hangs", "false-optimum"}
    for run in kept:
        ev = evaluate(example, run.best_solution)
        assert ev.feasible and ev.cost == run.best_cost, run.name
    for name in ("infeasible", "out-of-range", "wrong-length"):
        assert result.runs[name].best_cost is None and not result.runs[name].incumbents


def test_false_claims_are_named_and_lose_standing(faulty_run):
    result, _ = faulty_run
    false = {c.source for c in result.claims if c.false}
    assert false == {"false-optimum", "false-bound"}
    assert result.proof is None  # no standing bound meets 305


def test_backend_cut_off_at_deadline_still_contributes(example):
    result = run_portfolio(example, [fb.Hangs()], RunOptions(time_limit=2.0))
    assert result.runs["hangs"].status is Status.TIMEOUT
    assert result.winner == "hangs"
    assert result.cost == evaluate(example, example.min_usage_strategies).cost


def test_new_best_is_shared_with_warm_start_backends(example):
    result = run_portfolio(example, [fb.BruteForce(), fb.WarmStartSpy()],
                           RunOptions(time_limit=3.0, workers=2, early_stop=False))
    spy, brute = result.runs["warm-spy"], result.runs["bruteforce"]
    assert spy.status is Status.FEASIBLE, spy.note
    # the spy returns the first shared plan it reads: it can only be one of bruteforce's
    assert spy.best_cost in {i.cost for i in brute.incumbents}


def test_proven_optimum_stops_the_run_early(example):
    t0 = time.time()
    result = run_portfolio(example, [fb.BruteForce(), fb.HangsSilently()],
                           RunOptions(time_limit=20.0, workers=2))
    assert time.time() - t0 < 10.0
    assert result.runs["bruteforce"].status is Status.OPTIMAL
    assert "stopped early" in result.runs["hangs-silently"].note
    assert result.stopped_early and result.proof == "claimed optimal by bruteforce"


def test_no_early_stop_runs_to_the_deadline(example):
    t0 = time.time()
    result = run_portfolio(example, [fb.BruteForce(), fb.HangsSilently()],
                           RunOptions(time_limit=3.0, workers=2, early_stop=False))
    assert time.time() - t0 > deadline_plan(0.0, 3.0)[1] - 0.2  # ran until the kill time
    assert result.stopped_early is None and result.cost == OPTIMUM


def test_failing_backends_still_get_the_runners_fallback_plan(example):
    result = run_portfolio(example, [fb.Raises(), fb.Infeasible()],
                           RunOptions(time_limit=2.0, fallback=True))
    assert result.winner == "fallback"
    assert result.cost == evaluate(example, example.min_usage_strategies).cost


def test_without_fallback_failing_backends_leave_no_answer(example):
    result = run_portfolio(example, [fb.Raises(), fb.Infeasible()],
                           RunOptions(time_limit=2.0, fallback=False))
    assert result.solution is None and result.winner is None


def test_memory_infeasible_instance_has_no_plan_and_a_proof():
    from tiny import make_problem
    from portfolio.problem import Capacity

    prob = make_problem([[1, 2], [3]], [[0, 2], [1, 3]], [[4, 5], [3]], [[0, 1]], [[0, 0]],
                        capacity=Capacity.uniform(6))
    result = run_portfolio(prob, [fb.BruteForce()], RunOptions(time_limit=3.0))
    assert result.solution is None and result.cost is None
    assert result.infeasible_proven_by.startswith("memory check")


def test_deadline_plan_keeps_order():
    soft, kill, end = deadline_plan(100.0, 60.0)
    assert 100.0 < soft < kill < end == 160.0


def test_registry_unknown_name_lists_known_ones():
    registry = Registry(plugins=[fb], load_entry_points=False)
    with pytest.raises(RegistryError, match="known backends: .*bruteforce"):
        registry.get("nope")


def test_registry_skips_test_backends_by_default():
    registry = Registry(plugins=[fb], load_entry_points=False)
    assert registry.select(None) == []
    assert [b.name for b in registry.select(["raises"])] == ["raises"]


def _cli(args: list[str], timeout: float = 60) -> CliResult:
    """``portfolio *args`` with the fake backends of tests/faulty_backends.py registered."""
    return PortfolioCli(plugins="faulty_backends", path=[TESTS]).run(*args, timeout=timeout)


def test_cli_unknown_backend_is_a_usage_error():
    proc = _cli(["solve", "--backends", "nope", "-t", "2"])
    assert proc.returncode == 2
    assert "unknown backend 'nope'" in proc.stderr and "minusage" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_json_result_has_every_backend_and_incumbent(tmp_path):
    out = tmp_path / "result.json"
    proc = _cli(["solve", "--backends", "bruteforce,raises", "-t", "5", "--json", "-o", str(out),
                 "--no-exhaustive"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads(out.read_text())
    assert doc["cost"] == OPTIMUM and doc["winner"] == "bruteforce"
    rows = {r["backend"]: r for r in doc["backends"]}
    assert rows["raises"]["status"] == "error"
    assert rows["bruteforce"]["incumbents"][-1]["cost"] == OPTIMUM
    assert len(doc["solution"]) == 8


def test_cli_exit_code_1_and_empty_list_when_nothing_feasible(tmp_path):
    path = tmp_path / "tight.json"
    path.write_text(json.dumps({"problem": {"name": "tight", "nodes": {
        "intervals": [[0, 2], [1, 3]], "costs": [[1, 2], [3]], "usages": [[4, 5], [3]]},
        "edges": {"nodes": [[0, 1]], "costs": [[0, 0]]}, "usage_limit": 6}}))
    proc = _cli(["solve", str(path), "--backends", "raises", "-t", "2"])
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_cli_finishes_on_time_on_instance_a_with_a_backend_that_never_returns(bench_dir):
    path = bench_dir / "asplos-2025-iopddl-A.json.gz"
    limit = 8.0
    t0 = time.time()
    proc = _cli(["solve", str(path), "-t", str(limit), "--backends", "minusage,hangs-silently", "-q"])
    wall = time.time() - t0
    assert proc.returncode == 0, proc.stderr
    assert wall <= limit + 1.5
    plan = json.loads(proc.stdout.strip().splitlines()[-1])
    assert evaluate(load_problem(path), plan).feasible


def test_reduced_backends_solve_the_presolved_problem_and_plans_map_back(example):
    from portfolio.presolve import presolve

    presolved = presolve(example)
    assert presolved.reduced.num_nodes < example.num_nodes
    result = run_portfolio(example, [fb.BruteForceReduced()],
                           RunOptions(time_limit=4.0), presolved=presolved)
    run = result.runs["bruteforce-reduced"]
    assert run.status is Status.OPTIMAL
    assert run.note == f"{presolved.reduced.num_nodes} nodes"
    assert result.cost == OPTIMUM and len(result.solution) == example.num_nodes
    assert evaluate(example, result.solution).cost == OPTIMUM


def test_presolve_infeasibility_is_not_a_proof_backends_get_the_original(example):
    class NoForbiddenFreePlan:
        reduced, infeasible = None, "node 3 has no allowed strategy"

    result = run_portfolio(example, [fb.BruteForceReduced()],
                           RunOptions(time_limit=4.0), presolved=NoForbiddenFreePlan())
    assert result.cost == OPTIMUM and result.infeasible_proven_by is None
    assert result.runs["bruteforce-reduced"].note == f"{example.num_nodes} nodes"
