"""Every toulbar2 solve runs in a forked child that is stopped at its limit and killed soon after.

Why a child: toulbar2 keeps global state (one network per process), and its own timer counts CPU
time, which runs slower than the wall clock on a busy machine. The parent here keeps the clock:
once the child says its search started (:func:`started_search`, after posting), it gets SIGVTALRM
at the search's limit on the wall clock (toulbar2's handler then ends the search with its best
assignment), and it is killed ``KILL_GRACE`` later if it has not answered. A killed child gives
nothing, never a wrong answer. (Several children at once on CPU-time limits measured worse and
were removed in issue 41.)
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from multiprocessing.connection import wait
from typing import Any, Callable, Optional

KILL_GRACE = 1.0
"""A child still running this long after toulbar2's own limit (plus the time it takes to post the
network, estimated from the last child) is killed; toulbar2 normally returns by itself with its best
assignment before that."""

_SEND: Optional[Callable] = None
"""In a child: sends a message to the parent (set by :func:`_child_main`)."""


def started_search() -> None:
    """Tell the parent that the network is posted and toulbar2's search starts now (its stop
    counts from here); a no-op outside a child."""
    if _SEND is not None:
        _SEND(("posted", None))


def _child_main(conn: Any, target: Callable, args: tuple) -> None:
    global _SEND
    _SEND = conn.send
    try:
        conn.send(("ok", target(*args)))
    except BaseException as exc:  # noqa: BLE001 -- the parent reads every outcome
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_in_child(target: Callable, args: tuple, limit: float, search: Optional[float] = None,
                 cap: Optional[float] = None) -> tuple[str, Any]:
    """``target(*args)`` in a forked child: ``("ok", value)``, ``("error", why)`` or
    ``("killed", None)``.

    The child is killed ``limit`` seconds after its start if it has not answered. With ``search``:
    once the child says its search started (:func:`started_search`), it gets SIGVTALRM ``search``
    wall-clock seconds later (toulbar2's own timer is that signal on CPU time, which runs slower
    than the wall clock on a busy machine; its handler ends the search with the best assignment),
    and the kill waits until ``KILL_GRACE`` after that, but never past ``cap`` (a
    ``time.monotonic()`` value; the signal then comes ``KILL_GRACE`` before ``cap``, so a post that
    took longer than expected still returns the search's best plan instead of being killed)."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, target, args), daemon=True)
    start = time.monotonic()
    proc.start()
    send.close()
    end, alarm = start + max(0.0, limit), None
    try:
        while True:
            now = time.monotonic()
            if alarm is not None and now >= alarm:
                alarm = None
                if proc.pid is not None and proc.is_alive():
                    os.kill(proc.pid, signal.SIGVTALRM)
            if now >= end:
                return ("killed", None)
            wake = end if alarm is None else min(end, alarm)
            if not wait([recv], max(0.0, wake - now)):
                continue
            try:
                kind, value = recv.recv()
            except EOFError:
                return ("error", "child ended without an answer")
            if kind != "posted":
                return (kind, value)
            if search is not None:
                alarm = time.monotonic() + search
                end = max(end, alarm + KILL_GRACE)
                if cap is not None:   # a slow post must not cost the whole solve at the cap
                    alarm, end = min(alarm, cap - KILL_GRACE), min(end, cap)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        recv.close()
