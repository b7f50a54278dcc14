"""The worker task: one (instance, configuration, seed, repetition), start to end, never raising.

Fault containment: a task's solve runs in a forked child in its own process group, supervised here.
A child that crashes, raises, or outlives its limit plus a grace period (killed with its whole
tree, backend workers included) gives a row with that status, and the sweep goes on. The
supervisor's clock is ``time.monotonic()``, the runner's scale too (the start handed to it).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from ..cpuload import cpu_record, load_average
from .environment import git_revision, machine_info, now_iso, package_versions
from .plan import PLUGINS_ENV, Task, option_dict

GRACE_MIN = 30.0
"""Seconds a task may run past its time limit before its child is killed (plus a quarter of the limit)."""


def _row_header(task: Task) -> dict:
    return {
        "instance": task.instance,
        "path": task.path,
        "configuration": task.configuration,
        "backends": list(task.backends),
        "seed": task.seed,
        "repeat": task.repeat,
        "time_limit": task.time_limit,
        "options_given": option_dict(task.options),
        "work": task_work(task),
        "run_options": dict(getattr(task, "run", ())),   # portfolio[adaptive=false]
    }


def task_work(task: Task) -> Optional[int]:
    """A deterministic task's work units (the runner's default when none was given); None: timed."""
    if not getattr(task, "deterministic", False):
        return None
    from ..options import DEFAULT_WORK

    return DEFAULT_WORK if task.work is None else task.work


def _failed_row(task: Task, status: str, error: str, elapsed: Optional[float] = None) -> dict:
    return {**_row_header(task), "status": status, "cost": None, "feasible": False,
            "elapsed": None if elapsed is None else round(elapsed, 3), "time_to_best": None,
            "lower_bound": None, "winner": None, "incumbents": [], "backend_runs": [], "error": error}


def _improving(incumbents: Iterable) -> list[dict]:
    """The configuration's own best-so-far trace: each verified incumbent that beat all before it."""
    trace: list[dict] = []
    for inc in incumbents:
        if not trace or inc.cost < trace[-1]["cost"]:
            trace.append({"time": round(inc.time, 4), "cost": int(inc.cost), "backend": inc.backend})
    return trace


