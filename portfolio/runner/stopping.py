"""The stopping rule: the deadlines (when backends must finish, when stragglers are killed), when a
run may end before its deadline (a proof of the runner's own, or an exact backend's claim met by a
verified plan once the quick backends have had their say), when it ends because nothing is left to
wait for, and its reaction to SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import time
from typing import Optional

from .claims import ClaimBook
from .order import SAFETY_WAIT, is_safety_net


def deadline_plan(start: float, time_limit: float) -> tuple[float, float, float]:
    """(backend deadline, hard-kill time, answer deadline) on the scale of ``start`` (the runner uses
    ``time.monotonic()``).

    Backends are asked to finish ``soft`` seconds early, stragglers are killed ``hard`` seconds before
    the end, and the rest is the margin for collecting results and printing the answer. From
    ``MARGIN_FULL`` seconds on the margins are the contest limits' (a loaded machine needs about a
    second to stop and print); below, they shrink in proportion, so that a 10 s run uses 9.4 s of
    its budget instead of 8.6 (docs/benchmarks/runner.md, "Short budgets").
    """
    end = start + time_limit
    soft, hard = stop_margins(time_limit)
    return end - soft, end - hard, end


MARGIN_FULL = 60.0
"""The budget from which the stop margins are the full ones (the contest limits: 60-300 s)."""

SHORT_SOFT, SHORT_HARD = 0.2, 0.15
"""The margins' floor for a tiny budget; between 0 and ``MARGIN_FULL`` they grow linearly to
the full ones (2.4 s and 2.0 s at 60 s)."""


def stop_margins(time_limit: float) -> tuple[float, float]:
    """(seconds before the end the backends are asked to stop, seconds before it stragglers are
    killed) for a run of ``time_limit`` seconds."""
    if time_limit >= MARGIN_FULL:
        return min(4.0, 1.2 + 0.02 * time_limit), min(2.0, 0.8 + 0.02 * time_limit)
    share = time_limit / MARGIN_FULL
    soft = SHORT_SOFT + share * (1.2 + 0.02 * MARGIN_FULL - SHORT_SOFT)
    hard = SHORT_HARD + share * (0.8 + 0.02 * MARGIN_FULL - SHORT_HARD)
    return soft, hard


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
    """Mixin of :class:`.core.Portfolio`: the early-stop rule, the end of a run with nothing left to
    wait for, and the signal handlers.

    Uses ``options``, ``claims``, ``active``, ``waiting``, ``presolve_job``, ``keep_open``,
    ``soft_deadline`` and ``_verified_best`` (from :class:`.answers.Answers`)."""

    def _safety_net_done(self) -> bool:
        """The quick backends (neither anytime nor exact) have had their say: each finished, is
        still setting up, or has been solving for ``SAFETY_WAIT`` seconds already."""
        return not any(not w.done and w.run.phase == "solve" and is_safety_net(w.backend)
                       and time.monotonic() - w.solve_started < SAFETY_WAIT for w in self.active)

    def _stop_reason(self) -> Optional[str]:
        """Why the run may end now: a proof of the runner's own, or a claim of an exact backend once
        the safety net has had its say."""
        if not self.options.early_stop:
            return None
        cost, _ = self._verified_best()
        reason = claim_stop(self.claims, cost)
        if reason is None:
            return None
        own = any(c.backend == "runner" for c in self.claims.standing())
        # deterministic mode: claims come only at exchange points, and the stop is decided there
        return reason if own or self.options.deterministic or self._safety_net_done() else None

    def _nothing_left(self, live: list) -> bool:
        """No worker alive, no presolve running, and no backend left to start before the backends'
        deadline; unless work done elsewhere keeps the run open (``keep_open``, a cluster)."""
        return not live and self.presolve_job is None and (
            not self.waiting or time.monotonic() >= self.soft_deadline) and not (
            self.keep_open is not None and self.keep_open())

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
