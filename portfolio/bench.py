"""Benchmark sweeps: instances x solver configurations x seeds, streamed to ``runs/NAME/``.

A *task* is one (instance, configuration, seed, repetition). Tasks run through joblib (loky processes
on this machine, or an existing Dask cluster through joblib's dask backend). Each task calls
:func:`portfolio.runner.run_portfolio`, so every cost in a results file was verified by the exact
evaluator. The time limit counts from before the instance is loaded, as in the contest.

Fault containment: a task's solve runs in a forked child in its own process group, supervised by the
task function. A child that crashes, raises, or outlives its limit plus a grace period (killed with
its whole group, backend workers included) gives a row with that status, and the sweep goes on.

Results stream to ``runs/NAME/results.jsonl`` (one JSON object per finished task, appended and flushed
as tasks finish, in completion order) and ``runs/NAME/meta.json`` describes the sweep. Plans are kept
beside them in ``solutions/`` in contest format. An interrupted sweep keeps every finished row and
``resume`` skips them. ``portfolio.report`` reads these files and nothing else.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import json
import os
import pickle
import platform
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from .results import read_rows

FORMAT_VERSION = 1
RESULTS = "results.jsonl"
META = "meta.json"
SOLUTIONS = "solutions"
PORTFOLIO_CONFIGURATION = "portfolio"
PLUGINS_ENV = "PORTFOLIO_PLUGINS"

GRACE_MIN = 30.0
"""Seconds a task may run past its time limit before its child is killed (plus a quarter of the limit)."""

DASK_CONNECT_TIMEOUT = 30.0
"""Seconds to wait for the Dask scheduler before giving up."""

FAILED_STATUSES = ("error", "crashed", "timeout")
"""Row statuses of tasks that did not complete normally (no solve result at all)."""


class BenchError(ValueError):
    """Bad sweep input (no instances, unknown backend, existing run folder...): one line for the user."""


# ------------------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class Instance:
    name: str
    path: str
    time_limit: float


@dataclass(frozen=True)
class Configuration:
    """A named set of backends run together as one portfolio."""

    name: str
    backends: tuple[str, ...]

    @property
    def is_portfolio(self) -> bool:
        return len(self.backends) > 1 or self.name == PORTFOLIO_CONFIGURATION


@dataclass(frozen=True)
class Task:
    instance: str
    path: str
    configuration: str
    backends: tuple[str, ...]
    seed: int
    repeat: int
    time_limit: float
    workers: Optional[int]          # None: decided where the task runs (Dask)
    plugins: Optional[str] = None   # PORTFOLIO_PLUGINS to use where the task runs
    jobs: int = 1                   # tasks running at once (for workers=None on a Dask worker)

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.instance, self.configuration, self.seed, self.repeat)


def instance_name(path: str | Path) -> str:
    """The name an instance goes by in results: its file name without ``.json``/``.json.gz``."""
    name = Path(path).name
    for suffix in (".gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def _is_instance_file(path: Path) -> bool:
    return path.is_file() and (path.name.endswith(".json") or path.name.endswith(".json.gz"))


def expand_instances(specs: Sequence[str | Path]) -> list[Path]:
    """Files, folders (their ``*.json`` and ``*.json.gz``, not recursive) and globs, in a stable order."""
    found: list[Path] = []
    for spec in specs:
        text = str(spec)
        path = Path(text)
        if any(ch in text for ch in "*?["):
            matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))]
            files = [m for m in matches if _is_instance_file(m)]
            if not files:
                raise BenchError(f"{text}: the pattern matches no .json or .json.gz file")
            found.extend(files)
        elif path.is_dir():
            files = sorted(p for p in path.iterdir() if _is_instance_file(p))
            if not files:
                raise BenchError(f"{text}: the folder holds no .json or .json.gz file")
            found.extend(files)
        elif path.is_file():
            found.append(path)
        else:
            raise BenchError(f"{text}: no such file or folder")
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    names: dict[str, Path] = {}
    for resolved in unique:
        name = instance_name(resolved)
        if name in names:
            raise BenchError(f"two instances are named {name!r}: {names[name]} and {resolved}")
        names[name] = resolved
    return list(unique)


def parse_seeds(text: str) -> list[int]:
    """``"0"``, ``"0,3,7"`` or ``"0-4"`` (inclusive), combinable: ``"0-2,10"``."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        m = _SEED_RANGE.match(part)
        if m and int(m.group(2)) >= int(m.group(1)):
            seeds.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif re.fullmatch(r"-?\d+", part):
            seeds.append(int(part))
        else:
            raise BenchError(f"bad seed list {text!r}: use e.g. 0,1,2 or 0-4")
    if not seeds:
        raise BenchError("empty seed list")
    return list(dict.fromkeys(seeds))


