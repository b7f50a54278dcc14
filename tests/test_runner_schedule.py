"""Issue 12: every chosen backend starts and gets CPU time, cores are told and none idles."""

from __future__ import annotations

import pytest

import faulty_backends as fb
from portfolio.backend import Status
from portfolio.cli import bundled_example
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.runner import POLICIES, run_portfolio
from portfolio.runner.schedule import core_shares


@pytest.fixture(scope="module")
def example():
    return load_problem(bundled_example())


@pytest.mark.parametrize("policy", POLICIES)
def test_more_backends_than_cores_all_get_a_fair_share(example, policy):
    spins = [fb.Spin("spin-a"), fb.Spin("spin-b"), fb.Spin("spin-c")]
    result = run_portfolio(example, spins,
                           RunOptions(time_limit=4.0, workers=1, policy=policy, extra_seeds=False))
    cpu = [result.runs[s.name].cpu_seconds for s in spins]
    assert all(c is not None for c in cpu), cpu
    fair = sum(cpu) / len(cpu)        # of the CPU time the three actually got (machine is shared)
    assert min(cpu) >= fair / 3, cpu
    assert all(result.runs[s.name].status is Status.FEASIBLE for s in spins)


def test_each_worker_is_told_its_cores(example):
    result = run_portfolio(example, [fb.Spin("threaded", threads=True), fb.Spin("single")],
                           RunOptions(time_limit=2.5, workers=3, extra_seeds=False))
    assert result.runs["threaded"].note.startswith("cores=2")
    assert result.runs["single"].note.startswith("cores=1")
    assert result.runs["threaded"].cores == 2


def test_spare_cores_go_to_threaded_backends_round_robin():
    assert core_shares([True, False, True], 7) == [3, 1, 3]
    assert core_shares([False, False], 1) == [1, 1]      # oversubscribed: one each all the same
    assert core_shares([False], 4) == [1]


def test_idle_core_runs_another_seed_of_a_randomized_backend(example):
    result = run_portfolio(example, [fb.RandomSpin(), fb.Raises()],
                           RunOptions(time_limit=6.0, workers=2, seed=5))
    extra = result.runs.get("random-spin+1")
    assert extra is not None, list(result.runs)
    assert extra.backend == "random-spin" and extra.seed == 6
    assert extra.best_cost is not None      # it ran and reported (it may be cut off at the end)
    if extra.status is Status.FEASIBLE:
        assert "seed=6" in extra.note


def test_no_extra_copy_of_a_backend_that_is_not_randomized(example):
    result = run_portfolio(example, [fb.Spin(), fb.Raises()], RunOptions(time_limit=3.0, workers=2))
    assert set(result.runs) == {"spin", "raises"}


def test_presolve_leaving_nothing_to_decide_ends_the_run_at_once():
    from tiny import make_problem

    # strategy 1 of each node costs more and uses more memory: dominance fixes both nodes
    prob = make_problem([[1, 5], [2, 7]], [[0, 2], [1, 3]], [[1, 3], [1, 3]], [[0, 1]], [[0, 1, 1, 2]])
    import time

    t0 = time.time()
    result = run_portfolio(prob, [fb.HangsSilently()], RunOptions(time_limit=20.0, presolve=True))
    assert time.time() - t0 < 10.0
    assert result.cost == 3 and result.solution.tolist() == [0, 0]
    assert result.proof == "proven optimal by presolve (nothing left to decide)"
    assert result.stopped_early and "stopped early" in result.runs["hangs-silently"].note


def test_no_early_stop_keeps_going_after_a_presolve_proof():
    from tiny import make_problem

    prob = make_problem([[1, 5], [2, 7]], [[0, 2], [1, 3]], [[1, 3], [1, 3]], [[0, 1]], [[0, 1, 1, 2]])
    result = run_portfolio(prob, [fb.HangsSilently()],
                           RunOptions(time_limit=3.0, presolve=True, early_stop=False))
    assert result.stopped_early is None and result.cost == 3
    assert result.runs["hangs-silently"].status is Status.TIMEOUT
