"""The Python API: ``portfolio.solve`` and its companions, for programs that embed the solver.

``inputs`` turns a path, a dict or a Problem into a :class:`~portfolio.problem.Problem` (files of every
format through ``adapters.formats``, with the map back to the file's node order); ``solving`` runs the portfolio with the CLI's
defaults and returns a :class:`SolveResult`; ``warm`` reads and checks a warm start (a plan, a
plan file, an XLA request's ``s_hint``); ``resolving`` maps a previous plan onto a changed problem
(``resolve``); ``selecting`` applies a selector to a run (docs/selection.md: the schedule
chosen from the cheap features, the user's choices winning); ``tradeoff`` solves at a range of
memory budgets; ``tuning`` tunes the portfolio
(``tune``: the package :mod:`portfolio.tuning`). ``portfolio/__init__.py`` exports these names lazily.
Documented in docs/api.md.
"""

from ..errors import ProblemError
from ..io import problem_from_arrays
from .inputs import ProblemLike, as_problem, example_path, load
from .resolving import resolve
from .solving import OnImprove, SolveResult, backends, choose_backends, run, solve
from .tradeoff import tradeoff
from .tuning import tune

__all__ = ["OnImprove", "ProblemError", "ProblemLike", "SolveResult", "as_problem", "backends",
           "choose_backends", "example_path", "load", "problem_from_arrays", "resolve", "run", "solve",
           "tradeoff", "tune"]
