"""One penalised solve, in the child: post a :class:`.network.Network` and run toulbar2's limited
discrepancy search on it, optionally along a start plan's values (toulbar2's own notion of an
initial solution: an upper bound and the value every variable tries first), for some seconds or,
in deterministic mode, some backtracks (:func:`.cfn.time_limit`)."""

from __future__ import annotations

import time
from typing import Any, Optional

import numpy as np

from .cfn import counts, open_network, post_functions, preload, time_limit
from .child import started_search

LDS = 4
"""toulbar2's limited discrepancy search (budgets 0, 1, 2, 4, then plain DFBB), as the original."""


def penalised_child(net: Any, seed: int, seconds: float, ub: Optional[int],
                    start: Optional[np.ndarray] = None, backtracks: Optional[int] = None) -> dict:
    """Post ``net`` to toulbar2 and solve it (run in a forked child: toulbar2 keeps global state).

    ``ub``: only plans of penalised cost below it are wanted. ``start``: a plan whose values
    toulbar2 tries first at every node (its "best value" per variable, which its value ordering
    follows), so the first dive of the limited discrepancy search runs along the incumbent and the
    later ones explore around it. ``backtracks``: deterministic mode's limit, instead of
    ``seconds``. Returns ``{"plan": list or None, "dual": float or None, "nodes", "backtracks",
    "build_s", "solve_s"}``."""
    preload()
    t0 = time.monotonic()
    cfn = open_network(net.counts, seed, ubinit=ub, lds=LDS)
    post_functions(cfn, (([i], row.tolist()) for i, row in enumerate(net.unary)
                         if row is not None))
    post_functions(cfn, ((scope, table.tolist()) for scope, table in zip(net.scopes, net.tables)))
    t1 = time.monotonic()
    started_search()
    plan = None
    try:
        plan = _solve_from(cfn, time_limit(cfn, int(seconds), backtracks), start)
    except Exception:  # noqa: BLE001 -- a contradiction: nothing below the upper bound
        plan = None
    dual = None
    try:
        dual = float(cfn.GetDDualBound())
    except Exception:  # noqa: BLE001
        pass
    return {"plan": plan, "dual": dual, **counts(cfn), "build_s": t1 - t0,
            "solve_s": time.monotonic() - t1}


def _solve_from(cfn: Any, seconds: int, start: Optional[np.ndarray]) -> Optional[list]:
    """pytoulbar2's ``CFN.Solve`` for one optimisation, with ``start`` set as every variable's
    preferred value after the network is sorted (``Solve`` has no hook for it)."""
    if start is None:
        result = cfn.Solve(timeLimit=seconds)
        return None if result is None else [int(v) for v in result[0]]
    tb2 = preload().pytb2
    tb2.check()
    cfn.CFN.timer(seconds)
    if cfn.UbInit is not None:
        cfn.CFN.wcsp.updateDUb(cfn.UbInit)
    try:
        cfn.CFN.wcsp.sortConstraints()
    except tb2.Contradiction:
        cfn.CFN.wcsp.whenContradiction()
        return None
    for var, value in enumerate(np.asarray(start, dtype=np.int64).tolist()):
        cfn.CFN.wcsp.setBestValue(var, value)
    cfn.CFN.solve()
    if len(cfn.CFN.solutions()) == 0:
        return None
    return [int(v) for v in cfn.CFN.solution()]
