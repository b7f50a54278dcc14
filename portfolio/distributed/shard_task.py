"""The Dask task of one shard: start the shard process, relay, end it on time.

Dask cannot interrupt a running task, so this wrapper owns the shard's end: the shard process
runs in a session of its own (``start_new_session``) with its own copy of the deadline, and the
wrapper signals its process group at the deadline (plus ``GRACE``), on the driver's stop signal,
when the driver has released the task (its client is gone) or when the scheduler cannot be reached
for ``LOST_AFTER`` seconds: SIGTERM first (the runner ends at once with its best plan), SIGKILL
``TERM_WAIT`` seconds later.

Relay: the shard's stdout lines go to the driver's Dask ``Queue`` (one, shared by all shards); the
driver's incumbent comes from a Dask ``Variable`` and a chain of ``Event`` objects: incumbent
number k sets the event ``{run}-v{k}``, so every shard waits on the scheduler (a long poll: no
polling traffic while nothing changes) and one ``set`` wakes them all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Union

from .plans import pack, unpack

GRACE = 0.5
"""Seconds past the shard's deadline before the wrapper ends the shard process itself."""

TERM_WAIT = 1.0
"""Seconds between SIGTERM and SIGKILL to the shard's process group."""

WAIT_STEP = 0.25
"""Longest wait on the next incumbent event: how often the wrapper checks its deadline and task."""

LOST_AFTER = 3.0
"""Seconds without an answer from the scheduler after which the shard is ended (the driver is
unreachable: its plans could not be delivered anyway)."""

SHARD_ENV = "PORTFOLIO_SHARD"
"""Environment mark of every shard process (and so of everything it starts): the run's id."""


def shard_command() -> list[str]:
    return [sys.executable, "-m", "portfolio.distributed.shard_main"]


def _problem_path(problem: Union[str, dict], run_id: str) -> str:
    """A path the shard process can read: the user's shared path, or the scattered bytes written
    once into the worker's local directory."""
    if isinstance(problem, str):
        return problem
    from distributed import get_worker

    folder = Path(get_worker().local_directory) / "portfolio"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}-{Path(problem['name']).name}"
    if not path.exists() or path.stat().st_size != len(problem["data"]):
        part = path.with_suffix(path.suffix + f".{os.getpid()}.part")
        part.write_bytes(problem["data"])
        os.replace(part, path)
    return str(path)


