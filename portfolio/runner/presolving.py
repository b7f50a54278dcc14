"""Presolve in a child process under the deadline, so that compiling its kernels (several seconds on
a cold numba cache) never holds up the answer (:class:`Presolve`, a part of the run); and the
synchronous form used by ``bench``."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import tempfile
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from ..backend import BackendLike
from ..problem import Problem
from . import contain, validate
from .worker import PlanMapping, die_with_parent, freeze

if TYPE_CHECKING:
    from .answers import Answers
    from .context import RunContext

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


@dataclass
class _Child:
    process: mp.process.BaseProcess
    conn: Connection
    cutoff: float
    started: float


class Presolve:
    """Presolve's part in a run.

    Owns presolve's child process while it runs, its outcome (the presolved problem, or why there
    is none: ``mapping`` and ``info``) and the file early-started workers read the presolved
    problem from. When presolve leaves nothing to decide, its plan goes to ``answers`` as the
    runner's own proof. A timed run abandons presolve after ``PRESOLVE_SHARE`` of the time left;
    deterministic mode waits for it. From the ``context``: the problem, the clock, the fork
    context, the mode."""

    def __init__(self, context: "RunContext", answers: "Answers") -> None:
        self._problem, self._answers, self._clock = context.problem, answers, context.clock
        self._ctx, self._deterministic = context.fork, context.deterministic
        self._child: Optional[_Child] = None
        self._mapping: Optional[PlanMapping] = None
        self._info: Optional[dict] = None
        self._path: Optional[str] = None   # the presolved problem for early set-ups

    @property
    def running(self) -> bool:
        return self._child is not None

    @property
    def pid(self) -> Optional[int]:
        """The child's pid while it runs."""
        return None if self._child is None else self._child.process.pid

    @property
    def mapping(self) -> Optional[PlanMapping]:
        """The presolved problem (with the map back to the original), once there is a usable one."""
        return self._mapping

    @property
    def info(self) -> Optional[dict]:
        """What the result says about presolve (:func:`summary`, or its ``error``), once known."""
        return self._info

    def handles(self) -> list:
        """What the event loop waits on for presolve: its pipe and its process sentinel."""
        child = self._child
        return [] if child is None else [child.conn, child.process.sentinel]

    def start(self) -> None:
        parent, child = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(target=presolve_main, args=(self._problem, child),
                                    name="portfolio-presolve", daemon=False)
        process.start()
        child.close()
        left = max(0.0, self._clock.soft_deadline - time.monotonic())
        # deterministic mode waits for presolve: only the safety net (the run's end) stops it
        cutoff = float("inf") if self._deterministic else time.monotonic() + PRESOLVE_SHARE * left
        self._child = _Child(process, parent, cutoff, self._clock.now())

    def poll(self, force: bool = False) -> None:
        """Take presolve's result if it came, or give up on it when its time is over (``force``:
        the run ends)."""
        job = self._child
        if job is None:
            return
        message = None
        try:
            if job.conn.poll():
                message = job.conn.recv()
        except (EOFError, OSError):
            message = ("error", "presolve process ended without a result")
        except Exception as exc:  # noqa: BLE001
            message = ("error", f"unreadable presolve result: {exc}")
        late = message is None and (force or time.monotonic() >= job.cutoff)
        if message is None and not late and job.process.is_alive():
            return
        if message is None and not late:
            message = ("error", f"presolve process died (exit code {job.process.exitcode})")
        self._child = None
        contain.kill_group(job.process)
        job.conn.close()
        if late:
            spent = self._clock.now() - job.started
            self._info = {"error": (
                f"not finished when the run ended ({spent:.2f} s)" if force else
                f"abandoned after {spent:.2f} s (its share {PRESOLVE_SHARE:g} of the budget)")}
        elif message[0] == "presolved":
            pre = message[1]
            pre.original = self._problem
            if pre.reduced is not None:
                freeze(pre.reduced)
            self.use(pre, message[2])
        else:
            self._info = {"error": validate.note_text(str(message[1]).strip().splitlines()[-1])}

    def use(self, pre: PlanMapping, seconds: Optional[float]) -> None:
        """A presolve's outcome (from the child, or given to the run): its summary, the presolved
        problem when there is a forbidden-free plan, and the answer when nothing is left to decide."""
        self._info = summary(pre, seconds or 0.0) if seconds is not None else summary(pre, 0.0)
        if pre.infeasible is not None or pre.reduced is None:
            # Presolve treats forbidden entries as hard: no forbidden-free plan. Not a proof that no
            # plan exists; every backend keeps the original problem.
            self._info["note"] = "no forbidden-free plan; backends get the original problem"
            return
        self._mapping = pre
        red = pre.reduced
        if np.all(red.strategy_counts == 1):
            self._answers.proven(pre.expand(np.zeros(red.num_nodes, dtype=np.int64)), "presolve",
                                 "presolve (nothing left to decide)")

    def file(self) -> Optional[str]:
        """The presolved problem pickled once into a temporary file (without the original, which
        every worker has), for early-started workers to read: no big message on any pipe."""
        if self._path is None and self._mapping is not None:
            folder = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
                else None
            fd, path = tempfile.mkstemp(prefix="portfolio-presolved-", suffix=".pkl", dir=folder)
            original = self._mapping.original
            try:
                self._mapping.original = None
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(self._mapping, fh, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                self._mapping.original = original
            self._path = path
        return self._path

    def remove_file(self) -> None:
        if self._path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
