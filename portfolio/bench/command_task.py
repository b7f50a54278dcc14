"""One task of a command configuration (:mod:`.command`): run the command, read its answer, verify it.

The command runs as the contest ran its entries: a process of its own (its own process group,
started in the sweep's working directory, stdin closed, stdout and stderr captured to files), the
instance path and the timeout on its command line, and its answer the last non-empty line of its
stdout, ``[s0, s1, ...]`` or ``[]``, lines that start with ``#`` aside (the contest winner prints its
diagnostics as such comments, after its last plan too). It is killed with its whole process group (and any
descendant that left it) at the time limit plus :data:`GRACE`; whatever it left running after it
exited goes the same way, so it cannot load the next task. Its wall time counts from just before
the process is started: it loads and parses the instance itself, inside its limit.

The plan is verified here with the core evaluator (:func:`portfolio.evaluate.evaluate`) on the
instance as :func:`portfolio.io.load_problem` reads it, outside the command's time. The row is
like any other (status, cost, elapsed, the incumbent trace: the final answer alone, at the wall
time), plus ``command`` (what ran and how it ended) and its captured output, which the sweep
writes to ``logs/``. Statuses: ``feasible``, ``late`` (a feasible plan after the limit),
``no-solution`` (``[]`` or nothing printed), ``infeasible`` (a plan over the memory limit),
``forbidden`` (a plan that picks a cost of 10**18), ``bad-output`` (the last line is not a plan of
this instance), ``crashed`` (no plan, and the process failed), ``timeout`` (killed), ``error``
(could not be started).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .command import Command, format_timeout
from .environment import git_revision, machine_info, now_iso, package_versions
from .plan import Task, instance_name

GRACE = 5.0
"""Seconds a command may run past its time limit before it is killed with its process group
(an answer inside the grace is recorded, as ``late``)."""

OUTPUT_CAP = 4 << 20
"""Bytes of each of stdout and stderr kept for ``logs/`` (the end of a longer output)."""

TAIL_LINES = 5


def plain_copy(path: str, scratch: Optional[str]) -> str:
    """The instance as plain JSON: ``path`` itself, or its uncompressed copy in ``scratch``, made
    once per sweep (atomically: tasks running side by side may ask for it at once)."""
    if not path.endswith(".gz"):
        return os.path.abspath(path)
    folder = Path(scratch or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{instance_name(path)}.json"
    if not target.exists():
        handle, part = tempfile.mkstemp(dir=folder, prefix=target.name, suffix=".part")
        try:
            with gzip.open(path, "rb") as src, os.fdopen(handle, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(part, target)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(part)
    return str(target)


def _values(task: Task, command: Command) -> dict[str, str]:
    values = {"file_gz": os.path.abspath(task.path), "timeout": format_timeout(task.time_limit),
              "seed": str(task.seed), "file": ""}
    if command.uses("file"):
        values["file"] = plain_copy(task.path, command.scratch)
    return values


def _kill_group(pid: int) -> None:
    """SIGKILL the command's process tree (descendants that made groups of their own included),
    then its process group (forks whose parent already exited)."""
    from .task import _kill_tree

    _kill_tree(pid)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _read_capped(handle) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - OUTPUT_CAP))
    data = handle.read()
    text = data.decode("utf-8", errors="replace")
    return text if size <= OUTPUT_CAP else f"[... first {size - OUTPUT_CAP} bytes cut ...]\n" + text


def run_process(argv: list[str], limit: float) -> dict:
    """Run ``argv`` until it exits or ``limit`` plus :data:`GRACE` seconds pass (then kill it):
    ``{elapsed, exit_code, signal, killed, stdout, stderr}``, or ``{error}`` if it cannot start."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
        except OSError as exc:
            return {"error": f"cannot start {argv[0]}: {exc.strerror or exc}"}
        killed = False
        try:
            proc.wait(timeout=max(0.0, limit + GRACE - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            killed = True
        finally:   # killed past the grace, an interrupted sweep, or leftovers of a finished command
            elapsed = time.monotonic() - t0
            _kill_group(proc.pid)
            code = proc.wait()
        return {"elapsed": elapsed, "exit_code": None if code < 0 else code,
                "signal": signal.Signals(-code).name if code < 0 else None, "killed": killed,
                "stdout": _read_capped(out), "stderr": _read_capped(err)}


def last_line(text: str, comments: bool = False) -> Optional[str]:
    """The last non-empty line of ``text``; with ``comments``, the last that is not a comment
    (``# ...``, as the contest winner prints its diagnostics, after its plans too)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not (comments and line.startswith("#")):
            return line
    return None


def read_plan(line: Optional[str]) -> Optional[list[int]]:
    """The plan on the last line: a JSON list of integers (``[]`` included); None when it is not one."""
    if line is None or not (line.startswith("[") and line.endswith("]")):
        return None
    try:
        plan = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(plan, list) or any(isinstance(s, bool) or not isinstance(s, int) for s in plan):
        return None
    return plan


@lru_cache(maxsize=1)
def _problem(path: str):
    from ..io import load_problem

    return load_problem(path)


def judge(task: Task, plan: list[int]) -> dict:
    """The plan through the core evaluator: the status and cost it earns, and the evaluation."""
    from ..evaluate import SolutionError, evaluate

    try:
        ev = evaluate(_problem(task.path), plan)
    except SolutionError as exc:
        return {"status": "bad-output", "error": f"its plan does not fit the instance: {exc}"}
    kept = {k: v for k, v in ev.to_dict().items() if k in (
        "cost", "feasible", "peak_usage", "usage_limit", "violated_time_points",
        "forbidden_node_choices", "forbidden_edge_entries")}
    if ev.has_forbidden:
        return {"status": "forbidden", "evaluation": kept,
                "error": f"its plan picks {ev.forbidden_node_choices} forbidden node strategies and "
                         f"{ev.forbidden_edge_entries} forbidden edge entries (cost 10**18)"}
    if not ev.feasible:
        return {"status": "infeasible", "evaluation": kept,
                "error": f"its plan is over the memory limit at {ev.violated_time_points} time "
                         f"point(s) (peak {ev.peak_usage:,}, limit {ev.usage_limit:,})"}
    return {"status": "feasible", "cost": ev.cost, "evaluation": kept}


def _outcome(task: Task, ran: dict) -> dict:
    """Status, cost and message of a finished (or killed) command, from its output."""
    if ran["killed"]:
        return {"status": "timeout", "error": f"still running {task.time_limit + GRACE:g} s after its "
                                              f"start (limit {task.time_limit:g} s plus {GRACE:g} s "
                                              f"grace); killed with its process group"}
    line = last_line(ran["stdout"], comments=True)
    plan = read_plan(line)
    if plan is None:
        failed = ran["exit_code"] != 0
        if failed:
            how = f"signal {ran['signal']}" if ran["signal"] else f"exit code {ran['exit_code']}"
            why = last_line(ran["stderr"])
            return {"status": "crashed", "error": f"ended by {how} without a plan"
                                                  + (f": {why[:200]}" if why else "")}
        if line is None:
            return {"status": "no-solution", "error": "it printed nothing on stdout"}
        return {"status": "bad-output", "error": f"the last line of its stdout (comments aside) is "
                                                 f"not a plan: {line[:80]!r}" + ("..." if len(line) > 80 else "")}
    if not plan:
        return {"status": "no-solution", "error": None}
    out = judge(task, plan)
    out.setdefault("error", None)
    if out["status"] == "feasible":
        out["solution"] = plan
        if ran["elapsed"] > task.time_limit:
            out["status"] = "late"
    return out


def run_command_task(task: Task) -> dict:
    """One task of a command configuration, start to end, never raising: its row (with
    ``solution`` and ``output`` for the sweep to write beside the results)."""
    from .task import _row_header

    command: Command = task.command
    started = now_iso()
    t0 = time.monotonic()
    try:
        argv = command.expand(_values(task, command))
        ran = run_process(argv, task.time_limit)
    except Exception as exc:  # noqa: BLE001 -- e.g. an unreadable instance: the sweep goes on
        argv, ran = list(command.argv), {"error": f"{type(exc).__name__}: {exc}"}
    if "error" in ran:
        outcome = {"status": "error", "error": ran["error"]}
        ran = {"elapsed": None, "exit_code": None, "signal": None, "killed": False, "stdout": "",
               "stderr": ""}
    else:
        try:
            outcome = _outcome(task, ran)
        except Exception as exc:  # noqa: BLE001
            outcome = {"status": "error", "error": f"reading its answer: {type(exc).__name__}: {exc}"}
    cost = outcome.get("cost")
    elapsed = None if ran["elapsed"] is None else round(ran["elapsed"], 3)
    trace = [] if cost is None else [{"time": elapsed, "cost": int(cost), "backend": task.configuration}]
    row = {
        **_row_header(task),
        "status": outcome["status"], "cost": cost, "feasible": cost is not None,
        "elapsed": elapsed, "load_seconds": None, "time_to_best": None if cost is None else elapsed,
        "lower_bound": None, "winner": None if cost is None else task.configuration, "proof": None,
        "fallback": None,   # not the runner: no fallback plan to speak of
        "engines": {}, "options": {}, "incumbents": trace, "gap_trace": [], "backend_runs": [],
        "workers": None, "plan_hash": None, "deterministic": None, "error": outcome.get("error"),
        "command": {**command.describe(), "argv": argv, "cwd": os.getcwd(), "grace": GRACE,
                    "exit_code": ran["exit_code"], "signal": ran["signal"], "killed": ran["killed"],
                    "evaluation": outcome.get("evaluation"),
                    "stderr_tail": ran["stderr"].splitlines()[-TAIL_LINES:]},
        "solution": outcome.get("solution"),
        "output": {"stdout": ran["stdout"], "stderr": ran["stderr"]},
        "started_at": started, "finished_at": now_iso(),
        "wall_seconds": round(time.monotonic() - t0, 3),
        "machine": machine_info(), "versions": dict(package_versions()), "git": git_revision(),
    }
    return row
