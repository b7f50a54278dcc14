"""The one place that posts a network to pytoulbar2 and reads a search back (inside a child).

The penalty search (:mod:`.search`), the exact mode (:mod:`.exact`) and the priced bound
(:mod:`.bound`) each build their own network (penalised, constrained, priced), but open, post and
search it the same way: one variable per node with its strategies as values, then cost functions
over scopes of distinct nodes (unary rows first), costs as floats (``inf`` is toulbar2's hard cost).
pytoulbar2 is imported inside the functions: they run in the forked child only.
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable, Sequence

import numpy as np

from .child import started_search


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


def search_and_read(cfn: Any, seconds: float, answer: dict, t0: float) -> dict:
    """Run a posted network's search for at most ``seconds`` and read back what a caller needs
    (best plan and cost, toulbar2's dual bound, whether a limit stopped it, timings from ``t0``).
    ``Option.limited`` is reset first: toulbar2 sets it, never clears it, and only an unlimited
    search may be called complete (a proof, or a bound that is the optimum)."""
    t1 = time.monotonic()
    cfn.Option.limited = False
    started_search()
    try:
        result = cfn.Solve(timeLimit=max(1, math.ceil(seconds)))
    except cfn.Contradiction:    # nothing below the upper bound
        result = None
    t2 = time.monotonic()
    if result is not None:
        answer["plan"], answer["cost"] = [int(v) for v in result[0]], float(result[1])
    answer.update(dual=float(cfn.GetDDualBound()), limited=bool(cfn.Option.limited),
                  nodes=int(cfn.GetNbNodes()), build_s=t1 - t0, solve_s=t2 - t1)
    return answer
