"""Processes for the distributed tests: a ``dask scheduler`` and ``dask worker`` on localhost, the
``portfolio``/``iopddl`` commands timed from the outside, and a scan of ``/proc`` for the shard
processes a run leaves behind.

A shard process is recognised by its environment (``PORTFOLIO_SHARD=<run id>``, set by
``portfolio.distributed.shard_task``) and, for a cluster a test started, by a marker variable the
test gave its Dask processes (children inherit it): other runs on the same machine never count.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from portfolio.testing import PortfolioCli

SHARD_ENV = "PORTFOLIO_SHARD"
MARK_ENV = "PORTFOLIO_TEST_MARK"


# ------------------------------------------------------------------------------------------ /proc
def environ_of(pid: int) -> Optional[dict[str, str]]:
    """The environment a process started with, or None when it is gone or not ours to read."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def processes_where(test: Callable[[dict[str, str]], bool]) -> set[int]:
    """Live processes whose environment passes ``test`` (this process excluded)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        env = environ_of(int(entry))
        if env is not None and test(env) and alive(int(entry)):
            found.add(int(entry))
    return found


def shard_processes(run_id: Optional[str] = None, mark: Optional[str] = None) -> set[int]:
    """Live shard processes (and what they started): of run ``run_id``, and/or carrying ``mark``."""
    return processes_where(lambda env: SHARD_ENV in env
                           and (run_id is None or env[SHARD_ENV] == run_id)
                           and (mark is None or env.get(MARK_ENV) == mark))


def shards_under(pid: int) -> set[int]:
    """Shard processes (and their children) descending from ``pid``."""
    import psutil

    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return set()
    return {c.pid for c in kids if SHARD_ENV in (environ_of(c.pid) or {})}


def marked_processes(mark: str) -> set[int]:
    """Every live process carrying ``mark`` (what a command started with it left behind)."""
    return processes_where(lambda env: env.get(MARK_ENV) == mark)


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    end = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(step)


def new_mark() -> str:
    return uuid.uuid4().hex


def marked_env(mark: str) -> dict[str, Optional[str]]:
    """What a command's environment changes (``PortfolioCli``'s ``env``): the marker set, no shard
    variable inherited."""
    return {MARK_ENV: mark, SHARD_ENV: None}


# ------------------------------------------------------------------------------------------ dask
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released: refused at once)."""
    return free_port()


def executable(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    if not path.is_file():
        raise FileNotFoundError(f"{name} is not installed next to {sys.executable}")
    return str(path)


def _spawn(args: list[str], env: dict[str, Optional[str]], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=PortfolioCli().environment(env), start_new_session=True)


def end_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Signal the process group a test started (its session) and reap the leader."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


@dataclass
class DaskCluster:
    """A ``dask scheduler`` and one ``dask worker`` command (N worker processes) on localhost."""

    address: str
    scheduler: subprocess.Popen
    workers: subprocess.Popen
    mark: str
    worker_pids: dict[str, int] = field(default_factory=dict)   # worker address -> its pid

    def stop(self) -> None:
        for proc in (self.workers, self.scheduler):
            end_group(proc)
        # the worker processes of `dask worker --nworkers` are the nanny's; they carry the mark
        for pid in marked_processes(self.mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def start_dask(n_workers: int, log_dir: Path, startup: float = 30.0) -> DaskCluster:
    """``dask scheduler`` then ``dask worker --nworkers N --nthreads 1``, both on 127.0.0.1 with no
    dashboard; returns once every worker has joined (their pids read through a client)."""
    from distributed import Client

    mark = new_mark()
    env = marked_env(mark)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = executable("dask")
    scheduler = _spawn([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                        "--no-dashboard"], env, log_dir / "scheduler.log")
    workers = _spawn([dask, "worker", address, "--nworkers", str(n_workers), "--nthreads", "1",
                      "--no-dashboard", "--host", "127.0.0.1"], env, log_dir / "workers.log")
    cluster = DaskCluster(address, scheduler, workers, mark)
    try:
        client = Client(address, timeout=startup, set_as_default=False)
        try:
            client.wait_for_workers(n_workers, timeout=startup)
            cluster.worker_pids = dict(client.run(os.getpid))
        finally:
            client.close(timeout=5)
    except BaseException:
        cluster.stop()
        raise
    return cluster


# ------------------------------------------------------------------------------------------ commands
@dataclass
class Timed:
    """A finished command: exit code, output, and its wall time seen from outside."""

    code: int
    stdout: str
    stderr: str
    wall: float

    def json(self) -> dict:
        return json.loads(self.stdout)

    def plan(self) -> list[int]:
        """The answer line: the last non-empty stdout line."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return json.loads(lines[-1])


def start_command(name: str, *args: object, env: Optional[dict[str, Optional[str]]] = None,
                  cwd: Optional[Path] = None) -> tuple[subprocess.Popen, float]:
    """Start ``portfolio`` or ``iopddl`` (``env``: what :func:`marked_env` gives, a new mark
    when None); (process, time.monotonic() at start)."""
    t0 = time.monotonic()
    proc = PortfolioCli(cwd=cwd).popen(*args, program=name,
                                       env=env if env is not None else marked_env(new_mark()))
    return proc, t0


def finish_command(proc: subprocess.Popen, t0: float, timeout: float) -> Timed:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the command hung: still running after {timeout} s\n{err[-3000:]}")
    return Timed(proc.returncode, out, err, time.monotonic() - t0)


def run_command(name: str, *args: object, env: Optional[dict[str, Optional[str]]] = None,
                cwd: Optional[Path] = None, timeout: float = 120) -> Timed:
    proc, t0 = start_command(name, *args, env=env, cwd=cwd)
    return finish_command(proc, t0, timeout)


# ------------------------------------------------------------------------------------------ plans
def verified_cost(problem_path: Path, plan: list[int]) -> int:
    """The plan's cost by the exact evaluator; fails the test when the plan is not feasible."""
    import portfolio
    from portfolio.evaluate import evaluate

    problem = portfolio.load(problem_path)
    assert len(plan) == problem.num_nodes, f"plan of {len(plan)} entries for {problem.num_nodes} nodes"
    ev = evaluate(problem, np.asarray(plan, dtype=np.int64))
    assert ev.feasible, f"the answer is not feasible: {ev}"
    return int(ev.cost)