_SEED_RANGE = re.compile(r"^(-?\d+)-(-?\d+)$")


def resolve_instances(paths: Sequence[Path], time_limit: Optional[float],
                      contest_timeouts: bool) -> list[Instance]:
    """Attach each instance's time limit: the fixed one, or the contest's own (``--contest-timeouts``).

    With contest timeouts, ``time_limit`` (when given) is the fallback for non-contest instances.
    """
    from .data import contest

    out, unmatched = [], []
    for path in paths:
        name = instance_name(path)
        limit = time_limit
        if contest_timeouts:
            limit = contest.timeout_for(name)
            if limit is None:
                limit = time_limit
                if limit is None:
                    unmatched.append(name)
                    continue
        if limit is None or limit <= 0:
            raise BenchError("no time limit: pass --time-limit SECONDS or --contest-timeouts")
        out.append(Instance(name, str(path), float(limit)))
    if unmatched:
        raise BenchError(f"no contest timeout for {', '.join(unmatched)} (not a contest benchmark "
                         f"name); add --time-limit SECONDS as the fallback, or leave them out")
    return out


def resolve_configurations(backends: Optional[Sequence[str]], portfolio: bool) -> list[Configuration]:
    """``backends`` -> one configuration per backend; ``portfolio`` -> all available backends as one."""
    from .registry import Registry, RegistryError

    registry = Registry()
    configs: list[Configuration] = []
    for name in backends or ():
        try:
            registry.get(name)
        except RegistryError as exc:
            raise BenchError(str(exc)) from None
        configs.append(Configuration(name, (name,)))
    if portfolio:
        names = tuple(b.name for b in registry.select(None))
        if not names:
            raise BenchError("--portfolio: no backend is available; see `portfolio backends`")
        if PORTFOLIO_CONFIGURATION in {c.name for c in configs}:
            raise BenchError(f"a backend is named {PORTFOLIO_CONFIGURATION!r}; it clashes with --portfolio")
        configs.append(Configuration(PORTFOLIO_CONFIGURATION, names))
    if not configs:
        raise BenchError("nothing to run: pass --backends a,b and/or --portfolio")
    if len({c.name for c in configs}) != len(configs):
        raise BenchError("a backend is listed twice in --backends")
    return configs


def portfolio_workers(config: Configuration, jobs: int) -> int:
    """Worker processes for one task: 1 for a single backend, else the CPU count / jobs (at least 1)."""
    if not config.is_portfolio:
        return 1
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def plan_tasks(instances: Sequence[Instance], configurations: Sequence[Configuration],
               seeds: Sequence[int], repeat: int, jobs: int, distributed: bool = False) -> list[Task]:
    plugins = os.environ.get(PLUGINS_ENV)
    tasks = []
    for inst in instances:
        for config in configurations:
            for seed in seeds:
                for rep in range(repeat):
                    workers = None if distributed and config.is_portfolio else portfolio_workers(config, jobs)
                    tasks.append(Task(inst.name, inst.path, config.name, config.backends, seed, rep,
                                      inst.time_limit, workers, plugins, jobs))
    return tasks


