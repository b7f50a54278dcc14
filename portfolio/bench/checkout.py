"""Configurations that run another checkout's code: ``-b 'before=portfolio@../main'``.

A before/after of a code change needs both codes in one sweep, alternated. A configuration written
``LABEL=MEMBERS@PATH`` (pip's direct-reference form) runs its tasks in a subprocess that imports
``portfolio`` from PATH: a checkout of this project (its ``.venv/bin/python`` when it has one, else
this interpreter, with the checkout first on the path and its ``plugins/`` as ``portfolio_plugins``),
or a Python interpreter whose environment has the package installed. That code resolves the
members (``portfolio`` is *its* default set) and runs the task with its own
``portfolio.bench.task.run_task``, so the row is that code's answer in the row format; the row
also records which code ran (``checkout``: path, interpreter, commit, where ``portfolio`` was
imported from, and its built-in backends).

The subprocess runs a short bootstrap (:data:`BOOTSTRAP`) that uses only what every checkout with
``portfolio bench`` has (``Task``, ``run_task``, ``resolve_configurations``), so an older checkout
works too; a field its ``Task`` lacks (backend options, deterministic mode) is refused in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional, Sequence

from .plan import LABELLED, BenchError, Configuration, Task, option_set

STARTUP_GRACE = 60.0
"""Seconds a subprocess may take beyond its task's own limit and grace (interpreter start, imports,
the warm-up that in-process tasks do before their clock starts too)."""

BOOTSTRAP = r'''
import dataclasses, inspect, json, os, sys, threading, time
spec = json.load(open(sys.argv[1]))
root = spec.get("root")
if root:
    sys.path.insert(0, root)
    init = os.path.join(root, "plugins", "__init__.py")
    if os.path.exists(init):   # the checkout's backends, whatever this environment installed
        import importlib.util
        found = importlib.util.spec_from_file_location(
            "portfolio_plugins", init, submodule_search_locations=[os.path.dirname(init)])
        module = importlib.util.module_from_spec(found)
        sys.modules["portfolio_plugins"] = module
        found.loader.exec_module(module)
parent = os.getppid()

def watch():   # the sweep's task went away: take this process and its tree down
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            try:
                import psutil
                for proc in psutil.Process().children(recursive=True):
                    try:
                        proc.kill()
                    except Exception:
                        pass
            finally:
                os._exit(1)

threading.Thread(target=watch, daemon=True).start()
import portfolio
from portfolio.bench import plan
out = {"portfolio": os.path.dirname(os.path.abspath(portfolio.__file__)),
       "task_fields": [f.name for f in dataclasses.fields(plan.Task)]}
try:
    import portfolio_plugins
    out["plugins"] = os.path.dirname(os.path.abspath(portfolio_plugins.__file__))
except Exception:
    pass
try:
    if spec["mode"] == "resolve":
        params = inspect.signature(plan.resolve_configurations).parameters
        kw = {k: spec[k] for k in ("assignments", "config") if spec.get(k) and k in params}
        missing = [k for k in ("assignments", "config") if spec.get(k) and k not in params]
        if missing:
            raise plan.BenchError("its bench takes no backend options (--option, --config)")
        try:
            configs = plan.resolve_configurations([spec["spec"]], False, **kw)
        except plan.BenchError:
            if spec["members"] != "portfolio":
                raise
            configs = plan.resolve_configurations(None, True, **kw)   # before 'portfolio' as a member
        config = configs[0]
        out["backends"] = list(config.backends)
        out["options"] = {b: dict(v) for b, v in getattr(config, "options", ())}
    else:
        from portfolio.bench.task import run_task
        fields = set(out["task_fields"])
        given = spec["task"]
        refused = [k for k, v in given.items() if k not in fields and v not in (None, False, [], {})]
        if refused:
            raise plan.BenchError("its bench tasks take no " + ", ".join(refused))
        kw = {k: v for k, v in given.items() if k in fields}
        kw["backends"] = tuple(kw["backends"])
        if "options" in kw:
            kw["options"] = tuple((b, tuple((k, v) for k, v in items)) for b, items in kw["options"])
        out["row"] = run_task(plan.Task(**kw))
except plan.BenchError as exc:
    out["error"] = str(exc)
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
'''
"""What the other checkout's interpreter runs: ``python -c BOOTSTRAP SPEC.json OUT.json``."""


