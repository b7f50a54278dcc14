"""`portfolio bench`: sweeps that stream verified rows, survive faulty tasks, resume, and run on Dask.

Tiny instances and limits of 1-2 s; loky workers are shared by the tests (joblib reuses its pool).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import extra
from portfolio import bench
from portfolio.bench import BenchError, Task, expand_instances, parse_seeds, resolve_instances, run_sweep
from portfolio.cli import bundled_example, cli
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io import load_problem, read_solution, write_problem

TESTS = Path(__file__).resolve().parent
LIMIT = 3.0


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    """A folder with the bundled example and a generated 40-node instance."""
    folder = tmp_path_factory.mktemp("instances")
    (folder / "example.json").write_bytes(bundled_example().read_bytes())
    write_problem(generate_problem(40, strategies=4, seed=3), folder / "gen40.json.gz")
    return folder


@pytest.fixture
def faulty_plugins(monkeypatch):
    """The test backends of tests/faulty_backends.py, for this process and the workers it starts."""
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "faulty_backends")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS),
                                                                    os.environ.get("PYTHONPATH")])))


# ------------------------------------------------------------------------------------------ inputs
def test_expand_instances_files_folders_globs(instances, tmp_path):
    example, gen = instances / "example.json", instances / "gen40.json.gz"
    assert expand_instances([instances]) == [example.resolve(), gen.resolve()]
    assert expand_instances([str(instances / "*.gz"), example]) == [gen.resolve(), example.resolve()]
    assert expand_instances([example, example]) == [example.resolve()]
    with pytest.raises(BenchError, match="no such file"):
        expand_instances([tmp_path / "nope.json"])
    with pytest.raises(BenchError, match="matches no"):
        expand_instances([str(tmp_path / "*.json")])
    (tmp_path / "example.json").write_text("{}")
    with pytest.raises(BenchError, match="two instances are named 'example'"):
        expand_instances([instances, tmp_path / "example.json"])


def test_parse_seeds():
    assert parse_seeds("0") == [0]
    assert parse_seeds("0-3,7,2") == [0, 1, 2, 3, 7]
    with pytest.raises(BenchError):
        parse_seeds("a-b")


def test_contest_timeouts_by_instance_name(tmp_path):
    paths = [tmp_path / "asplos-2025-iopddl-A.json.gz", tmp_path / "asplos-2025-iopddl-S.json.gz",
             tmp_path / "mine.json"]
    limits = {i.name: i.time_limit for i in resolve_instances(paths, 7.0, contest_timeouts=True)}
    assert limits == {"asplos-2025-iopddl-A": 60, "asplos-2025-iopddl-S": 240, "mine": 7.0}
    with pytest.raises(BenchError, match="no contest timeout for mine"):
        resolve_instances(paths, None, contest_timeouts=True)


# ------------------------------------------------------------------------------------------ sweeps
def test_sweep_streams_verified_rows_and_refuses_to_overwrite(instances, tmp_path):
    res = invoke("bench", instances, "--backends", "minusage", "--portfolio", "-t", LIMIT,
                 "--seeds", "0-1", "--jobs", "2", "--name", "s", "--runs-dir", tmp_path)
    assert res.exit_code == 0, res.output
    folder = tmp_path / "s"
    assert res.stdout.strip() == str(folder)
    rows = rows_of(folder)
    assert len(rows) == 2 * 2 * 2  # instances x configurations x seeds
    assert {(r["instance"], r["configuration"], r["seed"]) for r in rows} == {
        (i, c, s) for i in ("example", "gen40") for c in ("minusage", "portfolio") for s in (0, 1)}
    for row in rows:
        # an exact backend of the portfolio may prove the example optimal within the limit
        allowed = {"feasible"} if row["configuration"] == "minusage" else {"feasible", "optimal"}
        assert row["status"] in allowed, row
        assert row["time_limit"] == LIMIT and row["elapsed"] < LIMIT
        assert row["workers"] >= 1 and row["incumbents"][-1]["cost"] == row["cost"]
        names = [r["backend"] for r in row["backend_runs"]]
        assert row["time_to_best"] is not None and "minusage" in names
        if row["configuration"] == "minusage":
            assert names == ["minusage"]
        assert {"cpu_count", "cpu_model", "ram_bytes", "python"} <= set(row["machine"])
        cpu = row["cpu"]   # the CPU its backends got against their due, and the machine's load
        assert cpu["cpu_due"] > 0 and cpu["cpu_seconds"] >= 0 and cpu["cores"] == row["workers"]
        assert cpu["cpu_share"] == pytest.approx(cpu["cpu_seconds"] / cpu["cpu_due"], rel=1e-2)   # each rounded
        assert cpu["machine_cores"] == os.cpu_count()
        assert cpu["load_start"] >= 0 and cpu["load_end"] >= 0
        assert "iopddl-portfolio" in row["versions"]
        assert {"ortools", "python-sat", "pytoulbar2", "numba"} <= set(row["versions"])  # engines
        problem = load_problem(row["path"])  # the plan on disk has exactly the recorded cost
        assert evaluate(problem, read_solution(folder / row["solution_file"])).cost == row["cost"]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["seeds"] == [0, 1]
    assert {c["name"] for c in meta["configurations"]} == {"minusage", "portfolio"}
    assert [i["time_limit"] for i in meta["instances"]] == [LIMIT, LIMIT]

    again = invoke("bench", instances, "-b", "minusage", "-t", LIMIT, "--name", "s", "--runs-dir", tmp_path)
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert len(rows_of(folder)) == 8

    report = invoke("report", folder, "--format", "json")
    assert report.exit_code == 0
    assert {r["configuration"] for r in json.loads(report.stdout)["rows"]} == {"minusage", "portfolio"}

    forced = invoke("bench", instances / "example.json", "-b", "minusage", "-t", LIMIT, "--name", "s",
                    "--runs-dir", tmp_path, "--force", "-q")
    assert forced.exit_code == 0, forced.output
    assert len(rows_of(folder)) == 1
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("s.old-")]
    assert len(kept) == 1 and len(rows_of(kept[0])) == 8  # never lose results


def test_a_configuration_gives_the_portfolio_run_options(instances, tmp_path):
    """``portfolio[adaptive=true]``: the runner's adaptive rule on for that configuration."""
    res = invoke("bench", instances / "example.json", "-b", "on=portfolio[adaptive=true],off=portfolio",
                 "-t", LIMIT, "--name", "r", "--runs-dir", tmp_path, "-q")
    assert res.exit_code == 0, res.output
    rows = {r["configuration"]: r for r in rows_of(tmp_path / "r")}
    assert rows["on"]["run_options"] == {"adaptive": True}
    assert rows["on"]["schedule"]["adaptive"] is True
    assert rows["off"]["run_options"] == {}
    assert rows["off"]["schedule"]["adaptive"] is False and rows["off"]["schedule"]["moves"] == []
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert {c["name"]: c.get("run_options") for c in meta["configurations"]} == {
        "on": {"adaptive": True}, "off": None}
    bad = invoke("bench", instances / "example.json", "-b", "x=portfolio[workers=3]", "-t", LIMIT,
                 "--name", "b", "--runs-dir", tmp_path)
    assert bad.exit_code == 2 and "not a run option (run options: adaptive, selector)" in bad.stderr


