"""What ``portfolio.solve`` accepts as a problem, and how a file becomes a :class:`Problem`.

A problem is a path (any format a loader below reads), a :class:`Problem`, or a dict in the contest
layout (``{"problem": {"nodes": ..., "edges": ..., "usage_limit": ...}}``, numpy values allowed).
Everything unusable raises :class:`~portfolio.errors.ProblemError` with the line the CLI prints.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping, Union

from .. import io as pio
from ..errors import ProblemError
from ..problem import Problem

ProblemLike = Union[str, "os.PathLike[str]", Problem, Mapping[str, Any]]
"""Anything :func:`as_problem` turns into a :class:`Problem`."""

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


def load_contest(path: str | os.PathLike[str]) -> Problem:
    """A contest or extended JSON file (gzip or not), as ``portfolio.io.load_problem`` reads it,
    choosing the parser by size: ``json`` (no numba import) for small files and, on a cold cache,
    for files up to CAREFUL_LOAD_MAX_BYTES; the fast scanner otherwise. Same Problem either way."""
    data = pio.read_bytes(path)
    fast = len(data) > SMALL_FILE_BYTES and (len(data) > CAREFUL_LOAD_MAX_BYTES
                                             or _scanner_cache_warm())
    return pio.parse_problem(data, path, fast=fast)


_LOADERS: dict[str, Callable[[Path], Problem]] = {".json": load_contest, ".gz": load_contest}
"""The loader of each file suffix (lower case, the last suffix only). A suffix not listed goes to
``_DEFAULT_LOADER``. This is the one place :func:`load` dispatches from: a new format (the XLA and
Alpa adapters) maps its suffixes here, or replaces ``_DEFAULT_LOADER`` with a function that sniffs
the file itself. A loader raises :class:`ProblemError` (or a subclass) for a file it cannot use."""

_DEFAULT_LOADER: Callable[[Path], Problem] = load_contest
"""The loader of any suffix ``_LOADERS`` does not list (contest JSON: gzip is found by content)."""


def _loader_for(path: Path) -> Callable[[Path], Problem]:
    return _LOADERS.get(path.suffix.lower(), _DEFAULT_LOADER)


def load(path: str | os.PathLike[str]) -> Problem:
    """Load and validate a problem file of any supported format (see ``_LOADERS``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(f"load: expected a path, got {type(path).__name__}")
    return _loader_for(Path(path))(Path(path))


def as_problem(problem: ProblemLike) -> Problem:
    """A :class:`Problem` from a path, a dict in the contest (or extended) layout, or a Problem."""
    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, (str, os.PathLike)):
        return load(problem)
    if isinstance(problem, Mapping):
        return pio.parse_document(dict(problem), "<dict>")
    raise ProblemError(f"problem: expected a path, a dict in the contest layout or a Problem, got "
                       f"{type(problem).__name__}")


def example_path() -> Path:
    """The small example instance shipped with the package (8 nodes, 432 plans, optimum 305)."""
    return Path(str(resources.files("portfolio.data") / "example.json"))
