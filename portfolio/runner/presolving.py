"""Presolve in a child process under the deadline, so that compiling its kernels (several seconds on
a cold numba cache) never holds up the answer; and the synchronous form used by ``bench``."""

from __future__ import annotations

import os
import time
import traceback
from multiprocessing.connection import Connection
from typing import Optional, Sequence

from ..backend import BackendLike
from ..problem import Problem
from .worker import die_with_parent

PRESOLVE_SHARE = 0.3
"""Backends that want the presolved problem wait for it at most this share of the time left when
the run starts; then they start on the original problem and presolve is abandoned."""


def summary(presolved: object, seconds: float) -> dict:
    """What the CLI and the JSON show about a presolve."""
    info: dict = {"seconds": round(seconds, 3), "infeasible": getattr(presolved, "infeasible", None)}
    red = getattr(presolved, "reduced", None)
    if red is not None:
        info.update(nodes=red.num_nodes, edges=red.num_edges,
                    free_nodes=int((red.strategy_counts > 1).sum()))
    return info


def presolve_main(problem: Problem, conn: Connection) -> None:
    """Body of the presolve child: compile (or load) the kernels, presolve, send the result back
    without the original problem (the parent has it)."""
    os.setpgrp()
    die_with_parent()
    t0 = time.perf_counter()
    try:
        from ..presolve import presolve, warm_up

        warm_up()
        pre = presolve(problem)
        pre.original = None
        conn.send(("presolved", pre, time.perf_counter() - t0))
    except BaseException:  # noqa: BLE001 -- a presolve bug must not cost the user their answer
        conn.send(("error", traceback.format_exc(limit=4)))
    finally:
        conn.close()


def presolve_for(problem: Problem, backends: Sequence[BackendLike]) -> tuple[object, Optional[dict]]:
    """Presolve once, in this process, when some backend accepts a reduced problem: (presolved or
    None, summary). Never fatal: a failure leaves every backend on the original problem and is
    reported in the summary's ``error``. (``run_portfolio(..., presolve=True)`` does the same in a
    child process under the deadline.)"""
    if not any(b.capabilities.reduced for b in backends):
        return None, None
    t0 = time.perf_counter()
    try:
        from ..presolve import presolve, warm_up

        warm_up()
        presolved = presolve(problem)
    except Exception as exc:  # a presolve bug must not cost the user their answer
        return None, {"error": f"{type(exc).__name__}: {exc}"}
    return presolved, summary(presolved, time.perf_counter() - t0)