@dataclass(frozen=True)
class Checkout:
    """Where a configuration's code comes from: a checkout folder (``root``) and the interpreter
    that runs it, or an interpreter alone (``root`` None)."""

    given: str
    python: str
    root: Optional[str] = None

    def describe(self) -> dict:
        """What rows and ``meta.json`` record of it: path, interpreter, commit and dirty state."""
        out: dict[str, Any] = {"path": self.root, "python": self.python}
        if self.root is not None:
            out.update(_commit(self.root))
        return out


def find_checkout(text: str) -> Checkout:
    """``PATH`` of ``LABEL=MEMBERS@PATH``: a checkout of this project, or a Python interpreter."""
    path = Path(text.strip()).expanduser()
    if not text.strip():
        raise BenchError("a configuration's '@' needs a checkout folder or a Python interpreter after it")
    if path.is_dir():
        root = path.resolve()
        if not (root / "portfolio" / "__init__.py").is_file():
            raise BenchError(f"{text}: not a checkout of this project (no portfolio/__init__.py in it)")
        venv = root / ".venv" / "bin" / "python"
        python = str(venv) if venv.exists() and os.access(venv, os.X_OK) else sys.executable
        return Checkout(text, python, str(root))
    if path.is_file() and os.access(path, os.X_OK):
        return Checkout(text, str(path.absolute()))
    raise BenchError(f"{text}: no such checkout folder or Python interpreter")


