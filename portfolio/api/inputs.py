"""What ``portfolio.solve`` accepts as a problem, and how a file becomes a :class:`Problem`.

A problem is a path (any format registered in :mod:`portfolio.adapters.formats`), a
:class:`Problem`, or a dict in the contest layout (``{"problem": {"nodes": ..., "edges": ...,
"usage_limit": ...}}``, numpy values allowed). Everything unusable raises
:class:`~portfolio.errors.ProblemError` with the line the CLI prints.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

from .. import io as pio
from ..adapters.conversion import Conversion
from ..data import example_path
from ..errors import ProblemError
from ..io import load_contest
from ..problem import Problem

__all__ = ["ProblemLike", "as_conversion", "as_problem", "example_path", "load", "load_contest", "read"]

ProblemLike = Union[str, "os.PathLike[str]", Problem, Mapping[str, Any], Conversion]
"""Anything :func:`as_problem` turns into a :class:`Problem`; or a :class:`Conversion` (a problem
with the names of its nodes and the map of its plans back, as a front end builds it:
:mod:`portfolio.frontends`)."""


def read(path: str | os.PathLike[str], cost_scale: float = 1.0, fmt: Optional[str] = None) -> Conversion:
    """Load and validate a problem file of any registered format (by its name, or ``fmt``), with
    the map of its plans back to the file's own node order (the identity for JSON; a request's
    followers share their leader's node). ``cost_scale`` multiplies the costs of a format with
    fractional costs before rounding (see docs/api.md, "XLA")."""
    from ..adapters.formats import read_any

    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(f"load: expected a path, got {type(path).__name__}")
    return read_any(path, fmt, cost_scale)


def load(path: str | os.PathLike[str], cost_scale: float = 1.0) -> Problem:
    """Load and validate a problem file of any supported format (see :func:`read`); a request's
    followers come folded into their leaders."""
    return read(path, cost_scale).problem


def as_conversion(problem: ProblemLike, cost_scale: float = 1.0) -> Conversion:
    """A :class:`Problem` from a path, a dict in the contest (or extended) layout, or a Problem,
    with the map of its plans back to the caller's node order; a :class:`Conversion` as it is."""
    if isinstance(problem, Conversion):
        if cost_scale != 1.0:
            raise ProblemError("cost_scale: applies to files with fractional costs only")
        return problem
    if isinstance(problem, (str, os.PathLike)):
        return read(problem, cost_scale)
    if cost_scale != 1.0:
        raise ProblemError("cost_scale: applies to files with fractional costs only (a dict or a "
                           "Problem has integer costs)")
    return Conversion.identity(as_problem(problem))


def as_problem(problem: ProblemLike) -> Problem:
    """A :class:`Problem` from a path, a dict in the contest (or extended) layout, or a Problem."""
    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, Conversion):
        return problem.problem
    if isinstance(problem, (str, os.PathLike)):
        return load(problem)
    if isinstance(problem, Mapping):
        return pio.parse_document(dict(problem), "<dict>")
    raise ProblemError(f"problem: expected a path, a dict in the contest layout or a Problem, got "
                       f"{type(problem).__name__}")
