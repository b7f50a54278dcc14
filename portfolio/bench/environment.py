"""Where and with what a task ran: machine, package and engine versions, source revision, timestamps.

Cached per process: a worker computes them once and stamps every row it writes.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Optional


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
    """With what a task ran: this package, its numeric and Dask stack, and every engine a backend
    known here declares (``BackendMeta.engines``: ortools, python-sat, pytoulbar2, ...), by
    distribution, from the package metadata (no engine is imported)."""
    from ..backend import DISTRIBUTION, distribution_version, engine_versions
    from ..registry import Registry

    out = {}
    for dist in (DISTRIBUTION, "numpy", "numba", "joblib", "dask", "distributed"):
        if (found := distribution_version(dist)) is not None:
            out[dist] = found
    out.update(engine_versions(info.backend for info in Registry().infos()))
    return out


@lru_cache(maxsize=1)
def git_revision() -> Optional[dict]:
    """The commit of the source tree this package runs from (editable installs), or None."""
    where = Path(__file__).resolve().parents[2]  # portfolio/bench/environment.py -> the checkout
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


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")