@lru_cache(maxsize=None)
def _commit(root: str) -> dict:
    """The commit of a checkout and whether its tracked files differ from it (empty: not git)."""
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return {}
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def _call(checkout: Checkout, spec: dict, timeout: Optional[float]) -> dict:
    """Run the bootstrap in the checkout's interpreter; its answer, or a ``failure`` to report."""
    with tempfile.TemporaryDirectory(prefix="bench-checkout-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_path.write_text(json.dumps(dict(spec, root=checkout.root)))
        env = dict(os.environ)
        if checkout.root is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout.root, env.get("PYTHONPATH")]))
        log_path = Path(tmp) / "stderr.txt"
        with log_path.open("wb") as log:
            # a neutral working directory: `-c` puts it first on sys.path
            proc = subprocess.Popen([checkout.python, "-c", BOOTSTRAP, str(spec_path), str(out_path)],
                                    cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
            try:
                code = proc.wait(timeout=timeout)
            except BaseException as exc:
                from .task import _kill_tree
                _kill_tree(proc.pid)
                proc.wait()
                if isinstance(exc, subprocess.TimeoutExpired):
                    return {"failure": "timeout", "why": f"the subprocess of {checkout.given} was "
                                                         f"still running after {timeout:.0f} s; killed"}
                raise
        if out_path.exists():
            with contextlib.suppress(ValueError):
                return json.loads(out_path.read_text())
        tail = log_path.read_text(errors="replace").strip().splitlines()[-8:]
        return {"failure": "crashed", "why": f"the subprocess of {checkout.given} ({checkout.python}) "
                                             f"exited with code {code} without a result"
                                             + (f": {tail[-1]}" if tail else ""), "traceback": tail}


def _config_for_elsewhere(config: Any) -> Any:
    """The config file(s) as the other checkout's bench takes them: absolute, one file as a plain
    path (what a checkout from before several files were taken reads), several as a list."""
    from ..configure import config_paths

    paths = [str(Path(p).resolve()) for p in config_paths(config)]
    return None if not paths else paths[0] if len(paths) == 1 else paths


def resolve_elsewhere(checkout: Checkout, label: str, members: str, assignments: Sequence[str],
                      config: Any) -> tuple[tuple[str, ...], dict[str, dict[str, Any]], dict]:
    """The backends and options of ``LABEL=MEMBERS`` as the checkout's own bench resolves them
    (its default set, its backends' declarations), and what its ``Task`` takes (``config``: one
    config file or several)."""
    spec = {"mode": "resolve", "spec": f"{label}={members}", "members": members.strip(),
            "assignments": list(assignments), "config": _config_for_elsewhere(config)}
    answer = _call(checkout, spec, timeout=120.0)
    if "failure" in answer:
        raise BenchError(f"configuration {label!r}: {answer['why']}")
    if answer.get("error"):
        raise BenchError(f"configuration {label!r} in {checkout.given}: {answer['error']}")
    imported = Path(answer["portfolio"]).resolve()
    if checkout.root is not None and Path(checkout.root) not in imported.parents:
        raise BenchError(f"configuration {label!r}: {checkout.python} imports portfolio from "
                         f"{imported}, not from the checkout {checkout.root}")
    return tuple(answer["backends"]), answer.get("options") or {}, answer


def check_fields(label: str, checkout: Checkout, fields: Sequence[str], deterministic: bool,
                 options: dict) -> None:
    """Refuse, before any task runs, what the checkout's ``Task`` cannot take."""
    wanted = [("options", bool(options), "backend options"),
              ("deterministic", deterministic, "deterministic mode")]
    lacking = [what for name, used, what in wanted if used and name not in fields]
    if lacking:
        raise BenchError(f"configuration {label!r}: the bench of {checkout.given} takes no "
                         f"{' or '.join(lacking)}")


def run_elsewhere(task: Task) -> dict:
    """One task in its checkout's interpreter: that code's row, stamped with the checkout."""
    from .task import GRACE_MIN, _failed_row
    from .environment import machine_info, now_iso

    assert task.checkout is not None
    given = {f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.name != "checkout"}
    given["backends"] = list(task.backends)
    given["options"] = [[b, [list(kv) for kv in items]] for b, items in task.options]
    limit = task.time_limit + max(GRACE_MIN, 0.25 * task.time_limit) + STARTUP_GRACE
    t0, started = time.monotonic(), now_iso()
    answer = _call(task.checkout, {"mode": "run", "task": given}, timeout=limit)
    if "row" in answer:
        row = answer["row"]
    else:
        status = answer.get("failure", "error")
        row = _failed_row(task, status, answer.get("why") or answer.get("error") or "no result")
        if answer.get("traceback"):
            row["traceback"] = answer["traceback"]
        row.update(started_at=started, finished_at=now_iso(),
                   wall_seconds=round(time.monotonic() - t0, 3), machine=machine_info())
    stamp = task.checkout.describe()
    stamp.update({k: answer[k] for k in ("portfolio", "plugins") if answer.get(k)})
    if task.checkout.root is None and isinstance(row.get("git"), dict):
        stamp.update({k: row["git"].get(k) for k in ("commit", "dirty")})
    row["checkout"] = stamp
    return row


def configuration_elsewhere(spec: str, raw: str, where: str, assignments: Sequence[str],
                            config: Any, deterministic: bool) -> Configuration:
    """A ``LABEL=MEMBERS@PATH`` configuration, resolved by the checkout's own code."""
    match = LABELLED.match(spec)
    if not match or not match.group(1).strip() or "/" in match.group(1):
        raise BenchError(f"configuration {raw!r}: another checkout's configuration needs a name, "
                         f"LABEL=MEMBERS@PATH (e.g. before=portfolio@../main)")
    label, members = match.group(1).strip(), match.group(2).strip()
    checkout = find_checkout(where)
    backends, options, answer = resolve_elsewhere(checkout, label, members, assignments, config)
    check_fields(label, checkout, answer.get("task_fields") or [], deterministic, options)
    return Configuration(label, backends, option_set(options), checkout)