def _task_released() -> bool:
    """Whether the scheduler has released this task (its driver's client closed or died)."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state

        key = thread_state.key
        state = get_worker().state.tasks.get(key)
        return state is None or state.state in ("cancelled", "released", "forgotten")
    except Exception:  # another distributed version: rely on the deadline and the stop signal
        return False


class _Pump(threading.Thread):
    """Reads the shard's stdout lines and puts them on the driver's queue, tagged with the shard."""

    def __init__(self, stream: Any, queue: Any, index: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.queue, self.index = stream, queue, index
        self.done_seen, self.sent, self.bytes, self.errors = False, 0, 0, 0

    def run(self) -> None:
        for line in self.stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            message["shard"] = self.index
            if message.get("kind") == "plan":
                from .plans import PlanDecodeError, from_text

                try:
                    message = from_text(message)
                    self.bytes += len(message["data"])
                except PlanDecodeError:   # still relayed: the driver refuses it and says so
                    message["data"] = None
            self.done_seen = self.done_seen or message.get("kind") == "done"
            try:
                self.queue.put(pack(message), timeout=LOST_AFTER)
                self.sent += 1
            except Exception:
                self.errors += 1


def run_shard(spec: dict, problem: Union[str, dict], names: dict) -> dict:
    """Run one shard to its end (see the module); returns its summary for the driver's table.

    ``spec``: the shard process's spec without ``problem``; ``problem``: a path, or ``{"name",
    "data"}`` (the file's bytes, scattered once by the driver); ``names``: the run's ``queue``,
    ``variable`` and ``event`` prefix, and ``run`` id.
    """
    from distributed import Queue, Variable, get_client, get_worker

    started = time.time()
    worker = get_worker()
    summary: dict[str, Any] = {"shard": spec["index"], "worker": worker.address,
                               "host": spec.get("host", ""), "started_wall": started}
    if time.time() >= float(spec["end_wall"]) - 0.5:
        return dict(summary, ended="late: the deadline passed before the task started")
    client = get_client()
    queue = Queue(names["queue"], client=client)
    variable = Variable(names["variable"], client=client)
    try:
        path = _problem_path(problem, names["run"])
    except OSError as exc:
        queue.put(pack({"kind": "done", "shard": spec["index"], "status": "error",
                        "note": f"cannot write the scattered problem: {exc}"}))
        return dict(summary, ended="error")
    env = dict(os.environ, **{SHARD_ENV: names["run"]})
    command = spec.get("command") or shard_command()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    tail: deque[str] = deque(maxlen=20)
    threading.Thread(target=lambda: tail.extend(proc.stderr), daemon=True).start()
    pump = _Pump(proc.stdout, queue, spec["index"])
    pump.start()
    shard_spec = {k: v for k, v in spec.items() if k not in ("command",)}
    ended = _relay(proc, dict(shard_spec, problem=path), variable, names, client)
    pump.join(timeout=TERM_WAIT)
    if not isinstance(problem, str):   # our copy of scattered bytes: not left on the worker
        try:
            os.unlink(path)
        except OSError:
            pass
    summary.update(ended=ended, exit=proc.returncode, messages=pump.sent, plan_bytes=pump.bytes,
                   queue_errors=pump.errors, done=pump.done_seen, stderr_tail=list(tail)[-5:],
                   ended_wall=time.time())
    return summary


def _write(proc: subprocess.Popen, message: dict) -> bool:
    try:
        proc.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
        proc.stdin.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False


def _end(proc: subprocess.Popen) -> None:
    """SIGTERM to the shard's process group, SIGKILL ``TERM_WAIT`` seconds later if it lives."""
    for sig, wait in ((signal.SIGTERM, TERM_WAIT), (signal.SIGKILL, TERM_WAIT)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # anything left in its group (a runner worker is killed by its parent's death anyway)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _relay(proc: subprocess.Popen, spec: dict, variable: Any, names: dict, client: Any) -> str:
    """Feed the spec and the incumbents to the shard until it ends; returns why it ended."""
    from distributed import Event

    from .plans import to_text

    end_wall = float(spec["end_wall"])
    if not _write(proc, spec):
        _end(proc)
        return "the shard process did not start"
    seen, last_contact = 0, time.monotonic()
    try:
        while True:
            if proc.poll() is not None:
                return "finished"
            if time.time() >= end_wall + GRACE:
                _end(proc)
                return "deadline"
            if _task_released():
                _end(proc)
                return "released by the driver"
            if time.monotonic() - last_contact > LOST_AFTER:
                _end(proc)
                return "scheduler unreachable"
            wait = max(0.01, min(WAIT_STEP, end_wall + GRACE - time.time()))
            try:
                fired = Event(f"{names['event']}{seen + 1}", client=client).wait(timeout=wait)
                value = unpack(variable.get(timeout=LOST_AFTER)) if fired else None
                last_contact = time.monotonic()
            except Exception:  # the scheduler or the connection: try again until LOST_AFTER
                time.sleep(min(WAIT_STEP, max(0.0, end_wall + GRACE - time.time())))
                continue
            if not value:
                continue
            if value.get("stop"):
                _end(proc)
                return "stopped by the driver"
            if int(value.get("version", 0)) > seen:
                seen = int(value["version"])
                plan = {k: value[k] for k in ("n", "dtype", "data")}
                _write(proc, dict(to_text(plan), version=seen, cost=value["cost"]))
    finally:
        if proc.poll() is None:
            _end(proc)