# ------------------------------------------------------------------------------------------ environment
@lru_cache(maxsize=1)
def machine_info() -> dict:
    """Where a task ran: host, CPU count and model, RAM, OS and Python."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import psutil
        ram = int(psutil.virtual_memory().total)
    except Exception:
        ram = None
    return {
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "ram_bytes": ram,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


@lru_cache(maxsize=1)
def package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("iopddl-portfolio", "numpy", "numba", "joblib", "dask", "distributed"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


@lru_cache(maxsize=1)
def git_revision() -> Optional[dict]:
    """The commit of the source tree this package runs from (editable installs), or None."""
    where = Path(__file__).resolve().parent.parent
    try:
        top = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        lines = top.stdout.split()
        if top.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != where:
            return None  # not a source checkout (e.g. installed into a venv inside some repo)
        head = lines[1]
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return {"commit": head, "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return None


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------ one task
def _row_header(task: Task) -> dict:
    return {
        "instance": task.instance,
        "path": task.path,
        "configuration": task.configuration,
        "backends": list(task.backends),
        "seed": task.seed,
        "repeat": task.repeat,
        "time_limit": task.time_limit,
    }


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
    from .backend import Status
    from .io import load_problem
    from .registry import Registry
    from .runner import presolve_for, run_portfolio

    start = time.time() if start is None else start
    if task.plugins is None:
        os.environ.pop(PLUGINS_ENV, None)
    else:
        os.environ[PLUGINS_ENV] = task.plugins
    registry = Registry()
    backends = registry.select(list(task.backends))
    sources = {info.backend.name: f"{info.package} {info.version}".strip() for info in registry.infos()}
    problem = load_problem(task.path)
    load_seconds = time.time() - start
    workers = _workers_here(task)
    presolved, _ = presolve_for(problem, backends)  # as `portfolio solve` does
    result = run_portfolio(problem, backends, task.time_limit, start=start, workers=workers,
                           seed=task.seed, presolved=presolved)
    runs = [r for r in result.runs.values()]
    trace = _improving(result.incumbents)
    if result.solution is not None:
        # the runner's best is verified; its own trace always ends at it unless the plan was a warm start
        if not trace or trace[-1]["cost"] != result.cost:
            trace.append({"time": round(result.elapsed, 4), "cost": int(result.cost),
                          "backend": result.winner})
    bounds = [r.lower_bound for r in runs if r.lower_bound is not None and not r.disqualified]
    proven = [r for r in runs if r.status is Status.OPTIMAL and not r.disqualified]
    if result.solution is not None:
        status = "optimal" if proven else "feasible"
        if proven:
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
        "incumbents": trace,
        "backend_runs": [{"backend": r.name, "status": r.status.value, "best_cost": r.best_cost,
                          "time_to_best": None if r.time_to_best is None else round(r.time_to_best, 4),
                          "lower_bound": r.lower_bound, "note": r.note,
                          "source": sources.get(r.name, "")} for r in runs],
        "workers": workers,
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
    start = time.time()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        _child(task, write_fd, os.getppid(), start)
    os.close(write_fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    deadline = start + task.time_limit + max(GRACE_MIN, 0.25 * task.time_limit)
    chunks: list[bytes] = []
    killed = False
    try:
        while True:
            left = deadline - time.time()
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
    elapsed = time.time() - start
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

    from .evaluate import evaluate
    from .io import load_problem
    from . import registry, runner  # noqa: F401

    with contextlib.suppress(Exception):
        problem = load_problem(Path(str(resources.files("portfolio.data") / "example.json")))
        evaluate(problem, problem.min_usage_strategies)


def run_task(task: Task) -> dict:
    """One task, start to end, never raising: the joblib unit of work (picklable, top level).

    The returned row carries the plan under ``"solution"``; the sweep writes it to ``solutions/``.
    """
    with contextlib.suppress(Exception):
        warm_up()
    t0 = time.time()
    started = _now_iso()
    try:
        row = _supervise(task)
    except Exception as exc:  # noqa: BLE001 -- e.g. fork failed: the sweep goes on
        row = _failed_row(task, "error", f"{type(exc).__name__}: {exc}", time.time() - t0)
    row["started_at"] = started
    row["finished_at"] = _now_iso()
    row["wall_seconds"] = round(time.time() - t0, 3)
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


# ------------------------------------------------------------------------------------------ run folder
def row_key(row: dict) -> tuple[str, str, int, int]:
    return (row.get("instance"), row.get("configuration"), row.get("seed", 0), row.get("repeat", 0))


def _repair_tail(path: Path) -> None:
    """Cut a last line left half-written by an interrupted sweep, so appending stays valid JSONL."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        f.seek(cut)
        f.truncate()


def _write_json_atomic(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


def _solution_file(folder: Path, row: dict) -> Path:
    safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in str(s))  # noqa: E731
    return folder / SOLUTIONS / (f"{safe(row['instance'])}.{safe(row['configuration'])}"
                                 f".s{row['seed']}.r{row['repeat']}.txt")


def prepare_folder(folder: Path, resume: bool, force: bool) -> Optional[Path]:
    """Create the run folder, or check we may write into it. Returns where old results were moved."""
    moved = None
    if folder.exists() and any(folder.iterdir()):
        if force and not resume:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            moved = folder.with_name(f"{folder.name}.old-{stamp}")
            folder.rename(moved)
        elif not resume:
            raise BenchError(f"{folder}: the run folder already exists; pass --resume to finish it, "
                             f"--force to start over (the old folder is kept, renamed), or another --name")
        elif not (folder / RESULTS).exists() and not (folder / META).exists():
            raise BenchError(f"{folder}: not a bench run folder (no {RESULTS} or {META})")
    folder.mkdir(parents=True, exist_ok=True)
    return moved


