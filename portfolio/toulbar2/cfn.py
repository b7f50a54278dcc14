"""The one place that posts a network to pytoulbar2 and reads a search back (inside a child).

The penalty search (:mod:`.search`), the exact mode (:mod:`.exact`) and the priced bound
(:mod:`.bound`) each build their own network (penalised, constrained, priced), but open, post and
search it the same way: one variable per node with its strategies as values, then cost functions
over scopes of distinct nodes (unary rows first), costs as floats (``inf`` is toulbar2's hard cost).
pytoulbar2 is imported inside the functions: they run in the forked child only.

**Limits.** A timed search gets toulbar2's own timer (CPU seconds) and the parent's SIGVTALRM at
its wall-clock limit (:mod:`.child`). In deterministic mode (:mod:`portfolio.work`) a search gets a
backtrack limit instead (``Option.backtrackLimit``: toulbar2 stops with its best assignment and
sets ``Option.limited``), and the timer is set to ``SAFETY_TIMER``, never reached: it only installs
toulbar2's SIGVTALRM handler, so the parent's wall-clock safety net ends the search with its best
assignment instead of killing the child. toulbar2's preprocessing and its searches (limited
discrepancy, hybrid best-first) decide by their own counts (backtracks, nodes), reading the clock
for messages only, so with a fixed seed every run searches the same tree: measured, the same plan
and counts idle and under a CPU hog (docs/benchmarks/determinism.md, "toulbar2").
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from .child import started_search

SAFETY_TIMER = 10**6
"""toulbar2's CPU-seconds timer in deterministic mode: never reached (see the module docstring)."""


def preload() -> Any:
    """Import pytoulbar2 (in the child, before its clock starts: the posting times that callers
    measure, which the penalty search's timing follows, leave the import out)."""
    import pytoulbar2

    return pytoulbar2


def open_network(counts: np.ndarray, seed: int, vac: int = 0, ubinit: Any = None,
                 **options: Any) -> Any:
    """A fresh pytoulbar2 CFN (quiet, seeded from ``seed``; ``ubinit``: only assignments of cost
    below it are wanted; ``options``: toulbar2 options such as ``lds`` or ``hbfs``) with one
    variable ``x<i>`` per entry of ``counts`` whose values are ``0 .. counts[i] - 1``."""
    cfn = preload().CFN(ubinit=ubinit, vac=vac, seed=int(seed) % (2**31 - 1) + 1, verbose=-1)
    for name, value in options.items():
        setattr(cfn.Option, name, value)
    for i, k in enumerate(np.asarray(counts).tolist()):
        cfn.AddVariable(f"x{i}", list(range(k)))
    return cfn


def post_functions(cfn: Any, functions: Iterable[tuple[Sequence[int], list]]) -> None:
    """Post each ``(scope, costs)``: distinct nodes and their costs, flat in the scope's mixed
    radix (the last node fastest). Posting propagates: it may raise ``cfn.Contradiction``."""
    for scope, costs in functions:
        cfn.AddFunction(list(scope), costs)


def time_limit(cfn: Any, seconds: float, backtracks: Optional[int]) -> int:
    """toulbar2's timer for a search (``timeLimit`` of ``Solve``): ``seconds`` rounded up in a timed
    search; with ``backtracks`` (deterministic mode) the backtrack limit is set and the timer is
    ``SAFETY_TIMER`` (see the module docstring)."""
    if backtracks is None:
        return max(1, math.ceil(seconds))
    cfn.Option.backtrackLimit = max(1, int(backtracks))
    return SAFETY_TIMER


def counts(cfn: Any) -> dict:
    """The search's counts that deterministic mode turns into work units (:mod:`.pace`)."""
    return {"nodes": int(cfn.GetNbNodes()), "backtracks": int(cfn.GetNbBacktracks())}


def search_and_read(cfn: Any, seconds: float, answer: dict, t0: float,
                    backtracks: Optional[int] = None) -> dict:
    """Run a posted network's search for at most ``seconds`` (or ``backtracks``: deterministic
    mode) and read back what a caller needs (best plan and cost, toulbar2's dual bound, whether a
    limit stopped it, its counts, timings from ``t0``). ``Option.limited`` is reset first:
    toulbar2 sets it, never clears it, and only an unlimited search may be called complete (a
    proof, or a bound that is the optimum)."""
    t1 = time.monotonic()
    cfn.Option.limited = False
    started_search()
    try:
        result = cfn.Solve(timeLimit=time_limit(cfn, seconds, backtracks))
    except cfn.Contradiction:    # nothing below the upper bound
        result = None
    t2 = time.monotonic()
    if result is not None:
        answer["plan"], answer["cost"] = [int(v) for v in result[0]], float(result[1])
    answer.update(dual=float(cfn.GetDDualBound()), limited=bool(cfn.Option.limited),
                  **counts(cfn), build_s=t1 - t0, solve_s=t2 - t1)
    return answer
