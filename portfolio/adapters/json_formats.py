"""This project's own formats, contest and extended JSON, as :mod:`.formats` reads and writes them.

Reading chooses the parser by the file's size (:func:`portfolio.io.load_contest`): ``json`` (no
numba import) for small files and, on a cold numba cache, for files up to
``CAREFUL_LOAD_MAX_BYTES``; the fast scanner otherwise. Either parser gives the same Problem.
Both formats are read by one reader (an
extended document says so in its first bytes); costs are integers, plans map to themselves.
"""

from __future__ import annotations

import numpy as np

from .. import io as pio
from ..problem import Problem
from .conversion import Conversion

def read_json(path: pio.PathLike, cost_scale: float = 1.0) -> Conversion:
    """A contest or extended JSON file as a :class:`Conversion` that maps plans to themselves,
    with the file's node names when it has them (``node_names``: a front end's export)."""
    problem, names = pio.load_contest_named(path)
    if names is None:
        return Conversion.identity(problem)
    return Conversion(problem, np.arange(problem.num_nodes, dtype=np.int64), names=names)


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
