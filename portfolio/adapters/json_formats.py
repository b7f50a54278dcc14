"""This project's own formats, contest and extended JSON, as :mod:`.formats` reads and writes them.

Reading chooses the parser by the file's size (``load_contest``): ``json`` (no numba import) for
small files and, on a cold numba cache, for files up to ``CAREFUL_LOAD_MAX_BYTES``; the fast
scanner otherwise. Either parser gives the same Problem. Both formats are read by one reader (an
extended document says so in its first bytes); costs are integers, plans map to themselves.
"""

from __future__ import annotations

import os

from .. import io as pio
from ..problem import Problem
from .conversion import Conversion

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


def load_contest(path: pio.PathLike) -> Problem:
    """A contest or extended JSON file (gzip or not), as ``portfolio.io.load_problem`` reads it,
    choosing the parser by size (see the module's docstring). Same Problem either way."""
    data = pio.read_bytes(path)
    fast = len(data) > SMALL_FILE_BYTES and (len(data) > CAREFUL_LOAD_MAX_BYTES
                                             or _scanner_cache_warm())
    return pio.parse_problem(data, path, fast=fast)


def read_json(path: pio.PathLike, cost_scale: float = 1.0) -> Conversion:
    """A contest or extended JSON file as a :class:`Conversion` that maps plans to themselves."""
    return Conversion.identity(load_contest(path))


def contest_misfit(problem: Problem) -> str:
    """Why ``problem`` does not fit the contest format ('' when it does)."""
    if problem.is_contest_shaped:
        return ""
    return ("the problem is not contest-shaped (several intervals per node, a capacity over time "
            "or a cost offset); write it as extended")


def write_contest(problem: Problem, path: pio.PathLike, cost_scale: float = 1.0) -> None:
    pio.write_problem(problem, path)


def write_extended(problem: Problem, path: pio.PathLike, cost_scale: float = 1.0) -> None:
    pio.write_extended(problem, path)