def _workers_here(task: Task) -> int:
    if task.workers is not None:
        return task.workers
    threads = 1
    try:  # on a Dask worker: share this machine's CPUs among the worker's task threads
        from distributed import get_worker
        threads = get_worker().state.nthreads
    except Exception:
        threads = task.jobs
    return max(1, (os.cpu_count() or 1) // max(1, threads))


def solve_task(task: Task, start: Optional[float] = None) -> dict:
    """Load the instance and run the configuration's backends: the row of a task, plus its plan.

    Runs in the task's child process; exceptions propagate to the caller.
    """
    from ..io import load_problem
    from ..options import RunOptions
    from ..registry import Registry
    from ..runner import run_portfolio
    from ..runner.claims import OPTIMAL

    start = time.monotonic() if start is None else start
    load_start = load_average()
    if task.plugins is None:
        os.environ.pop(PLUGINS_ENV, None)
    else:
        os.environ[PLUGINS_ENV] = task.plugins
    registry = Registry()
    backends = registry.select(list(task.backends))
    sources = {info.backend.name: f"{info.package} {info.version}".strip() for info in registry.infos()}
    problem = load_problem(task.path)
    load_seconds = time.monotonic() - start
    workers = _workers_here(task)
    # presolve in the runner's child under the deadline, as `portfolio solve` does (backends that
    # wait for it set up meanwhile), not before the run
    run = dict(task.run)
    selector = run.pop("selector", None)
    if selector is not None and task.prepare is None:
        raise RuntimeError(f"configuration {task.configuration}: portfolio[selector={selector}] "
                           f"needs the sweep's selector step (run_sweep(selector_step=...))")
    options = RunOptions(task.time_limit, start=start, workers=workers, seed=task.seed,
                         presolve=True, fallback=False,  # the backends' own rows
                         backend_options=option_dict(task.options),
                         deterministic=task.deterministic, work=task.work, **run)
    selection = None
    if task.prepare is not None:   # portfolio[selector=FILE]: as `solve --selector FILE`, in the budget
        backends, options, selection = task.prepare(problem, registry, task, options)
    result = run_portfolio(problem, backends, options)
    cores = (result.schedule or {}).get("cores", workers)
    cpu = cpu_record([r.to_dict() for r in result.runs.values()], cores, result.elapsed,
                     load_start, load_average())
    runs = [r for r in result.runs.values()]
    ran = {r.backend for r in runs}
    outside = [o for o in registry.outside(backends) if o["name"] in ran]
    trace = _improving(result.incumbents)
    if result.solution is not None:
        # the runner's best is verified; its own trace always ends at it unless the plan was a warm start
        if not trace or trace[-1]["cost"] != result.cost:
            trace.append({"time": round(result.elapsed, 4), "cost": int(result.cost),
                          "backend": result.winner})
    bounds = [r.lower_bound for r in runs if r.lower_bound is not None and not r.disqualified]
    # an exact backend's standing optimality claim (it meets the verified answer: a claim above
    # it would be false), or the runner's own proof (presolve settled the instance); a backend
    # that is not exact only claims
    proven = [c for c in result.claims if c.kind == OPTIMAL and c.exact and not c.false]
    if result.solution is not None:
        optimal = bool(proven) or result.proven_optimal
        status = "optimal" if optimal else "feasible"
        if optimal:
            bounds.append(result.cost)
    elif result.infeasible_proven_by:
        status = "infeasible-proven"
    else:
        status = "no-solution"
    late = result.elapsed > task.time_limit
    if late:
        status = "late"
    time_to_best = None
    if result.solution is not None:
        time_to_best = next(i["time"] for i in trace if i["cost"] == result.cost)
    return {
        **_row_header(task),
        "status": status,
        "cost": result.cost,
        "feasible": result.solution is not None,
        "elapsed": round(result.elapsed, 3),
        "load_seconds": round(load_seconds, 3),
        "time_to_best": time_to_best,
        "lower_bound": max(bounds) if bounds else None,
        "winner": result.winner,
        "proof": result.proof,
        "fallback": False,   # the runner's fallback plan is off: the row is its backends' own
        "engines": dict(result.engines),
        "options": {k: dict(v) for k, v in result.options.items()},
        "incumbents": trace,
        "gap_trace": [{"time": round(at, 4), "cost": c, "bound": b}   # bounds sent during the run too
                      for at, c, b in result.gap_trace()],
        "backend_runs": [{"backend": r.name, "status": r.status.value, "best_cost": r.best_cost,
                          "time_to_best": None if r.time_to_best is None else round(r.time_to_best, 4),
                          "lower_bound": r.lower_bound, "note": r.note,
                          "cpu_seconds": r.cpu_seconds, "demand": r.demand,
                          "source": sources.get(r.name, "")} for r in runs],
        "workers": workers,
        "cpu": cpu,   # the CPU its backends got against their due, the load (portfolio.cpuload)
        "schedule": result.schedule,   # the cores' policy, the CPU weights, the adaptive rule's moves
        "selection": selection,   # what portfolio[selector=FILE] chose (None: no selector)
        "plan_hash": result.plan_hash,
        "deterministic": result.deterministic,   # the mode's record (complete, reason...); None: timed
        "outside_backends": outside,   # the backends of other distributions that took part
        "plugins_env": task.plugins,   # PORTFOLIO_PLUGINS where the task ran
        # False: not the deterministic answer (a safety net fired...): its cost depends on the load
        "complete": None if result.deterministic is None else bool(result.deterministic["complete"]),
        "error": None,
        "solution": None if result.solution is None else [int(s) for s in result.solution],
    }


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants, and the process groups they lead.

    Backend workers put themselves in process groups of their own (so a kill reaches programs they
    started), so killing the task's group alone would orphan them: walk the tree instead.
    """
    import psutil

    try:
        root = psutil.Process(pid)
        tree = [root] + root.children(recursive=True)
    except psutil.Error:
        tree = []
    me = os.getpid()
    for proc in tree:  # the root first, so it starts nothing new while its children go
        with contextlib.suppress(OSError, psutil.Error):
            if proc.pid != me and os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, psutil.Error):
            if proc.pid != me:
                proc.kill()


def _child(task: Task, write_fd: int, parent: int, start: float) -> None:
    """Body of a task's child process: solve, send the pickled row, exit (never returns)."""
    code = 0
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        import multiprocessing.process as mp_process

        # This process is ours even when forked from a daemonic one (a Dask worker under a nanny):
        # let the runner start its backend workers, and forget the parent's children.
        mp_process.current_process()._config.pop("daemon", None)
        mp_process._children = set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)

        def orphan_watch() -> None:  # the supervisor died (sweep interrupted): take the tree down
            while True:
                time.sleep(0.5)
                if os.getppid() != parent:
                    _kill_tree(os.getpid())
                    os.killpg(0, signal.SIGKILL)

        threading.Thread(target=orphan_watch, daemon=True).start()
        try:
            payload = ("row", solve_task(task, start))
        except BaseException as exc:  # noqa: BLE001 -- reported as the task's status
            lines = traceback.format_exc(limit=6).strip().splitlines()
            payload = ("error", f"{type(exc).__name__}: {exc}", lines[-8:])
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as f:
            f.write(data)
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)


