"""Fault containment a backend cannot opt out of: its stdout, the processes it starts, its memory.

- **stdout.** A worker's file descriptor 1 is pointed at stderr before any plugin code runs, so
  nothing a backend (or a program it starts) prints can reach the command's stdout, where the answer
  line and ``--json`` go.
- **Processes.** A worker is a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever its backend
  starts, directly or through a daemonising double fork or ``setsid``, stays in its process tree while
  it lives, and the worker kills that tree before it exits. When the parent kills a worker, it stops
  and kills the tree first. Each worker also marks its environment (``PORTFOLIO_WORKER``), so
  processes that escaped anyway (a worker killed mid-fork, a crash) are found by a sweep of /proc
  when the worker ends and when the run ends. Linux only; elsewhere only the process group is killed.
- **Memory.** The parent measures each worker's tree: resident set size first (cheap, from
  ``/proc/PID/statm``) and, only when that is over the cap, private memory (``smaps_rollup``), since
  a forked worker's RSS also counts the instance arrays it shares with the parent. A tree over its cap
  is killed with the note "memory limit"; the others go on. RLIMIT_AS is not used: it caps address
  space, and a forked worker starts with the parent's (730 MB of it with instance A loaded, of which
  260 MB resident, all shared copy-on-write), so the limit would have to follow the parent's size;
  OR-tools (8 workers) and numba themselves ran fine under a 1 GiB RLIMIT_AS in a fresh process.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:
    import multiprocessing as mp

WORKER_ENV = "PORTFOLIO_WORKER"
"""Environment mark of every worker and everything it starts: ``PARENT_PID:WORKER_PID``."""

PR_SET_CHILD_SUBREAPER = 36

MEMORY_SHARE = 0.75
"""Default cap per backend: this share of the machine's RAM divided by the number of backends."""

MIN_MEMORY_LIMIT = 1 << 30
"""The default cap never goes below 1 GiB per backend."""

MEMORY_POLL = 0.2
"""Seconds between two memory measurements of the running workers."""

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PARENT_STDOUT: list[object] = []

_STDOUT_SINK: list[str] = []
"""Where workers started now send their fd 1 instead of stderr (the last path; none: stderr). Set
in the parent by :func:`worker_stdout_to`, inherited through fork: ``portfolio check-plugin``
captures what a backend prints on stdout to name it as a breach."""


class worker_stdout_to:
    """Context manager: workers started inside it write their stdout (fd 1, theirs and their
    children's) to the file ``path`` (appended) instead of stderr."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> "worker_stdout_to":
        _STDOUT_SINK.append(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        _STDOUT_SINK.remove(self.path)


# ------------------------------------------------------------------------------------------ worker side
def isolate_stdout() -> None:
    """Point fd 1 (and ``sys.stdout``) at stderr, or at /dev/null when there is no stderr.

    The inherited ``sys.stdout`` object is kept, never flushed: any text buffered in it is the
    parent's, and flushing it here would print it twice.
    """
    _PARENT_STDOUT.append(sys.stdout)
    try:
        if _STDOUT_SINK:   # captured (portfolio check-plugin): still never the parent's stdout
            sink = os.open(_STDOUT_SINK[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(sink, 1)
            os.close(sink)
            sys.stdout = open(1, "w", closefd=False, buffering=1)
            return
        os.dup2(2, 1)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    sys.stdout = sys.stderr if sys.stderr is not None else open(os.devnull, "w")


def become_subreaper() -> bool:
    """Adopt every orphaned descendant (Linux 3.4+); False where not supported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_GET_CHILD_SUBREAPER = 37


def is_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and bool(flag.value)
    except (OSError, AttributeError):
        return False