def test_failing_tasks_do_not_stop_the_sweep(instances, tmp_path, faulty_plugins):
    bad = tmp_path / "bad.json"
    bad.write_text('{"problem": {"nodes": ')
    res = invoke("bench", instances / "example.json", bad, "-b", "raises,segfaults,minusage,bruteforce",
                 "-t", LIMIT, "-j", "2", "--name", "f", "--runs-dir", tmp_path, "-q")
    assert res.exit_code == 1, res.output   # every task ran, four failed: the sweep says so
    assert "4 task(s) failed" in res.output and "ProblemFormatError" in res.output
    rows = {(r["instance"], r["configuration"]): r for r in rows_of(tmp_path / "f")}
    assert len(rows) == 8
    shown = invoke("report", tmp_path / "f")
    assert shown.exit_code == 0 and "bad/raises" in shown.output
    assert "error: ProblemFormatError" in shown.output   # the error's text, not only its status
    for config in ("raises", "segfaults", "minusage", "bruteforce"):
        assert rows[("bad", config)]["status"] == "error"
        assert "ProblemFormatError" in rows[("bad", config)]["error"]
    assert rows[("example", "raises")]["status"] == "no-solution"
    assert rows[("example", "raises")]["backend_runs"][0]["status"] == "error"
    assert rows[("example", "segfaults")]["backend_runs"][0]["status"] == "crashed"
    assert rows[("example", "minusage")]["status"] == "feasible"
    assert rows[("example", "bruteforce")]["status"] == "optimal"
    assert rows[("example", "bruteforce")]["cost"] == rows[("example", "bruteforce")]["lower_bound"] == 305


