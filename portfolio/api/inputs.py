"""What ``portfolio.solve`` accepts as a problem, and how a file becomes a :class:`Problem`.

A problem is a path (any format a loader below reads), a :class:`Problem`, or a dict in the contest
layout (``{"problem": {"nodes": ..., "edges": ..., "usage_limit": ...}}``, numpy values allowed).
Everything unusable raises :class:`~portfolio.errors.ProblemError` with the line the CLI prints.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np

from .. import io as pio
from ..errors import ProblemError
from ..io import load_contest
from ..adapters.request import Conversion
from ..problem import Problem

ProblemLike = Union[str, "os.PathLike[str]", Problem, Mapping[str, Any]]
"""Anything :func:`as_problem` turns into a :class:`Problem`."""

def read(path: str | os.PathLike[str], cost_scale: float = 1.0, fmt: Optional[str] = None) -> Conversion:
    """Load and validate a problem file of any format (:mod:`portfolio.adapters.formats`: contest
    and extended JSON, XLA requests binary or text), with the map of its plans back to the file's
    own node order (the identity for JSON; a request's followers share their leader's node).
    JSON goes through :func:`load_contest` (the parser chosen by size); ``cost_scale`` multiplies a
    request's costs before rounding (see docs/api.md, "XLA")."""
    from ..adapters.formats import XLA_FORMATS, format_of, read_any

    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(f"load: expected a path, got {type(path).__name__}")
    try:
        kind = format_of(path, fmt)
        if kind in XLA_FORMATS or cost_scale != 1.0:
            return read_any(path, kind, cost_scale)
    except ValueError as exc:
        if isinstance(exc, ProblemError):
            raise
        raise ProblemError(f"{path}: {exc}") from None
    problem = load_contest(path)
    return _identity(problem)


def load(path: str | os.PathLike[str], cost_scale: float = 1.0) -> Problem:
    """Load and validate a problem file of any supported format (see :func:`read`); a request's
    followers come folded into their leaders."""
    return read(path, cost_scale).problem


def as_conversion(problem: ProblemLike, cost_scale: float = 1.0) -> Conversion:
    """A :class:`Problem` from a path, a dict in the contest (or extended) layout, or a Problem,
    with the map of its plans back to the caller's node order."""
    if isinstance(problem, (str, os.PathLike)):
        return read(problem, cost_scale)
    if cost_scale != 1.0:
        raise ProblemError("cost_scale: applies to XLA request files only (JSON costs are integers)")
    return _identity(as_problem(problem))


def _identity(problem: Problem) -> Conversion:
    return Conversion(problem, np.arange(problem.num_nodes, dtype=np.int64))


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