def set_subreaper(on: bool) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def start_ticks(pid: int) -> Optional[int]:
    """When ``pid`` started, in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def now_ticks() -> int:
    """Clock ticks since boot now (the scale of :func:`start_ticks`)."""
    try:
        with open("/proc/uptime") as f:
            return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0


def kill_adopted(known: set[int], since_ticks: int) -> list[int]:
    """SIGKILL and reap this process's children that it did not start itself: orphans of a worker
    adopted through the subreaper flag (a crashed worker's programs, even with a scrubbed
    environment). Only children started at or after ``since_ticks`` are candidates."""
    found = []
    for pid in children(os.getpid()):
        ticks = start_ticks(pid)
        if pid in known or ticks is None or ticks < since_ticks:
            continue
        found.extend([pid, *descendants(pid)])
    _signal_all(found, signal.SIGKILL)
    for pid in found:
        try:
            os.waitpid(pid, 0)
        except (ChildProcessError, OSError):
            pass
    return found


def worker_token(parent_pid: int, worker_pid: int) -> str:
    return f"{parent_pid}:{worker_pid}"


def mark_worker() -> None:
    """Set the environment mark that every process this worker starts inherits."""
    os.environ[WORKER_ENV] = worker_token(os.getppid(), os.getpid())


# ------------------------------------------------------------------------------------------ process trees
def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's), from /proc; [] when it is gone."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` in the process tree, breadth first."""
    out: list[int] = []
    seen = {pid}
    frontier = [pid]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children(p):
                if c not in seen:
                    seen.add(c)
                    out.append(c)
                    nxt.append(c)
        frontier = nxt
    return out


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(pid: int, include_root: bool = True) -> list[int]:
    """Freeze ``pid``'s tree (so nothing forks meanwhile), list it again, then SIGKILL all of it."""
    tree = descendants(pid)
    root = [pid] if include_root else []
    _signal_all(root + tree, signal.SIGSTOP)
    tree = list(dict.fromkeys(tree + descendants(pid)))
    _signal_all(root + tree, signal.SIGKILL)
    return tree


def kill_group(process: mp.process.BaseProcess) -> None:
    """SIGKILL a child's process group (a worker and presolve each lead one) and reap the child."""
    if process.is_alive():
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
    process.join(timeout=2.0)


def kill_own_descendants() -> None:
    """Called by a worker before it exits: end everything its backend started."""
    kill_tree(os.getpid(), include_root=False)


def _marked(pid: int, prefix: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    needle = f"{WORKER_ENV}={prefix}".encode()
    return any(item.startswith(needle) for item in env.split(b"\0"))


def sweep(prefix: str) -> list[int]:
    """SIGKILL every process marked with a worker token starting with ``prefix`` (not this one)."""
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    found = [p for p in pids if p != me and _marked(p, prefix)]
    _signal_all(found, signal.SIGKILL)
    return found


# ------------------------------------------------------------------------------------------ memory
def rss_bytes(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


_ROLLUP = re.compile(rb"^(Private_Clean|Private_Dirty|Swap):\s+(\d+) kB", re.M)


def private_bytes(pid: int) -> Optional[int]:
    """Memory only this process holds (private pages and swap), from smaps_rollup."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            text = f.read()
    except OSError:
        return rss_bytes(pid)
    return sum(int(m.group(2)) for m in _ROLLUP.finditer(text)) * 1024


def tree_memory(pid: int, limit: Optional[int] = None) -> Optional[int]:
    """Memory of ``pid`` and its descendants: their RSS, or their private memory when the RSS is
    over ``limit`` (shared copy-on-write pages are the parent's, not the backend's)."""
    pids = [pid, *descendants(pid)]
    sizes = [rss_bytes(p) for p in pids]
    if sizes[0] is None:
        return None
    total = sum(s for s in sizes if s is not None)
    if limit is None or total <= limit:
        return total
    return sum(s for s in (private_bytes(p) for p in pids) if s is not None)


def total_memory() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_memory_limit(backends: int) -> Optional[int]:
    """The documented default cap per backend: MEMORY_SHARE of RAM / backends, at least 1 GiB."""
    total = total_memory()
    if total is None:
        return None
    return max(MIN_MEMORY_LIMIT, int(total * MEMORY_SHARE / max(1, backends)))


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)


def parse_size(text: str) -> Optional[int]:
    """'4G', '512M', '1.5g', '2048' (MiB) -> bytes; 'none' or '0' -> None (no cap).

    Raises ValueError with a one-line message for anything else.
    """
    if text.strip().lower() in ("none", "off", "0"):
        return None
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size; use for example 4G, 512M or none")
    unit = m.group(2).lower() or "m"
    return int(float(m.group(1)) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit])


def mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"