def test_task_that_outlives_its_limit_is_killed_and_recorded(tmp_path, monkeypatch):
    """The child blocks forever opening a FIFO; the supervisor kills it after limit + grace."""
    monkeypatch.setattr(bench.task, "GRACE_MIN", 0.5)  # read where the supervisor runs
    fifo = tmp_path / "never.json"
    os.mkfifo(fifo)
    task = Task("never", str(fifo), "minusage", ("minusage",), 0, 0, 0.5, 1)
    t0 = time.time()
    row = bench.run_task(task)
    assert row["status"] == "timeout" and "killed" in row["error"]
    assert time.time() - t0 < 5
    assert row["machine"]["cpu_count"] == os.cpu_count()


def test_interrupted_sweep_keeps_rows_and_resume_finishes_it(instances, tmp_path):
    seen: list[dict] = []

    def interrupt_after_two(row: dict) -> None:
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    kwargs = dict(backends=["minusage"], time_limit=LIMIT, seeds=[0, 1, 2], name="r", runs_dir=tmp_path)
    first = run_sweep([instances], on_row=interrupt_after_two, **kwargs)
    folder = tmp_path / "r"
    assert first.interrupted and first.finished == 2
    assert json.loads((folder / "meta.json").read_text())["status"] == "interrupted"
    rows = rows_of(folder)
    assert len(rows) == 2
    with (folder / "results.jsonl").open("a") as f:  # a line cut short by a kill
        f.write('{"instance": "gen40", "configuration": "minus')

    res = invoke("bench", instances, "-b", "minusage", "-t", LIMIT, "--seeds", "0-2", "--name", "r",
                 "--runs-dir", tmp_path, "--resume")
    assert res.exit_code == 0, res.output
    assert "4 task(s) run" in res.stderr and "2 already done" in res.stderr
    final = rows_of(folder)  # every line parses: the cut line was dropped
    assert len(final) == 6 and final[:2] == rows
    assert len({bench.row_key(r) for r in final}) == 6
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and len(meta["sessions"]) == 2
    assert meta["sessions"][1]["tasks_skipped"] == 2

    res = invoke("bench", instances, "-b", "minusage", "-t", "5", "--name", "r", "--runs-dir", tmp_path,
                 "--resume")
    assert res.exit_code == 2 and "time limit" in res.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_stopped_sweep_keeps_rows_and_leaves_no_process_behind(instances, tmp_path, faulty_plugins, sig,
                                                               portfolio_cli):
    """Ctrl-C (or kill -9) to a real `portfolio bench` while a backend hangs: rows kept, no orphans.

    Ctrl-C: the task supervisors kill their task trees and the sweep exits 130 with its meta updated.
    kill -9: the supervisors die at once too; each orphaned task child notices and kills its tree.
    """
    import psutil
    stdout, stderr = (tmp_path / "out.txt").open("w"), (tmp_path / "err.txt").open("w")
    faulty = portfolio_cli.configured(plugins="faulty_backends", path=[TESTS])
    proc = faulty.popen(  # own session; SIGINT handled even if this process ignores it
        "bench", instances / "example.json", "-b", "minusage,hangs-silently", "-t", "30", "-j", "2",
        "--name", "c", "--runs-dir", tmp_path, stdout=stdout, stderr=stderr, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = tmp_path / "c" / "results.jsonl"
    deadline = time.time() + 20
    tree: list = []
    alive: list = []
    try:
        while time.time() < deadline:  # minusage done, and the hanging backend's worker started
            tree = psutil.Process(proc.pid).children(recursive=True)
            if results.exists() and results.read_text().count("\n") == 1 and len(tree) >= 5:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        tree = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, sig)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(1.5)  # orphaned task children notice within 0.5 s
        for p in tree:
            try:
                if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline()):
                    alive.append(p.cmdline())
                    p.kill()  # a failing run must not leave hanging backends behind
            except psutil.Error:
                pass
        stdout.close(), stderr.close()
    out, err = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert not alive, alive
    assert [r["configuration"] for r in rows_of(tmp_path / "c")] == ["minusage"]
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted" in err and out.strip() == str(tmp_path / "c")
        assert json.loads((tmp_path / "c" / "meta.json").read_text())["status"] == "interrupted"


