"""The stopping rules: when a run may end before its deadline (a proof of the runner's own, or an
exact backend's claim met by a verified plan once the quick backends have had their say), when it
ends because nothing is left to wait for, and its reaction to SIGINT/SIGTERM. The deadlines
themselves are in :mod:`.deadlines`."""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING, Callable, Optional

from .claims import ClaimBook
from .order import SAFETY_WAIT, is_safety_net

if TYPE_CHECKING:
    from .answers import Answers
    from .context import RunContext
    from .crew import Worker


def claim_stop(claims: ClaimBook, best_cost: Optional[int]) -> Optional[str]:
    """Why the claims let the run end now (claims by exact sources only: one meeting the verified
    best cost, or "infeasible" while no plan is verified), or None."""
    for c in claims.meeting(best_cost):
        if c.exact:
            return f"{c.source} claims the answer optimal" if c.backend != "runner" else c.source
    if best_cost is None:
        for c in claims.infeasible_claims():
            if c.exact:
                return f"{c.source} claims the instance infeasible"
    return None


class StopRules:
    """The early-stop rule, the end of a run with nothing left to wait for, and the signal handlers.

    Owns the signal that ended the run (``interrupted``), the handlers it replaced while it runs,
    and why the run ended before its deadline (``stopped_early``). Asks the claims and the verified
    best of :class:`.answers.Answers`, the workers (the context's ``crew``: whether the safety
    net had its say), the options and clock, and the caller's ``keep_open`` (work done elsewhere
    keeps the run open)."""

    def __init__(self, context: "RunContext", answers: "Answers",
                 keep_open: Optional[Callable[[], bool]]) -> None:
        self._options, self._clock, self._keep_open = context.options, context.clock, keep_open
        self._answers, self._crew = answers, context.crew
        self._interrupted: Optional[str] = None
        self._stopped_early: Optional[str] = None
        self._saved: dict = {}

    @property
    def interrupted(self) -> Optional[str]:
        """The signal that ended the run early, if any."""
        return self._interrupted

    @property
    def stopped_early(self) -> Optional[str]:
        """Why the run ended before its deadline (:meth:`ends_early`), if it did."""
        return self._stopped_early

    def _safety_net_done(self) -> bool:
        """The quick backends (neither anytime nor exact) have had their say: each finished, is
        still setting up, or has been solving for ``SAFETY_WAIT`` seconds already."""
        return not any(not w.done and w.run.phase == "solve" and is_safety_net(w.backend)
                       and time.monotonic() - w.solve_started < SAFETY_WAIT for w in self._crew)

    def reason(self) -> Optional[str]:
        """Why the run may end now: a proof of the runner's own, or a claim of an exact backend once
        the safety net has had its say."""
        if not self._options.early_stop:
            return None
        cost, _ = self._answers.verified_best()
        claims = self._answers.claims
        reason = claim_stop(claims, cost)
        if reason is None:
            return None
        own = any(c.backend == "runner" for c in claims.standing())
        # deterministic mode: claims come only at exchange points, and the stop is decided there
        return reason if own or self._options.deterministic or self._safety_net_done() else None

    def ends_early(self) -> Optional[str]:
        """:meth:`reason`, kept as the run's ``stopped_early`` when there is one."""
        reason = self.reason()
        if reason:
            self._stopped_early = reason
        return reason

    def nothing_left(self, live: list["Worker"], waiting: bool, presolving: bool) -> bool:
        """No worker alive, no presolve running, and no backend left to start (``waiting``) before
        the backends' deadline; unless work done elsewhere keeps the run open (``keep_open``, a
        cluster)."""
        return not live and not presolving and (
            not waiting or time.monotonic() >= self._clock.soft_deadline) and not (
            self._keep_open is not None and self._keep_open())

    def _on_signal(self, signum: int, frame: object) -> None:
        self._interrupted = signal.Signals(signum).name

    def catch_signals(self) -> None:
        """SIGINT/SIGTERM end the run early with the best verified plan (main thread only)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._saved[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread: the caller handles signals
                pass

    def restore_signals(self) -> None:
        """The handlers :meth:`catch_signals` replaced, back in place."""
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved = {}
