"""The portfolio runner: best verified plan wins; faulty backends never take the run down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import faulty_backends as fb
from portfolio.backend import Status
from portfolio.cli import bundled_example
from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio.registry import Registry, RegistryError
from portfolio.runner import deadline_plan, run_portfolio

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
    result = run_portfolio(example, backends, time_limit=4.0, workers=len(backends))
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
    ("false-optimum", Status.REJECTED, "claimed optimal"),
    ("false-bound", Status.REJECTED, "claimed lower bound"),
    ("bad-status", Status.REJECTED, "reserved for the runner"),
])
def test_culprit_row_says_what_went_wrong(faulty_run, name, status, words):
    run = faulty_run[0].runs[name]
    assert run.status is status, run
    assert words in run.note


def test_rejected_backends_contribute_nothing(faulty_run):
    result, _ = faulty_run
    rejected = {n for n, r in result.runs.items() if r.status is Status.REJECTED}
    assert rejected and all(i.backend not in rejected for i in result.incumbents)


def test_backend_cut_off_at_deadline_still_contributes(example):
    result = run_portfolio(example, [fb.Hangs()], time_limit=2.0)
    assert result.runs["hangs"].status is Status.TIMEOUT
    assert result.winner == "hangs"
    assert result.cost == evaluate(example, example.min_usage_strategies).cost


def test_new_best_is_shared_with_warm_start_backends(example):
    result = run_portfolio(example, [fb.BruteForce(), fb.WarmStartSpy()], time_limit=3.0, workers=2)
    spy = result.runs["warm-spy"]
    assert spy.status is Status.FEASIBLE, spy.note
    assert spy.best_cost is not None and spy.best_cost >= OPTIMUM


def test_proven_optimum_stops_the_run_early(example):
    t0 = time.time()
    result = run_portfolio(example, [fb.BruteForce(), fb.HangsSilently()], time_limit=20.0, workers=2)
    assert time.time() - t0 < 10.0
    assert result.runs["bruteforce"].status is Status.OPTIMAL
    assert "stopped early" in result.runs["hangs-silently"].note


def test_more_backends_than_workers_queue_up(example):
    result = run_portfolio(example, [fb.Raises(), fb.BruteForce()], time_limit=4.0, workers=1)
    assert result.runs["raises"].status is Status.ERROR
    assert result.runs["bruteforce"].status is Status.OPTIMAL
    assert result.runs["bruteforce"].started >= result.runs["raises"].finished


def test_no_feasible_plan_means_no_solution(example):
    result = run_portfolio(example, [fb.Raises(), fb.Infeasible()], time_limit=2.0)
    assert result.solution is None and result.cost is None


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


def _cli(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PORTFOLIO_PLUGINS="faulty_backends",
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    exe = Path(sys.executable).with_name("portfolio")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_cli_unknown_backend_is_a_usage_error():
    proc = _cli(["solve", "--backends", "nope", "-t", "2"])
    assert proc.returncode == 2
    assert "unknown backend 'nope'" in proc.stderr and "minusage" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_json_result_has_every_backend_and_incumbent(tmp_path):
    out = tmp_path / "result.json"
    proc = _cli(["solve", "--backends", "bruteforce,raises", "-t", "5", "--json", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads(out.read_text())
    assert doc["cost"] == OPTIMUM and doc["winner"] == "bruteforce"
    rows = {r["backend"]: r for r in doc["backends"]}
    assert rows["raises"]["status"] == "error"
    assert rows["bruteforce"]["incumbents"][-1]["cost"] == OPTIMUM
    assert len(doc["solution"]) == 8


def test_cli_exit_code_1_and_empty_list_when_nothing_feasible():
    proc = _cli(["solve", "--backends", "raises", "-t", "2"])
    assert proc.returncode == 1
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
    result = run_portfolio(example, [fb.BruteForceReduced()], time_limit=4.0, presolved=presolved)
    run = result.runs["bruteforce-reduced"]
    assert run.status is Status.OPTIMAL
    assert run.note == f"{presolved.reduced.num_nodes} nodes"
    assert result.cost == OPTIMUM and len(result.solution) == example.num_nodes
    assert evaluate(example, result.solution).cost == OPTIMUM


def test_presolve_proof_of_infeasibility_ends_the_run(example):
    class Proof:
        reduced, infeasible = None, "node 3 has no allowed strategy"

    result = run_portfolio(example, [fb.BruteForce()], time_limit=4.0, presolved=Proof())
    assert result.solution is None
    assert result.infeasible_proven_by.startswith("presolve")
    assert result.runs["bruteforce"].status is Status.UNSUPPORTED