# ------------------------------------------------------------------------------------------ progress
class SweepProgress:
    """Rich progress on stderr: tasks done / total, elapsed, ETA, and the best cost per instance."""

    def __init__(self, console, total: int, done: int, instances: Sequence[str]) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        outer = self

        class _Progress(Progress):
            def get_renderables(self):
                yield self.make_tasks_table(self.tasks)
                yield outer.best_table()

        self.best: dict[str, tuple[int, str]] = {}
        self.failed = 0
        self.instances = list(instances)
        self.progress = _Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), TextColumn("{task.fields[failed]}"),
                                  console=console, transient=False)
        self.task_id = self.progress.add_task("bench", total=total, completed=done, failed="")

    def best_table(self):
        from rich.table import Table

        table = Table(show_header=True, header_style="dim", box=None, pad_edge=False)
        table.add_column("instance")
        table.add_column("best so far", justify="right")
        table.add_column("by")
        for name in self.instances:
            cost, who = self.best.get(name, (None, ""))
            table.add_row(name, "-" if cost is None else f"{cost:,}", who)
        return table

    def __enter__(self) -> "SweepProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def note_best(self, row: dict) -> None:
        cost = row.get("cost")
        if cost is not None and row.get("feasible") and row.get("status") != "late":
            old = self.best.get(row.get("instance"))
            if old is None or cost < old[0]:
                self.best[row["instance"]] = (cost, row["configuration"])

    def update(self, row: dict) -> None:
        self.note_best(row)
        if row.get("status") in FAILED_STATUSES:
            self.failed += 1
        self.progress.update(self.task_id, advance=1,
                             failed=f"[red]{self.failed} failed[/]" if self.failed else "")


# ------------------------------------------------------------------------------------------ the sweep
@dataclass
class SweepResult:
    folder: Path
    total: int
    skipped: int
    finished: int
    statuses: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    moved_old_to: Optional[Path] = None


