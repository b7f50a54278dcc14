"""``portfolio.solve`` across a Dask cluster behaves like ``portfolio solve --dask-*``
(docs/distributed.md, docs/api.md): a verified answer on time with a ``cluster`` summary naming the
shards, an unreachable scheduler handled as the CLI handles it (``fail``: one clear error; ``local``:
a warning and a local run), a worker killed mid-run survived, nothing on stdout and nothing left
running once it returns. Only localhost is used: the call's own ``dask_workers`` cluster, or ``dask
scheduler``/``dask worker`` commands (tests/dask_procs.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import threading
import time

import pytest

import portfolio
from conftest import bench_path, bundled_example_path, extra, live_children
from dask_procs import (shards_under, MARK_ENV, alive, closed_port, marked_env,
                        marked_processes, new_mark, run_command, shard_processes, start_dask,
                        verified_cost, wait_until)

extra("distributed")   # a test extra: skipped without it, failed under CI

ON_TIME = 0.5
"""Seconds a call may take past its time limit (measured around the call, loading included)."""

AFTERLIFE = 2.0
"""Seconds after the call returned within which every process it started must be gone."""

UNPROVEN = dict(backends=["greedy", "minusage", "localsearch"], early_stop=False)
"""For a fault mid-run: no backend that proves optimality, so the run goes on to its deadline."""


def _timed(**kwargs) -> tuple[portfolio.SolveResult, float]:
    t0 = time.monotonic()
    result = portfolio.solve(**kwargs)
    return result, time.monotonic() - t0


def _check_answer(result: portfolio.SolveResult, wall: float, path, limit: float) -> None:
    assert wall <= limit + ON_TIME, f"answered after {wall:.2f} s of {limit} s"
    assert result.feasible and result.plan, result
    assert verified_cost(path, result.plan) == result.cost


# ------------------------------------------------------------------------------------------ answers
@pytest.mark.slow
def test_dask_workers_answers_like_the_cli(monkeypatch, capfd):
    """``solve(path, dask_workers=2)`` and ``portfolio solve path --dask-workers 2``: both answer on
    time with a verified plan and a ``cluster`` summary of the same shape and the same shards."""
    path, limit = bench_path("G"), 10.0
    mark = new_mark()
    monkeypatch.setenv(MARK_ENV, mark)   # the local cluster and its shards carry it
    before = live_children()
    result, wall = _timed(problem=path, time_limit=limit, dask_workers=2)
    _check_answer(result, wall, path, limit)
    info = result.cluster
    assert info is not None and info["scheduler"] == "local (2 workers)"
    assert info["state"] not in ("unreachable", "lost") and info["error"] is None, info
    assert len(info["shards"]) == 2 and all(s["failed"] is None for s in info["shards"]), info
    labels = {s["label"] for s in info["shards"]}
    assert labels <= set(result.run.runs), (labels, list(result.run.runs))   # a row per shard
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["cluster"]["run_id"] == info["run_id"] and doc["cluster"]["shards"]
    assert capfd.readouterr().out == ""
    assert wait_until(lambda: not marked_processes(mark), AFTERLIFE), \
        f"left behind: {sorted(marked_processes(mark))}"
    assert live_children() <= before

    cli = run_command("portfolio", "solve", path, "-t", limit, "--dask-workers", 2, "--json", "-q",
                      env=marked_env(new_mark()), timeout=60)
    assert cli.code == 0, cli.stderr[-3000:]
    cli_info = cli.json()["cluster"]
    assert set(cli_info) == set(info)
    shape = lambda shards: sorted((s["label"], tuple(s["backends"]), s["seed"])   # noqa: E731
                                  for s in shards)
    assert shape(cli_info["shards"]) == shape(info["shards"])


# ------------------------------------------------------------------------------------------ unreachable
def test_an_unreachable_scheduler_with_fail_raises_one_clear_error(capfd):
    from portfolio.distributed.session import ClusterUnavailable

    address = f"tcp://127.0.0.1:{closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(portfolio.ProblemError) as caught:
        portfolio.solve(bench_path("B"), time_limit=5, dask_scheduler=address,
                        dask_unreachable="fail")
    assert time.monotonic() - t0 < 3.0, "took too long to give up"
    assert isinstance(caught.value, ClusterUnavailable)
    message = str(caught.value)
    assert message.startswith(f"cannot reach the Dask scheduler at {address}: ") and "\n" not in message
    assert capfd.readouterr().out == ""


def test_an_unreachable_scheduler_by_default_runs_here_and_warns(caplog, capfd):
    path, limit = bench_path("B"), 4.0
    address = f"tcp://127.0.0.1:{closed_port()}"
    with caplog.at_level(logging.WARNING, logger="portfolio"):
        result, wall = _timed(problem=path, time_limit=limit, dask_scheduler=address)
    _check_answer(result, wall, path, limit)
    said = [r.getMessage() for r in caplog.records if address in r.getMessage()]
    assert len(said) == 1 and "this machine" in said[0], said
    assert result.cluster is None and not any(n.startswith("shard-") for n in result.run.runs)
    assert capfd.readouterr().out == ""


def test_a_local_cluster_is_not_started_for_a_short_budget(monkeypatch, caplog):
    from portfolio.distributed.link import LOCAL_MIN_SECONDS

    path, limit = bench_path("B"), 2.0
    assert limit < LOCAL_MIN_SECONDS
    mark = new_mark()
    monkeypatch.setenv(MARK_ENV, mark)
    with caplog.at_level(logging.WARNING, logger="portfolio"):
        result, wall = _timed(problem=path, time_limit=limit, dask_workers=2)
    _check_answer(result, wall, path, limit)
    said = [r.getMessage() for r in caplog.records if "cluster" in r.getMessage()]
    assert len(said) == 1 and "too short" in said[0] and "this machine" in said[0], said
    assert result.cluster is None
    assert wait_until(lambda: not marked_processes(mark), AFTERLIFE)


# ------------------------------------------------------------------------------------------ a fault
@pytest.mark.slow
def test_a_worker_killed_mid_run_still_gives_a_verified_answer_on_time(tmp_path, capfd):
    path, limit = bench_path("G"), 10.0
    cluster = start_dask(2, tmp_path)
    try:
        pids = cluster.worker_pids
        victim = sorted(pids)[0]   # equal threads: shard 0 (every backend) goes to the first worker
        t0 = time.monotonic()
        killed: dict = {}

        def kill_when_running() -> None:
            if not wait_until(lambda: all(shards_under(p) for p in pids.values()), limit - 4):
                return
            time.sleep(max(0.0, 3.5 - (time.monotonic() - t0)))
            killed["shards"] = shards_under(pids[victim])
            killed["at"] = time.monotonic() - t0
            os.kill(pids[victim], signal.SIGKILL)

        killer = threading.Thread(target=kill_when_running)
        killer.start()
        result = portfolio.solve(path, time_limit=limit, dask_scheduler=cluster.address, **UNPROVEN)
        wall = time.monotonic() - t0
        killer.join()
        assert killed.get("shards"), "the victim's shard was not running when its worker was killed"
        _check_answer(result, wall, path, limit)
        info = result.cluster
        assert killed["at"] < result.elapsed, "the run was over before the kill"
        shard0 = next(s for s in info["shards"] if s["index"] == 0)
        assert shard0["worker"] == victim
        row = result.run.runs[shard0["label"]]
        assert row.status.value in ("crashed", "timeout"), (row.status, row.note)
        left = lambda: shard_processes(run_id=info["run_id"]) | {   # noqa: E731
            p for p in killed["shards"] if alive(p)}
        assert wait_until(lambda: not left(), AFTERLIFE), f"outlived the run: {sorted(left())}"
        survivor = next(a for a in pids if a != victim)
        assert alive(pids[survivor]), "the run ended a worker of the user's cluster"
        assert capfd.readouterr().out == ""
    finally:
        cluster.stop()


# ------------------------------------------------------------------------------------------ bad options
@pytest.mark.parametrize("kwargs, message", [
    (dict(dask_workers=0), "dask_workers: expected a positive integer, got 0"),
    (dict(dask_workers=2, dask_scheduler="tcp://127.0.0.1:1"),
     "dask_scheduler and dask_workers exclude each other"),
    (dict(dask_workers=2, dask_problem="ftp"), "dask_problem: expected one of auto, path, scatter"),
    (dict(dask_workers=2, dask_unreachable="maybe"), "dask_unreachable: expected one of local, fail"),
    (dict(dask_scheduler=""), "dask_scheduler: expected an address"),
    (dict(dask_workers=2, problem={"problem": {}}), "dask_workers: a cluster solve needs the problem "
                                                     "as a file path"),
])
def test_bad_cluster_options_raise_problem_error_naming_the_option(kwargs, message):
    kwargs = {"problem": bundled_example_path(), "time_limit": 5, **kwargs}
    with pytest.raises(portfolio.ProblemError, match=re.escape(message)):
        portfolio.solve(kwargs.pop("problem"), **kwargs)
