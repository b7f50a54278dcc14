"""The shard process: this project's local runner on one machine, as one shard of a cluster solve.

Started by :mod:`.shard_task` as ``python -m portfolio.distributed.shard_main`` in a session of its
own. Protocol, one JSON object per line:

- stdin, first line: the spec (``problem``, ``backends``, ``seed``, ``threads``, ``end_wall``: the
  shard's deadline as a ``time.time()`` value, ``presolve``, ``cost_scale``); then the cluster's
  incumbents (``version``, ``cost`` and an encoded plan, :mod:`.plans`), offered to the runner,
  which verifies them like any plan and hands them to its backends (warm starts, LNS, penalties).
- stdout: ``ready`` (loaded), ``plan`` (a cheaper verified plan of this shard, at most one per
  ``SEND_INTERVAL``), ``bound`` (a higher standing lower bound), ``done`` (the run's end).

Nothing else reaches stdout: fd 1 is pointed at stderr before anything is imported that could print.
SIGTERM ends the run at once with its best plan (the runner's own handling); the process also asks
Linux to kill it when the task thread that started it dies (a Dask worker killed outright).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import IO, Any, Optional

SEND_INTERVAL = 0.2
"""Seconds between two plan messages of one shard (the latest plan is sent; none is lost at the end)."""


class Outbox:
    """JSON lines on the protocol's private copy of stdout."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream, self.lock = stream, threading.Lock()

    def send(self, message: dict) -> None:
        with self.lock:
            try:
                self.stream.write(json.dumps(message, separators=(",", ":")) + "\n")
                self.stream.flush()
            except (BrokenPipeError, OSError, ValueError):  # the task is gone: nothing to tell
                pass


class Inbox:
    """The cluster's incumbents from stdin, read in a thread; only the latest is kept."""

    def __init__(self, stream: IO[str]) -> None:
        self.latest: Optional[dict] = None
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if self.latest is None or message.get("version", 0) > self.latest.get("version", 0):
                    self.latest = message
        self.closed = True

    def take(self) -> Optional[dict]:
        with self.lock:
            message, self.latest = self.latest, None
        return message


class ShardHook:
    """The runner's ``on_update``: offer the cluster's incumbent, send this shard's better plans
    and bounds. Plans this shard got from the cluster are not sent back."""

    def __init__(self, outbox: Outbox, inbox: Inbox) -> None:
        self.outbox, self.inbox = outbox, inbox
        self.sent: Optional[int] = None       # cost of the last plan sent
        self.known: Optional[int] = None      # cheapest cost the driver knows of (sent or received)
        self.bound: Optional[int] = None
        self.last_send = 0.0
        self.received: list[tuple[int, float, int]] = []   # (version, wall time, cost)
        self.refused: list[str] = []

    def __call__(self, runner: Any) -> None:
        from .plans import decode_plan, from_text

        message = self.inbox.take()
        if message is not None:
            self.received.append((int(message.get("version", 0)), time.time(),
                                  int(message.get("cost", -1))))
            try:
                plan = decode_plan(from_text(message))
                why = runner.offer(None, plan, f"cluster incumbent v{message.get('version')}")
            except Exception as exc:  # a plan that does not fit this problem
                why = str(exc)
            if why:
                self.refused.append(why[:200])
            elif self.known is None or message["cost"] < self.known:
                self.known = int(message["cost"])
        self.send_best(runner, force=False)
        claim = runner.claims.best_bound()
        if claim is not None and (self.bound is None or claim.value > self.bound):
            self.bound = claim.value
            self.outbox.send({"kind": "bound", "value": int(claim.value), "exact": bool(claim.exact),
                              "source": claim.source})

    def send_best(self, runner: Any, force: bool) -> None:
        from .plans import encode_plan, to_text

        found = runner.incumbent()
        if found is None:
            return
        cost, plan, source = found
        if self.known is not None and cost >= self.known:
            return
        if not force and time.monotonic() - self.last_send < SEND_INTERVAL:
            return
        self.last_send, self.sent, self.known = time.monotonic(), int(cost), int(cost)
        self.outbox.send(dict(to_text(encode_plan(plan)), kind="plan", cost=int(cost),
                              source=str(source), wall=time.time()))