def _parallel_rows(tasks: list[Task], jobs: int, dask_scheduler: Optional[str],
                   guard: float) -> Iterator[dict]:
    from joblib import Parallel, delayed, parallel_config

    calls = (delayed(run_task)(t) for t in tasks)
    if dask_scheduler is None:
        guard_kw = {} if jobs == 1 else {"timeout": guard}  # sequential: no joblib timeout
        yield from Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered",
                            **guard_kw)(calls)
        return
    try:
        from distributed import Client
    except ImportError:
        raise BenchError("--dask-scheduler needs dask: pip install 'iopddl-portfolio[dask]'") from None
    try:
        client = Client(dask_scheduler, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:
        raise BenchError(f"cannot reach the Dask scheduler at {dask_scheduler}: {exc}") from None
    try:
        if sum(client.ncores().values()) == 1:
            # joblib runs n_jobs == 1 in this process, not on the cluster: submit directly
            from distributed import as_completed

            with client.as_current():
                futures = client.map(run_task, tasks, pure=False)
                for future in as_completed(futures):
                    yield future.result()
            return
        with client.as_current(), parallel_config(backend="dask", client=client):
            yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(calls)
    finally:
        client.close()


def run_sweep(instances: Sequence[str | Path], backends: Optional[Sequence[str]] = None,
              portfolio: bool = False, time_limit: Optional[float] = None,
              contest_timeouts: bool = False, seeds: Sequence[int] = (0,), repeat: int = 1,
              jobs: Optional[int] = None, name: Optional[str] = None, runs_dir: str | Path = "runs",
              resume: bool = False, force: bool = False, dask_scheduler: Optional[str] = None,
              console=None, command: Optional[list[str]] = None,
              on_row: Optional[Callable[[dict], None]] = None) -> SweepResult:
    """Plan and run a sweep, streaming rows to ``runs_dir/name/results.jsonl``.

    ``console``: a rich console for the progress display (None: no display). Raises
    :class:`BenchError` for bad input before anything runs. On KeyboardInterrupt the finished rows stay
    and the result says ``interrupted``.
    """
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    paths = expand_instances(instances)
    insts = resolve_instances(paths, time_limit, contest_timeouts)
    configs = resolve_configurations(backends, portfolio)
    distributed = dask_scheduler is not None
    if jobs is None:
        jobs = -1 if distributed else 1
    if jobs == 0 or jobs < -1:
        raise BenchError("--jobs must be a positive number")
    plan_jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    tasks = plan_tasks(insts, configs, list(seeds), repeat, plan_jobs, distributed)

    name = name or _dt.datetime.now().strftime("bench-%Y%m%d-%H%M%S")
    if not name or "/" in name or name in (".", ".."):
        raise BenchError(f"bad run name {name!r}")
    folder = Path(runs_dir) / name
    results_path = folder / RESULTS

    old_meta: dict = {}
    if resume and (folder / META).exists():
        with contextlib.suppress(OSError, json.JSONDecodeError):
            old_meta = json.loads((folder / META).read_text())
    moved = prepare_folder(folder, resume, force)
    _repair_tail(results_path)
    done_rows, _ = read_rows(results_path)
    done: dict[tuple, dict] = {row_key(r): r for r in done_rows}
    for task in tasks:
        old = done.get(task.key)
        if old is not None and float(old.get("time_limit", task.time_limit)) != task.time_limit:
            raise BenchError(f"{folder}: {task.instance} / {task.configuration} ran with a time limit of "
                             f"{old.get('time_limit')} s, not {task.time_limit:g} s; resume with the "
                             f"same limits or use another --name")
    todo = [t for t in tasks if t.key not in done]
    skipped = len(tasks) - len(todo)

    session = {"started": _now_iso(), "command": command or sys.argv, "tasks_planned": len(tasks),
               "tasks_skipped": skipped, "jobs": jobs, "dask_scheduler": dask_scheduler,
               "machine": machine_info(), "status": "running"}
    meta = {
        "format": FORMAT_VERSION,
        "name": name,
        "created": old_meta.get("created", session["started"]),
        "status": "running",
        "instances": _merge_named(old_meta.get("instances", []), [asdict(i) for i in insts]),
        "configurations": _merge_named(old_meta.get("configurations", []),
                                       [{"name": c.name, "backends": list(c.backends)} for c in configs]),
        "seeds": sorted(set(old_meta.get("seeds", [])) | set(seeds)),
        "repeat": max(int(old_meta.get("repeat", 0)), repeat),
        "time_limit": {"mode": "contest" if contest_timeouts else "fixed", "seconds": time_limit},
        "plugins_env": os.environ.get(PLUGINS_ENV),
        "versions": package_versions(),
        "git": git_revision(),
        "sessions": old_meta.get("sessions", []) + [session],
    }
    _write_json_atomic(folder / META, meta)

    result = SweepResult(folder, len(tasks), skipped, 0, moved_old_to=moved)
    guard = max(t.time_limit for t in tasks) * 1.5 + GRACE_MIN + 120.0
    display = SweepProgress(console, len(tasks), skipped, [i.name for i in insts]) if console else None
    if display:
        for task in tasks:
            if task.key in done:
                display.note_best(done[task.key])
    status = "complete"
    try:
        with (display or contextlib.nullcontext()), results_path.open("a", encoding="utf-8") as out:
            if todo:
                for row in _parallel_rows(todo, jobs, dask_scheduler, guard):
                    solution = row.pop("solution", None)
                    if solution is not None:
                        sol_path = _solution_file(folder, row)
                        sol_path.parent.mkdir(exist_ok=True)
                        sol_path.write_text("[" + ", ".join(map(str, solution)) + "]\n")
                        row["solution_file"] = str(sol_path.relative_to(folder))
                    out.write(json.dumps(row, separators=(",", ":")) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                    result.finished += 1
                    result.statuses[row["status"]] = result.statuses.get(row["status"], 0) + 1
                    if display:
                        display.update(row)
                    if on_row:
                        on_row(row)
    except KeyboardInterrupt:
        status = "interrupted"
        result.interrupted = True
    except BenchError:
        status = "failed"
        raise
    except Exception as exc:
        status = "failed"
        first = (str(exc).strip().splitlines() or [""])[0]
        raise BenchError(f"the sweep stopped: {type(exc).__name__}: {first}; the {result.finished} "
                         f"finished tasks are kept, rerun with --resume to continue") from exc
    finally:
        session.update(status=status, finished=_now_iso(), tasks_run=result.finished)
        meta["status"] = status
        _write_json_atomic(folder / META, meta)
    return result


def _merge_named(old: list[dict], new: list[dict]) -> list[dict]:
    merged = {d["name"]: d for d in old}
    merged.update({d["name"]: d for d in new})
    return list(merged.values())
