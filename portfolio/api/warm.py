"""Where a solve's warm start comes from: the caller's plan (a list, or a file in any of the three
plan layouts ``portfolio evaluate`` reads), else an XLA request's own ``s_hint``; checked against the
problem with one line naming the file and the entry.

Shared by ``portfolio.solve(warm_start=...)`` and ``portfolio solve --warm-start``, so both accept
the same plans and refuse the same ones with the same line (:class:`~portfolio.errors.ProblemError`,
which the CLI prints and exits 2 on). A re-solve's mapped plan (:mod:`.resolving`) comes through
here too, as a :class:`WarmChoice` of its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import numpy as np

from ..errors import ProblemError

if TYPE_CHECKING:
    from ..adapters.conversion import Conversion

PlanLike = Union[Sequence[int], "np.ndarray", str, "os.PathLike[str]"]
"""A plan (one strategy per node of the caller's file) or the path of a file holding one."""

S_HINT = "the request's s_hint"


@dataclass(frozen=True)
class WarmChoice:
    """The warm start a run gets: a plan of the problem, where it came from, and (for a re-solve)
    what the mapping onto the new problem did."""

    plan: np.ndarray
    source: str
    mapping: Optional[dict] = field(default=None, compare=False)

    def describe(self, run_report: Optional[dict]) -> dict:
        """The run's warm-start report (:class:`portfolio.runner.warmstart.WarmStart`) with its
        source and mapping: what ``SolveResult.warm_start`` and ``--json``'s ``warm_start`` hold."""
        doc = {"source": self.source, **(run_report or {})}
        if self.mapping is not None:
            doc["mapping"] = self.mapping
        return doc


def read_plan(plan: PlanLike, what: str = "warm start") -> tuple[list[int], str]:
    """(the plan as a list, its label for messages): a path is read as ``portfolio evaluate`` reads
    plans (a JSON list, a ``portfolio solve --json`` result, contest output)."""
    from ..io import SolutionFormatError, read_solution

    if isinstance(plan, (str, os.PathLike)):
        try:
            return read_solution(plan), f"{what} {os.fspath(plan)}"
        except SolutionFormatError as exc:
            raise ProblemError(f"{what} {exc}") from None
    if isinstance(plan, np.ndarray):
        return plan, what
    if not isinstance(plan, (list, tuple)):
        raise ProblemError(f"{what}: expected a plan (a list of strategies) or a plan file, got "
                           f"{type(plan).__name__}")
    return list(plan), what


def checked(conversion: Conversion, plan: Any, label: str) -> np.ndarray:
    """A plan in the file's node order as a plan of the problem, every entry checked (an XLA
    request's: in its own order, in range, followers agreeing with their leader):
    :class:`ProblemError` naming ``label`` and the entry otherwise."""
    from ..evaluate import SolutionError, as_solution

    try:
        if not conversion.maps_nodes:
            return as_solution(conversion.problem, plan)
        return as_solution(conversion.problem, conversion.restrict(plan))
    except SolutionError as exc:
        raise ProblemError(f"{label}: {exc}") from None


def _integers(plan: Any) -> np.ndarray:
    """A flat int64 array of ``plan``'s entries, or :class:`SolutionError` naming the first entry
    that is not an integer."""
    from ..evaluate import SolutionError

    if isinstance(plan, np.ndarray) and plan.ndim == 1 and plan.dtype.kind in "iu":
        return plan.astype(np.int64)
    items = plan.tolist() if isinstance(plan, np.ndarray) else list(plan)
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or \
                not -2**63 <= v < 2**63:
            raise SolutionError(f"solution[{i}] = {v!r} is not an integer strategy index")
    return np.array(items, dtype=np.int64).reshape(-1)


def given_warm_start(conversion: Conversion, warm_start: Optional[PlanLike],
                     what: str = "warm start") -> Optional[WarmChoice]:
    """The warm start of a solve: the caller's (``what`` names it in errors, the same words in the
    API and the CLI), a re-solve's mapped plan, else a request's valid ``s_hint``, else None."""
    if isinstance(warm_start, Remapper):
        return warm_start(conversion)
    if warm_start is None:
        if conversion.hint is None:
            return None
        return WarmChoice(np.array(conversion.hint, dtype=np.int64), S_HINT)
    plan, label = read_plan(warm_start, what)
    return WarmChoice(checked(conversion, plan, label), _source(warm_start, "the caller's plan"))


def _source(plan: PlanLike, otherwise: str) -> str:
    """How results name where a plan came from: its file, or ``otherwise``."""
    return os.fspath(plan) if isinstance(plan, (str, os.PathLike)) else otherwise


class Remapper:
    """A warm start computed from the problem once it is loaded (a re-solve's mapped plan,
    :mod:`.resolving`): called with the conversion, returns the :class:`WarmChoice`."""

    def __call__(self, conversion: Conversion) -> WarmChoice:  # pragma: no cover - an interface
        raise NotImplementedError