def main() -> int:
    start = time.monotonic()
    wall0 = time.time()
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from ..runner.worker import die_with_parent

    die_with_parent()
    outbox = Outbox(protocol)
    # The protocol's stdin gets a private file object, and fd 0 becomes /dev/null: a forked runner
    # worker closes sys.stdin at start, which would block forever on the lock the reading thread
    # holds on a shared one.
    incoming = os.fdopen(os.dup(0), "r", buffering=1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull)
    line = incoming.readline()
    try:
        spec = json.loads(line)
    except ValueError:
        outbox.send({"kind": "done", "status": "error", "note": "no spec on stdin"})
        return 2
    inbox = Inbox(incoming)
    outbox.send({"kind": "hello", "pid": os.getpid(), "wall": time.time()})
    from ..adapters.formats import read_any

    try:
        conversion = read_any(spec["problem"], cost_scale=float(spec.get("cost_scale", 1.0)))
    except Exception as exc:  # ProblemError, OSError: the driver names it in the shard's row
        outbox.send({"kind": "done", "status": "error", "note": f"cannot load: {exc}"[:500]})
        return 2
    problem = conversion.problem
    outbox.send({"kind": "ready", "load_s": round(time.monotonic() - start, 3), "wall": time.time(),
                 "nodes": problem.num_nodes})
    limit = float(spec["end_wall"]) - wall0
    if limit <= 0.5:
        outbox.send({"kind": "done", "status": "late", "note": "the deadline passed before it started"})
        return 0
    hook = ShardHook(outbox, inbox)
    try:
        from ..options import RunOptions
        from ..runner import run_portfolio

        options = RunOptions(limit, start=start, workers=int(spec.get("threads", 1)) or None,
                             seed=int(spec.get("seed", 0)),
                             presolve=bool(spec.get("presolve", True)),
                             exhaustive=True)   # as `portfolio solve` runs
        result = run_portfolio(problem, _backends(spec["backends"], limit), options, on_update=hook)
    except Exception as exc:  # a backend missing on this worker, a broken install: say so
        outbox.send({"kind": "done", "status": "error",
                     "note": f"{type(exc).__name__}: {exc}"[:500]})
        return 2
    if result.solution is not None and (hook.known is None or result.cost < hook.known):
        hook.outbox.send(dict(_final_plan(result.solution), kind="plan", cost=int(result.cost),
                              source=str(result.winner), wall=time.time()))
    bound = result.best_bound
    outbox.send({"kind": "done", "status": "optimal" if result.proven_optimal else
                 ("feasible" if result.solution is not None else "no-solution"),
                 "cost": result.cost, "winner": result.winner,
                 "bound": None if bound is None else int(bound.value),
                 "bound_exact": bool(bound.exact) if bound is not None else False,
                 "interrupted": result.interrupted, "elapsed": round(time.monotonic() - start, 3),
                 **({} if result.callback_error is None else   # the shard's hook failed: it ended
                    {"note": f"the shard's hook raised {result.callback_error['error']}"[:500]}),
                 "received": hook.received[-200:], "refused": hook.refused[:5],
                 "runs": [{"name": r.name, "status": r.status.value, "best": r.best_cost, "note": r.note[:200]}
                          for r in result.runs.values()]})
    return 0


def _backends(names: list[str], limit: float) -> list:
    """The shard's backends by name (the driver chose them, so each is known there), each available
    here; ``available()`` checks may take a tenth of the shard's budget. A name this worker does not
    know or cannot run raises ``RegistryError`` naming it."""
    import logging

    from ..registry import AVAILABLE_TIMEOUT, Registry

    registry = Registry()
    for warning in registry.warnings:   # on stderr, into the worker's log
        logging.getLogger("portfolio").warning(warning)
    registry.check_timeout = min(AVAILABLE_TIMEOUT, max(0.5, 0.1 * limit))
    return registry.resolve(list(names))


def _final_plan(plan: Any) -> dict:
    from .plans import encode_plan, to_text

    return to_text(encode_plan(plan))


if __name__ == "__main__":
    sys.exit(main())
