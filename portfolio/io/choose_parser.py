"""Which parser loads a contest or extended JSON file: ``json`` or the fast scanner, by size.

Both give the same :class:`~portfolio.problem.Problem`; what differs is the time to the first
answer. ``json`` needs no numba import, so it wins on small files; the fast scanner wins on large
ones, once compiled, and compiling it on a cold cache costs about 6 s of a solve's budget. Every
reader of a problem for a solve (``portfolio.load``/``solve``, the CLI, a cluster's shard) comes
here through :func:`portfolio.adapters.formats.read_any`.
"""

from __future__ import annotations

import os

from ..problem import Problem
from .common import PathLike
from .read import check_node_names, parse_problem, read_bytes, split_node_names

SMALL_FILE_BYTES = 2**20
"""Up to this size ``json`` parses faster than numba (the fast scanner) imports, warm or cold."""

CAREFUL_LOAD_MAX_BYTES = 200 * 2**20
"""Up to this size a load on a cold numba cache parses with ``json`` instead of compiling the fast
scanner (compiling costs about 6 s of a solve's budget)."""


def _scanner_cache_warm() -> bool:
    """Whether the fast loader's numba cache holds compiled code newer than its source. Unknown
    counts as warm."""
    try:
        import numba

        from .. import jsonscan

        source = os.path.getmtime(jsonscan.__file__)
        paths = [o._cache._cache_file._index_path for o in vars(jsonscan).values()
                 if isinstance(o, numba.core.dispatcher.Dispatcher)]
        return not paths or all(os.path.exists(p) and os.path.getmtime(p) >= source for p in paths)
    except Exception:  # noqa: BLE001 -- numba internals moved: behave as before
        return True


def load_contest(path: PathLike) -> Problem:
    """A contest or extended JSON file (gzip or not), as :func:`portfolio.io.load_problem` reads
    it, choosing the parser by size: ``json`` (no numba import) for small files and, on a cold
    cache, for files up to CAREFUL_LOAD_MAX_BYTES; the fast scanner otherwise."""
    return load_contest_named(path)[0]


def load_contest_named(path: PathLike) -> tuple[Problem, tuple[str, ...] | None]:
    """:func:`load_contest` and the file's node names (``node_names``; None without)."""
    data, names = split_node_names(read_bytes(path), path)
    fast = len(data) > SMALL_FILE_BYTES and (len(data) > CAREFUL_LOAD_MAX_BYTES
                                             or _scanner_cache_warm())
    problem = parse_problem(data, path, fast=fast)
    check_node_names(path, problem, names)
    return problem, names
