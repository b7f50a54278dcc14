"""The sweep: plan the tasks, skip the finished ones, run the rest and stream every row to disk."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..results import read_rows
from .environment import git_revision, machine_info, now_iso, package_versions
from .checkout import configuration_elsewhere
from .features import sweep_features
from .command import command_configuration, remove_scratch, resume_conflict, with_scratch
from .parallel import parallel_rows
from .plan import (PLUGINS_ENV, BenchError, Configuration, expand_instances, option_dict,
                   plan_tasks, resolve_configurations, resolve_instances)
from .progress import FAILED_STATUSES, SweepProgress
from .storage import (FORMAT_VERSION, META, RESULTS, merge_named, prepare_folder, repair_tail,
                      row_key, solution_file, write_json_atomic, write_logs)
from .task import GRACE_MIN, task_work


@dataclass
class SweepResult:
    folder: Path
    total: int
    skipped: int
    finished: int
    statuses: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    moved_old_to: Optional[Path] = None
    failures: list[dict] = field(default_factory=list)
    """The failed tasks of the sweep (status error, crashed or timeout), earlier sessions' kept
    rows included: ``{instance, configuration, seed, repeat, status, error, earlier}``."""

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def _failure(row: dict, earlier: bool) -> Optional[dict]:
    if row.get("status") not in FAILED_STATUSES:
        return None
    return {"instance": row.get("instance"), "configuration": row.get("configuration"),
            "seed": row.get("seed", 0), "repeat": row.get("repeat", 0), "status": row.get("status"),
            "error": row.get("error") or "", "earlier": earlier}



def _configuration_meta(config: Configuration) -> dict:
    out = {"name": config.name, "backends": list(config.backends), "options": option_dict(config.options)}
    if config.run:
        out["run_options"] = dict(config.run)
    if config.checkout is not None:
        out["checkout"] = config.checkout.describe()
    if config.command is not None:
        out["command"] = config.command.describe()
    return out


def _mode(work: Optional[int]) -> str:
    return "timed" if work is None else f"deterministic with {work:,} work units"


def _code(where: Optional[str]) -> str:
    return "this checkout's code" if where is None else f"the code of {where}"


def _with_step(config: Configuration, selector_step: Optional[Callable[[str], Any]]) -> Configuration:
    """``config`` with the step its ``portfolio[selector=...]`` needs (unchanged without one)."""
    spec = dict(config.run).get("selector")
    if spec is None:
        return config
    if selector_step is None:
        raise BenchError(f"configuration {config.name!r}: portfolio[selector=...] needs a "
                         f"selector step from the caller (`portfolio bench` gives it)")
    return replace(config, prepare=selector_step(spec))


def run_sweep(instances: Sequence[str | Path], backends: Optional[Sequence[str]] = None,
              portfolio: bool = False, time_limit: Optional[float] = None,
              contest_timeouts: bool = False, seeds: Sequence[int] = (0,), repeat: int = 1,
              jobs: Optional[int] = None, name: Optional[str] = None, runs_dir: str | Path = "runs",
              resume: bool = False, force: bool = False, dask_scheduler: Optional[str] = None,
              console=None, command: Optional[list[str]] = None,
              on_row: Optional[Callable[[dict], None]] = None,
              assignments: Sequence[str] = (), config: Optional[Sequence[str] | str] = None,
              deterministic: bool = False, work: Optional[int] = None,
              selector_step: Optional[Callable[[str], Any]] = None) -> SweepResult:
    """Plan and run a sweep, streaming rows to ``runs_dir/name/results.jsonl``.

    ``deterministic`` (``--deterministic``) and ``work`` (``--work``, which implies it): every task
    in deterministic mode, the time limit its safety net; rows record ``work`` and ``plan_hash``.

    ``assignments`` (``--option``) and ``config`` (``--config``: one file or several, merged in
    order): backend options for every configuration (a configuration's own, in brackets or its
    ``@FILE.toml``, override them).
    ``selector_step``: for a configuration's ``portfolio[selector=SPEC]``, the step its tasks
    apply before the run (``portfolio.api.bench_selection.selector_step``: this floor does not import
    the selection); it raises :class:`BenchError` for a file that is no selector.
    ``console``: a rich console for the progress display (None: no display). Raises
    :class:`BenchError` for bad input before anything runs. On KeyboardInterrupt the finished rows stay
    and the result says ``interrupted``.
    """
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    if resume and force:
        raise BenchError("--resume and --force contradict each other: --resume finishes the run in "
                         "the folder, --force starts it over; pass one of them")
    paths = expand_instances(instances)
    insts = resolve_instances(paths, time_limit, contest_timeouts)
    if work is not None and work < 1:
        raise BenchError("--work must be a positive number of work units")
    deterministic = deterministic or work is not None
    configs = resolve_configurations(backends, portfolio, assignments, config, deterministic,
                                     elsewhere=configuration_elsewhere, commands=command_configuration)
    configs = [_with_step(c, selector_step) for c in configs]
    distributed = dask_scheduler is not None
    if distributed and any(c.command is not None for c in configs):
        raise BenchError("a command configuration (LABEL=cmd:...) runs on this machine only; "
                         "leave out --dask-scheduler")
    if jobs is None:
        jobs = -1 if distributed else 1
    if jobs == 0 or jobs < -1:
        raise BenchError("--jobs must be a positive number")
    plan_jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    tasks = plan_tasks(insts, configs, list(seeds), repeat, plan_jobs, distributed,
                       deterministic, work)

    name = name or _dt.datetime.now().strftime("bench-%Y%m%d-%H%M%S")
    if not name or "/" in name or name in (".", ".."):
        raise BenchError(f"bad run name {name!r}")
    folder = Path(runs_dir) / name
    results_path = folder / RESULTS

    old_meta: dict = {}
    if resume and (folder / META).exists():
        with contextlib.suppress(OSError, json.JSONDecodeError):
            old_meta = json.loads((folder / META).read_text())
    # A run that fails before any task finished (Dask unreachable, ...) leaves no folder behind,
    # so that the same command can simply be run again.
    fresh = force or not folder.exists() or not any(folder.iterdir())
    moved = prepare_folder(folder, resume, force)
    repair_tail(results_path)
    done_rows, _ = read_rows(results_path)
    done: dict[tuple, dict] = {row_key(r): r for r in done_rows}
    for task in tasks:
        old = done.get(task.key)
        if old is not None and float(old.get("time_limit", task.time_limit)) != task.time_limit:
            raise BenchError(f"{folder}: {task.instance} / {task.configuration} ran with a time limit of "
                             f"{old.get('time_limit')} s, not {task.time_limit:g} s; resume with the "
                             f"same limits or use another --name")
        if old is not None and old.get("options_given", {}) != option_dict(task.options):
            raise BenchError(f"{folder}: configuration {task.configuration} ran with the options "
                             f"{old.get('options_given', {})}, not {option_dict(task.options)}; "
                             f"resume with the same options or use another --name")
        if old is not None and old.get("work") != task_work(task):
            raise BenchError(f"{folder}: {task.instance} / {task.configuration} ran "
                             f"{_mode(old.get('work'))}, not {_mode(task_work(task))}; resume in the "
                             f"same mode or use another --name")
        where = None if task.checkout is None else task.checkout.root or task.checkout.python
        ran = (old.get("checkout") or {}) if old is not None else {}
        if old is not None and (ran.get("path") or ran.get("python")) != where:
            raise BenchError(f"{folder}: configuration {task.configuration} ran "
                             f"{_code(ran.get('path') or ran.get('python'))}, not {_code(where)}; "
                             f"resume with the same code or use another --name")
        conflict = None if old is None else resume_conflict(old, task.command)
        if conflict:
            raise BenchError(f"{folder}: {conflict}")
    todo = [t for t in tasks if t.key not in done]
    skipped = len(tasks) - len(todo)

    session = {"started": now_iso(), "command": command or sys.argv, "tasks_planned": len(tasks),
               "tasks_skipped": skipped, "jobs": jobs, "dask_scheduler": dask_scheduler,
               "machine": machine_info(), "status": "running"}
    meta = {
        "format": FORMAT_VERSION,
        "name": name,
        "created": old_meta.get("created", session["started"]),
        "status": "running",
        "instances": merge_named(old_meta.get("instances", []), [asdict(i) for i in insts]),
        "configurations": merge_named(old_meta.get("configurations", []),
                                       [_configuration_meta(c) for c in configs]),
        "seeds": sorted(set(old_meta.get("seeds", [])) | set(seeds)),
        "repeat": max(int(old_meta.get("repeat", 0)), repeat),
        "time_limit": {"mode": "contest" if contest_timeouts else "fixed", "seconds": time_limit},
        "deterministic": {"work": task_work(tasks[0])} if deterministic else None,
        "plugins_env": os.environ.get(PLUGINS_ENV),
        "versions": package_versions(),
        "git": git_revision(),
        "sessions": old_meta.get("sessions", []) + [session],
    }
    write_json_atomic(folder / META, meta)

    result = SweepResult(folder, len(tasks), skipped, 0, moved_old_to=moved)
    planned = {t.key for t in tasks}
    result.failures = [f for key, row in done.items() if key in planned
                       for f in [_failure(row, earlier=True)] if f]
    guard = max(t.time_limit for t in tasks) * 1.5 + GRACE_MIN + 120.0
    display = SweepProgress(console, len(tasks), skipped, [i.name for i in insts]) if console else None
    if display:
        for task in tasks:
            if task.key in done:
                display.note_best(done[task.key])
    status = "complete"
    todo, scratch = with_scratch(todo)
    try:
        # once per instance, before any task runs (docs/features.md): every row carries them
        features = sweep_features([i for i in insts if any(t.instance == i.name for t in todo)],
                                  folder)
        with (display or contextlib.nullcontext()), results_path.open("a", encoding="utf-8") as out:
            if todo:
                for row in parallel_rows(todo, jobs, dask_scheduler, guard):
                    solution = row.pop("solution", None)
                    row.setdefault("features", features.get(row.get("instance")))
                    write_logs(folder, row, row.pop("output", None))
                    if solution is not None:
                        sol_path = solution_file(folder, row)
                        sol_path.parent.mkdir(exist_ok=True)
                        sol_path.write_text("[" + ", ".join(map(str, solution)) + "]\n")
                        row["solution_file"] = str(sol_path.relative_to(folder))
                    out.write(json.dumps(row, separators=(",", ":")) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                    result.finished += 1
                    result.statuses[row["status"]] = result.statuses.get(row["status"], 0) + 1
                    failure = _failure(row, earlier=False)
                    if failure:
                        result.failures.append(failure)
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
        remove_scratch(scratch)
        session.update(status=status, finished=now_iso(), tasks_run=result.finished)
        meta["status"] = status
        if status == "failed" and fresh and result.finished == 0:
            shutil.rmtree(folder, ignore_errors=True)
            if moved is not None:  # --force had moved the old run aside: put it back
                with contextlib.suppress(OSError):
                    moved.rename(folder)
        else:
            write_json_atomic(folder / META, meta)
    return result

