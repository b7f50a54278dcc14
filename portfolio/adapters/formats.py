"""Which format a file is in, by its name (or as told), and loading or saving any of them.

One small dispatch shared by the CLI and the Python API: ``contest`` and ``extended`` JSON
(:mod:`portfolio.io`), ``xla`` binary and ``xla-text`` requests (:mod:`.xla`). A request comes back
as a :class:`~.request.Conversion`, whose ``expand`` maps plans to the request's own node order; a
JSON file comes back as one whose map is the identity.
"""

from __future__ import annotations

import numpy as np

from ..io import PathLike, load_contest, write_extended, write_problem
from ..problem import Problem
from .request import Conversion

FORMATS = ("contest", "extended", "xla", "xla-text")
XLA_FORMATS = ("xla", "xla-text")
_SUFFIXES = {".json": "contest", ".pb": "xla", ".binpb": "xla", ".textproto": "xla-text",
             ".txtpb": "xla-text", ".pbtxt": "xla-text"}


def format_of(path: PathLike, fmt: str | None = None) -> str:
    """``fmt`` when given, else the format its name ends in (``.gz`` aside); JSON when unknown."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    name = str(path).lower()
    name = name[:-3] if name.endswith(".gz") else name
    for suffix, found in _SUFFIXES.items():
        if name.endswith(suffix):
            return found
    return "contest"


def read_any(path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> Conversion:
    """Load and validate a problem in any format, with the map back to the file's node order."""
    kind = format_of(path, fmt)
    if kind in XLA_FORMATS:
        from .xla import read_request

        return read_request(path, cost_scale, text=kind == "xla-text")
    if cost_scale != 1.0:
        raise ValueError("a cost scale applies to XLA requests only (JSON costs are integers)")
    problem = load_contest(path)  # contest and extended JSON alike, the parser chosen by size
    return Conversion(problem, np.arange(problem.num_nodes, dtype=np.int64))


def load_any(path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> Problem:
    """The :class:`Problem` of a file in any format (followers of a request folded in)."""
    return read_any(path, fmt, cost_scale).problem


def save_any(problem: Problem, path: PathLike, fmt: str | None = None, cost_scale: float = 1.0) -> str:
    """Write ``problem`` in the format named or implied by ``path``; returns the format written.

    A ``.json`` name gets the contest format when the problem fits it, else the extended one.
    """
    kind = format_of(path, fmt)
    if kind in XLA_FORMATS:
        from .xla import write_request

        write_request(problem, path, cost_scale, text=kind == "xla-text")
        return kind
    if cost_scale != 1.0:
        raise ValueError("a cost scale applies to XLA requests only (JSON costs are integers)")
    if kind == "contest" and problem.is_contest_shaped:
        write_problem(problem, path)
        return "contest"
    if kind == "contest" and fmt == "contest":
        raise ValueError("the problem is not contest-shaped (several intervals per node, a capacity "
                         "over time or a cost offset); write it as extended")
    write_extended(problem, path)
    return "extended"
