"""Machine-wide locks around numba compile stages, shared by the presolve and the search kernels,
markers of the stages already in the cache, and the side-by-side compilation of stages.

Lives in the presolve package because it is the lowest floor that compiles kernels; the search
kernels (:mod:`portfolio.kernels.engine`) use the same locks for their own stages.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable, Iterator, Optional


def _lock_path(stage: str) -> str:
    """One lock file per stage and numba cache location (a cold run in its own ``NUMBA_CACHE_DIR``
    never waits for a warm one). The location is read from the environment, as numba reads it,
    without importing numba."""
    import hashlib
    import tempfile

    where = os.environ.get("NUMBA_CACHE_DIR") or os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    tag = hashlib.sha1(where.encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"portfolio-jit-{os.getuid()}-{tag}-{stage}.lock")


@contextmanager
def compile_lock(stage: str, wait: bool = True) -> Iterator[bool]:
    """Hold the machine-wide lock of a compile stage; yields whether it is held (always, unless
    ``wait`` is false and another process holds it).

    Why: the runner starts the backends that share the kernels (greedy, localsearch, bound, and its
    own presolve child) in separate processes at once; on a cold cache each would compile the same
    kernels, 2-4 copies on 2 cores. Under the lock one process compiles a stage, the others compile
    another stage meanwhile (see :func:`compile_stages`) or wait, and then load it from numba's
    on-disk cache in well under a second. ``flock`` is released by the kernel when a process dies,
    so a worker killed at its deadline never blocks the next one.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no coordination, each process compiles what it needs
        yield True
        return
    try:
        fh = open(_lock_path(stage), "a+")
    except OSError:
        yield True
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def compile_slot() -> Iterator[None]:
    """One of ``os.cpu_count()`` machine-wide compile slots: stages compile side by side, but never
    more at once than there are cores (a third compiler would only slow the two that matter)."""
    slots = max(1, os.cpu_count() or 1)
    for i in range(slots):
        with compile_lock(f"slot{i}", wait=False) as held:
            if held:
                yield
                return
    with compile_lock(f"slot{os.getpid() % slots}"):
        yield


def trace(what: str) -> None:
    """With ``PORTFOLIO_JIT_TRACE=<file>``, append a timestamped line per compile event (who
    compiled which stage when: ``benchmarks/compile.py`` and cold-run diagnosis read it)."""
    path = os.environ.get("PORTFOLIO_JIT_TRACE")
    if path:
        import time

        with open(path, "a") as fh:
            fh.write(f"{time.time():.3f} {os.getpid()} {what}\n")


def compile_stages(stages: "dict[str, Callable[[], object]]",
                   after: "Optional[dict[str, tuple[str, ...]]]" = None) -> None:
    """Run every stage's warm-up call (in the dict's dependency order), compiling what the cache
    lacks, side by side with other processes.

    A stage already marked only loads. Otherwise the first stage whose lock is free is compiled
    (under a compile slot), even out of order: a later stage compiles what it needs of the earlier
    ones itself, so two processes on a cold cache fill it on two cores (measured after the
    ``prepare`` stage: ``greedy`` 19 CPU s, ``moves`` 20, ``moves`` first 24 then ``greedy`` 5.5).
    A stage listed in ``after`` is taken out of order only once the stages it names are marked: it
    calls most of their kernels, and compiling them a second time beside their compiler would
    only slow both (measured: ``search`` started beside ``moves`` did not finish in 25 s). When
    every pending stage is being compiled elsewhere or waits for one, the first one is waited for.
    """
    after = after or {}
    pending = list(stages)
    while pending:
        ready = next((s for s in pending if is_compiled(s)), None)
        if ready is not None:
            stages[ready]()
            pending.remove(ready)
            continue
        for stage in pending:
            if stage != pending[0] and not all(is_compiled(d) for d in after.get(stage, ())):
                continue
            with compile_lock(stage, wait=False) as held:
                if held:
                    _compile_or_load(stage, stages[stage])
                    pending.remove(stage)
                    break
        else:
            with compile_lock(pending[0]):
                _compile_or_load(pending[0], stages[pending[0]])
            pending.pop(0)


def _compile_or_load(stage: str, call: "Callable[[], object]") -> None:
    """Under the stage's lock: load it when another process marked it meanwhile, else compile it
    in a compile slot and mark it."""
    if is_compiled(stage):
        call()
        return
    trace(f"compiling {stage}")
    with compile_slot():
        call()
    mark_compiled(stage)


STAGES = ("presolve", "prepare", "greedy", "moves", "trws", "search")
"""Every compile stage, in dependency order: the presolve's kernels, then the search kernels' stages
(:data:`portfolio.kernels.engine.STAGES`)."""


def _marker_path(stage: str) -> str:
    """Marker of a stage compiled into the cache that this process's numba reads: beside the cache
    (``NUMBA_CACHE_DIR``, else the package's ``__pycache__``), keyed by the kernels' sources as numba
    keys its own cache (file sizes and modification times), so an edit or an emptied cache makes
    it stale. Read without importing numba."""
    import hashlib

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(pkg, "kernels", "__pycache__")
    if not os.environ.get("NUMBA_CACHE_DIR") and not os.access(
            where if os.path.isdir(where) else os.path.dirname(where), os.W_OK):
        # a read-only install: numba caches in the user's cache folder then, and so do we
        where = os.path.join(os.path.expanduser("~"), ".cache", "portfolio-jit",
                             hashlib.sha1(pkg.encode()).hexdigest()[:12])
    h = hashlib.sha1()
    for sub in ("presolve", "kernels"):
        folder = os.path.join(pkg, sub)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py") and name != "jitlock.py":   # this file compiles nothing
                st = os.stat(os.path.join(folder, name))
                h.update(f"{sub}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return os.path.join(where, f"portfolio-compiled-{stage}-{h.hexdigest()[:12]}")


def mark_compiled(stage: str) -> None:
    """Record that ``stage`` is in the cache (best effort: a read-only cache stays unmarked)."""
    trace(f"compiled {stage}")
    try:
        path = _marker_path(stage)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w"):
            pass
    except OSError:
        pass


def is_compiled(stage: str) -> bool:
    """Whether ``stage`` was compiled into this cache since the kernels last changed.

    Why: a backend that only *profits* from the kernels (an exact backend's starting hint) asks
    first and goes without them on a cold cache, instead of spending its budget compiling."""
    try:
        return os.path.exists(_marker_path(stage))
    except OSError:
        return False


def compiled(upto: str = "search") -> bool:
    """Whether every stage up to ``upto`` is in the cache (markers only: nothing is imported)."""
    return all(is_compiled(stage) for stage in STAGES[:STAGES.index(upto) + 1])
