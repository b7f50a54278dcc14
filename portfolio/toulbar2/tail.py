"""The tail walk: the last seconds of a timed toulbar2 solve spent on its own freshest plan.

**Why.** In a portfolio run toulbar2's plans are worth most after the local search's iterated
descent: on S and N at the contest limits a new toulbar2 plan is taken 1-2 % lower within seconds
by the ``localsearch`` backend (it adopts the portfolio's best), 2 % in 30 s. But the rounds' solve
limits grow, so the last round's plans arrive in the last second or two (S: 234.8 s of 240, N: 174.7
of 180, runs of ``runs/curated/r33-warm``), when nothing is left to descend from them; and a plan
that does not beat the incumbent as polished is never descended at all, though a fresh basin may
end below the incumbent's. So the solves end ``tail`` seconds early, and in the tail this worker
runs its own iterated local search (the kernels' :meth:`portfolio.kernels.engine.Searcher.ils`, a
seed of its own) from toulbar2's best own plan: two walks at once at the end, from two basins
when toulbar2's plan is not the portfolio's best. The tail is kept only once toulbar2 has done
``TAIL_AFTER_ROUNDS`` rounds (at 60 s it never has).

Timed runs only: deterministic mode counts its work (:mod:`.pace`) and has no tail. Set by
``$PORTFOLIO_TOULBAR2_TAIL`` (the tail's share of the time; 0 turns it off).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from portfolio.evaluate import evaluate
from portfolio.problem import Problem

from .knobs import env_number

TAIL_SHARE, TAIL_MIN_S, TAIL_MAX_S = 0.0, 2.0, 30.0
"""The tail's share of the engine's time; under ``TAIL_MIN_S`` seconds there is none, and it is
at most ``TAIL_MAX_S``."""

TAIL_AFTER_ROUNDS = 3
"""The tail is kept from the round after this many rounds on, never earlier: a tail cuts the last
solve short, and with few rounds (60 s: two) that solve is worth more than the walk (measured:
docs/benchmarks/quality.md, "Third session"). A graph too large for that many rounds gets no tail.
"""

TAIL_ENV = "PORTFOLIO_TOULBAR2_TAIL"
"""Overrides ``TAIL_SHARE`` (a number from 0 to 0.5)."""

FETCH_S = 1.0
"""Seconds between two reads of the portfolio's best plan during the walk."""

SEED_SHIFT = 7919
"""The walk's seed is the solve's plus this: not the local search's walk on the same plan."""


def tail_seconds(seconds: float, notes: list) -> float:
    """The tail of a solve of ``seconds``: ``TAIL_SHARE`` (or ``$PORTFOLIO_TOULBAR2_TAIL``) of it,
    capped at ``TAIL_MAX_S``; 0 when under ``TAIL_MIN_S``."""
    share = env_number(TAIL_ENV, TAIL_SHARE, notes, least=0.0, most=0.5)
    tail = min(TAIL_MAX_S, share * max(0.0, seconds))
    return tail if tail >= TAIL_MIN_S else 0.0


def tail_due(rounds: int) -> bool:
    """Whether the solves end early from now on, after ``rounds`` completed rounds."""
    return rounds >= TAIL_AFTER_ROUNDS


@dataclass
class OwnBest:
    """toulbar2's own best feasible plan (repaired and polished), kept even when the portfolio
    has a better one: the tail walk starts from it."""

    problem: Problem
    plan: Optional[np.ndarray] = None
    cost: Optional[int] = None

    def offer(self, plan: Optional[np.ndarray]) -> None:
        if plan is None:
            return
        ev = evaluate(self.problem, plan)
        if ev.feasible and (self.cost is None or ev.cost < self.cost):
            self.plan, self.cost = np.asarray(plan, np.int64).copy(), int(ev.cost)


def tail_walk(prep: Any, start: Optional[np.ndarray], best: Any, seed: int, stop: float,
              fetch: Callable[[], Optional[np.ndarray]]) -> str:
    """Iterated local search from ``start`` (a feasible plan of the problem) until ``stop`` (a
    ``time.monotonic()`` value), in the kernels' timed chunks (:meth:`Searcher.ils_until`); each
    improvement that beats ``best`` (:class:`portfolio.exact.BestPlan`) is reported through it.
    ``best`` learns the portfolio's plan (``fetch()``) every ``FETCH_S``, so plans the runner would
    drop are not sent. Returns a note."""
    from portfolio.kernels.engine import Searcher

    rsol = None if start is None or prep is None else prep.contract(start)
    if rsol is None:
        return "tail walk: no plan to start from"
    search = Searcher(prep, seed + SEED_SHIFT)
    if not search.offer(rsol):
        return "tail walk: its start does not fit"
    first, found, fetched = search.best_cost, [0], [-FETCH_S]

    def after_chunk(better: bool) -> None:
        if better:
            found[0] += int(best.offer(prep.expand(search.best), "toulbar2 + tail walk", own=True))
        if time.monotonic() - fetched[0] >= FETCH_S:
            fetched[0] = time.monotonic()
            best.offer(fetch(), "portfolio best", own=False)

    after_chunk(False)   # the portfolio's plan before the first report
    search.ils_until(stop - 0.05, after_chunk)
    gain = (first - search.best_cost) / max(abs(first), 1)
    return f"tail walk: {100 * gain:.2f} % below its start, {found[0]} reported"