def test_dask_local_cluster(instances, tmp_path):
    """Through joblib's dask backend, on a worker process under a nanny (daemonic, as on a cluster)."""
    distributed = extra("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster:
        worker = next(iter(cluster.scheduler_info["workers"]))
        # a longer limit: two tasks share the worker's 2 threads with the cluster's own processes
        result = run_sweep([instances / "example.json"], backends=["minusage"], portfolio=True,
                           time_limit=2 * LIMIT, seeds=[0, 1], name="d", runs_dir=tmp_path,
                           dask_scheduler=cluster.scheduler_address)
    # every backend of the portfolio now gets CPU, so an exact one may prove the example optimal
    assert result.finished == 4 and set(result.statuses) <= {"feasible", "optimal"}
    assert sum(result.statuses.values()) == 4
    rows = rows_of(tmp_path / "d")
    assert {r["configuration"] for r in rows} == {"minusage", "portfolio"}
    assert all(r["dask_worker"] == worker for r in rows)
    # minusage alone gives its 465; the whole portfolio can only do better (optimum 305)
    assert all(r["cost"] == 465 for r in rows if r["configuration"] == "minusage")
    assert all(305 <= r["cost"] <= 465 for r in rows)
    portfolio_rows = [r for r in rows if r["configuration"] == "portfolio"]
    assert all(r["workers"] == max(1, os.cpu_count() // 2) for r in portfolio_rows)
    meta = json.loads((tmp_path / "d" / "meta.json").read_text())
    assert meta["sessions"][0]["dask_scheduler"] == cluster.scheduler_address


def test_dask_single_thread_cluster_still_runs_there(instances, tmp_path):
    """joblib would run n_jobs=1 in this process; the sweep submits to the cluster itself."""
    distributed = extra("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        result = run_sweep([instances], backends=["minusage"], time_limit=LIMIT, name="d1",
                           runs_dir=tmp_path, dask_scheduler=cluster.scheduler_address)
    assert result.statuses == {"feasible": 2}
    assert all(r.get("dask_worker") for r in rows_of(tmp_path / "d1"))


def test_unreachable_dask_scheduler_is_a_one_line_error(instances, tmp_path, monkeypatch):
    extra("distributed")
    monkeypatch.setattr(bench.parallel, "DASK_CONNECT_TIMEOUT", 1.0)
    res = invoke("bench", instances / "example.json", "-b", "minusage", "-t", LIMIT, "--name", "x",
                 "--runs-dir", tmp_path, "--dask-scheduler", "tcp://127.0.0.1:9", "-q")
    assert res.exit_code == 2 and "Dask scheduler" in res.stderr
