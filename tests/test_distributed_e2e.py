"""One solve across a Dask cluster, end to end through the commands a user types: a ``dask
scheduler`` and a ``dask worker --nworkers 2`` on localhost, then ``iopddl FILE T --dask-scheduler
ADDR`` and ``portfolio solve FILE --dask-scheduler ADDR --json``. The answer verifies, comes on time,
the shards are named in the result, and no shard process outlives a run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import bench_path, extra
from dask_procs import (DaskCluster, run_command, shard_processes, start_dask, verified_cost,
                        wait_until)

extra("distributed")   # a test extra: skipped without it, failed under CI

LIMIT = 8.0
ON_TIME = 0.5
AFTERLIFE = 2.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> DaskCluster:
    bench_path("G")   # skip (or fail under CI) before starting anything
    started = start_dask(2, tmp_path_factory.mktemp("dask"))
    try:
        yield started
    finally:
        started.stop()


def _no_shard_left(cluster: DaskCluster) -> None:
    assert wait_until(lambda: not shard_processes(mark=cluster.mark), AFTERLIFE), \
        f"shard processes outlived the run: {sorted(shard_processes(mark=cluster.mark))}"


@pytest.mark.slow
def test_iopddl_answers_on_time_through_the_cluster(cluster):
    problem = bench_path("G")
    result = run_command("iopddl", problem, LIMIT, "--dask-scheduler", cluster.address, timeout=60)
    assert result.code == 0, result.stderr[-3000:]
    assert result.wall <= LIMIT + ON_TIME, f"answered after {result.wall:.2f} s of {LIMIT} s"
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout[-2000:]   # the contest drop-in prints the plan only
    verified_cost(problem, result.plan())
    _no_shard_left(cluster)


@pytest.mark.slow
@pytest.mark.parametrize("transfer", ["auto", "scatter"])
def test_solve_json_names_the_shards_of_every_worker(cluster, transfer):
    problem = bench_path("G")
    result = run_command("portfolio", "solve", problem, "-t", LIMIT, "--dask-scheduler",
                         cluster.address, "--dask-problem", transfer, "--json", "-q", timeout=60)
    assert result.code == 0, result.stderr[-3000:]
    assert result.wall <= LIMIT + ON_TIME, f"answered after {result.wall:.2f} s of {LIMIT} s"
    doc = result.json()
    assert verified_cost(problem, doc["solution"]) == doc["cost"]

    info = doc["cluster"]
    assert info["scheduler"] == cluster.address
    assert info["state"] not in ("unreachable", "lost") and info["error"] is None, info
    workers = set(cluster.worker_pids)
    shards = info["shards"]
    assert {s["worker"] for s in shards} == workers and len(shards) == len(workers)
    rows = {row["backend"]: row for row in doc["backends"]}
    for shard in shards:
        assert shard["label"] == f"shard-{shard['index']}@127.0.0.1"
        row = rows[shard["label"]]   # its own row in the table: where it ran, what it ran
        assert row["note"].startswith(f"{shard['worker']} (1 thread): {', '.join(shard['backends'])}")
        assert row["seed"] == 1000 * shard["index"]
        assert shard["failed"] is None, shard   # (its summary comes only if it ended first)
        assert str(shard["index"]) in {str(k) for k in info["ready"]}, info["ready"]   # it loaded
    first = next(s for s in shards if s["index"] == 0)
    ran = set().union(*(s["backends"] for s in shards))
    assert {"greedy", "localsearch", "toulbar2", "cpsat"} <= ran   # the default set, spread
    assert "greedy" in first["backends"] and all("greedy" not in s["backends"]
                                                 for s in shards if s["index"] != 0)

    # how the problem reached the workers: the same file, or its bytes sent once to each
    size = Path(problem).stat().st_size
    if transfer == "scatter":
        assert set(info["placement"].values()) == {"scatter"}
        assert info["traffic"]["scattered_bytes"] == size * len(workers)
    else:
        assert set(info["placement"].values()) == {"path"}   # same machine: they read the file
        assert info["traffic"]["scattered_bytes"] == 0
    assert info["traffic"]["messages_in"] > 0 and info["published"]
    _no_shard_left(cluster)
    assert all(os.path.exists(f"/proc/{pid}") for pid in cluster.worker_pids.values()), \
        "a run ended a worker of the user's cluster"