def _supervise(task: Task) -> dict:
    """Fork the task's child, wait for its pickled row until the limit plus grace, kill it past that."""
    start = t0 = time.monotonic()   # immune to wall-clock steps; the runner's scale too
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        _child(task, write_fd, os.getppid(), start)
    os.close(write_fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    deadline = t0 + task.time_limit + max(GRACE_MIN, 0.25 * task.time_limit)
    chunks: list[bytes] = []
    killed = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                killed = True
                break
            ready, _, _ = select.select([read_fd], [], [], min(left, 1.0))
            if ready:
                data = os.read(read_fd, 1 << 20)
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(read_fd)
        if killed or sys.exc_info()[0] is not None:
            _kill_tree(pid)
        _, wait_status = os.waitpid(pid, 0)
    elapsed = time.monotonic() - t0
    if killed:
        return _failed_row(task, "timeout", f"still running {elapsed:.1f} s after the start "
                           f"(limit {task.time_limit:g} s plus grace); killed", elapsed)
    try:
        payload = pickle.loads(b"".join(chunks))
    except Exception:
        if os.WIFSIGNALED(wait_status):
            sig = os.WTERMSIG(wait_status)
            try:
                what = signal.Signals(sig).name
            except ValueError:
                what = str(sig)
            why = f"task process died by signal {what}"
        else:
            why = f"task process exited with code {os.waitstatus_to_exitcode(wait_status)} without a result"
        return _failed_row(task, "crashed", why, elapsed)
    if payload[0] == "error":
        row = _failed_row(task, "error", payload[1], elapsed)
        row["traceback"] = payload[2]
        return row
    return payload[1]


@lru_cache(maxsize=1)
def warm_up() -> None:
    """Import the solving stack and load the bundled example once per worker process.

    Task children fork from a warm process, so the first task of a fresh worker does not pay for
    imports and numba cache loading inside its time limit (about a second on a small VM).
    """
    from importlib import resources

    from ..evaluate import evaluate
    from ..io import load_problem
    from .. import registry, runner  # noqa: F401

    with contextlib.suppress(Exception):
        problem = load_problem(Path(str(resources.files("portfolio.data") / "example.json")))
        evaluate(problem, problem.min_usage_strategies)


def run_task(task: Task) -> dict:
    """One task, start to end, never raising: the joblib unit of work (picklable, top level).

    The returned row carries the plan under ``"solution"``; the sweep writes it to ``solutions/``.
    (A task of another checkout's configuration goes to :func:`.checkout.run_elsewhere` instead:
    :func:`.parallel.run_any`.)
    """
    with contextlib.suppress(Exception):
        warm_up()
    t0 = time.monotonic()
    started = now_iso()
    try:
        row = _supervise(task)
    except Exception as exc:  # noqa: BLE001 -- e.g. fork failed: the sweep goes on
        row = _failed_row(task, "error", f"{type(exc).__name__}: {exc}", time.monotonic() - t0)
    row["started_at"] = started
    row["finished_at"] = now_iso()
    row["wall_seconds"] = round(time.monotonic() - t0, 3)
    row["machine"] = machine_info()
    versions = dict(package_versions())
    for run in row.get("backend_runs", []):
        if run.get("source"):
            versions.setdefault(f"backend:{run['backend']}", run["source"])
    row["versions"] = versions
    row["git"] = git_revision()
    if "distributed" in sys.modules:
        with contextlib.suppress(Exception):
            from distributed import get_worker
            row["dask_worker"] = get_worker().address
    return row

