"""Deadlines and early-stop decisions: when backends must finish, when stragglers are killed, and
when a run may end before its deadline (a proof, or an exact backend's claim once the quick
backends have had their say). Also the run's reaction to SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import time
from typing import Optional

from ..backend import BackendLike

SAFETY_FIRST = 0.1
"""For this share of the budget (at most SAFETY_WAIT seconds) after the runner starts, anytime and
exact backends wait until the quick ones (the safety net) have finished: on a loaded machine the
safety net then gets the cores to itself instead of a sliver of them."""

SAFETY_WAIT = 3.0
"""An early stop on a claim waits this long at most for quick backends (the safety net) to finish."""

EXTRA_MIN_SECONDS = 2.0
"""No extra seed copy is started with less time than this before the backends' deadline."""



def is_safety_net(backend: BackendLike) -> bool:
    """Quick backends (neither anytime nor exact): they run first and an early stop waits for them."""
    return not backend.capabilities.anytime and not backend.capabilities.exact


def deadline_plan(start: float, time_limit: float) -> tuple[float, float, float]:
    """(backend deadline, hard-kill time, answer deadline) on the scale of ``start`` (the runner uses
    ``time.monotonic()``).

    Backends are asked to finish ``soft`` seconds early, stragglers are killed ``hard`` seconds before
    the end, and the rest is the margin for collecting results and printing the answer.
    """
    end = start + time_limit
    soft = min(4.0, 1.2 + 0.02 * time_limit)
    hard = min(2.0, 0.8 + 0.02 * time_limit)   # a loaded machine needs ~1 s to stop and print
    return end - soft, end - hard, end


class StopRules:
    """Mixin of :class:`.core.Portfolio`: the early-stop rule and the signal handlers.

    Uses ``early_stop``, ``claims``, ``active`` and ``_verified_best`` (from :class:`.answers.Answers`)."""

    def _safety_net_done(self) -> bool:
        """The quick backends (neither anytime nor exact) have had their say: each finished, is
        still setting up, or has been solving for ``SAFETY_WAIT`` seconds already."""
        return not any(not w.done and w.run.phase == "solve" and is_safety_net(w.backend)
                       and time.monotonic() - w.solve_started < SAFETY_WAIT for w in self.active)

    def _stop_reason(self) -> Optional[str]:
        """Why the run may end now: a proof of the runner's own, or a claim of an exact backend once
        the safety net has had its say."""
        if not self.early_stop:
            return None
        cost, _ = self._verified_best()
        reason = self.claims.stop_reason(cost)
        if reason is None:
            return None
        own = any(c.backend == "runner" for c in self.claims.standing())
        return reason if own or self._safety_net_done() else None

    def _on_signal(self, signum: int, frame: object) -> None:
        self.interrupted = signal.Signals(signum).name

    def _catch_signals(self) -> dict:
        """SIGINT/SIGTERM end the run early with the best verified plan (main thread only)."""
        saved = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                saved[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread: the caller handles signals
                pass
        return saved
