"""Machine-wide locks around numba compile stages, shared by the presolve and the search kernels.

Lives in the presolve package because it is the lowest floor that compiles kernels; the search
kernels (:mod:`portfolio.kernels.engine`) use the same locks for their own stages.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator


def _lock_path(stage: str) -> str:
    """One lock file per stage and numba cache location (a cold run in its own ``NUMBA_CACHE_DIR``
    never waits for a warm one)."""
    import hashlib
    import tempfile

    from numba.core import config

    where = config.CACHE_DIR or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tag = hashlib.sha1(where.encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"portfolio-jit-{os.getuid()}-{tag}-{stage}.lock")


@contextmanager
def compile_lock(stage: str) -> Iterator[None]:
    """Hold the machine-wide lock of a compile stage.

    Why: the runner starts the backends that share the kernels (greedy, localsearch, bound, the
    exact backends' hint, and its own presolve child) in separate processes at once; on a cold
    cache each would compile the same kernels, 2-4 copies on 2 cores. Under the lock one process compiles a stage, the others
    wait (leaving the core to a backend that needs no compilation) and then load the stage from
    numba's on-disk cache in well under a second. ``flock`` is released by the kernel when a
    process dies, so a worker killed at its deadline never blocks the next one.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no coordination, each process compiles what it needs
        yield
        return
    try:
        fh = open(_lock_path(stage), "a+")
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
