"""The demotion rule: which workers drop to a low CPU demand, where :mod:`.schedule` gives them the
lowest priority (nice 19, the last slice, not counted as holding a core).

Two ways in. A backend declares it (``report.demand("low")``: an exact backend whose full model
does not fit and that runs LNS windows instead); measured at 60 s on the shared instances whose
exact model does not fit, those windows improved nothing while taking cores from the local search
(``docs/benchmarks/runner.md``). Or the runner decides it for a bound-only backend (exact, not
anytime: ``bound``) whose in-run bound still leaves a gap above ``HOPELESS_GAP``: it cannot end the
run soon, and its core is worth more to the plan makers (an extra local-search seed takes it).
When it is judged follows the budget and the bound: at the latest after ``BOUNDER_CHECK`` of the
budget, earlier once its bound has stopped closing the gap (no bound closing ``BOUNDER_STEP`` of
the best cost for ``BOUNDER_STALL`` seconds), but never before ``BOUNDER_MIN`` seconds of solving.
Why not a fixed share: on S the bound's gap stayed at 85 % while it held a core, 12 s of a 60 s
run and 48 s at S's contest limit (240 s); a bound that still moves keeps its chance.
``honour_demand=False`` turns both off.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from ..backend import LOW

if TYPE_CHECKING:
    from .context import RunContext
    from .crew import Worker

BOUNDER_CHECK = 0.2
HOPELESS_GAP = 0.01
"""A bound-only backend (exact, not anytime) that has been solving for ``BOUNDER_CHECK`` of the
budget (or less, see below) and whose best bound leaves a gap above ``HOPELESS_GAP`` to the best
verified cost gets a low demand."""
BOUNDER_MIN = 5.0
BOUNDER_STALL = 3.0
BOUNDER_STEP = 0.01
"""It is judged earlier, once ``BOUNDER_STALL`` seconds passed since its bound last rose by
``BOUNDER_STEP`` of the best verified cost (or since it began solving), but not before
``BOUNDER_MIN`` seconds of solving: ``min(BOUNDER_CHECK x budget, max(BOUNDER_MIN, last progress
+ BOUNDER_STALL))`` seconds after its solve began."""


def check_after(budget: float, progress: float) -> float:
    """Seconds of solving after which a bound-only backend is judged, for a budget of ``budget``
    seconds and a bound whose last real progress came ``progress`` seconds into its solve."""
    return min(BOUNDER_CHECK * budget, max(BOUNDER_MIN, progress + BOUNDER_STALL))


def last_progress(bounds: list, start: float, best_cost: int) -> float:
    """Seconds into the solve (begun at run time ``start``) of the last bound that rose by at
    least ``BOUNDER_STEP`` of ``best_cost`` over the one before it (0: none did)."""
    out, previous = 0.0, None
    for point in bounds:
        if previous is None or point.value - previous >= BOUNDER_STEP * best_cost:
            out = max(0.0, point.time - start)
        previous = point.value if previous is None else max(previous, point.value)
    return out


class Demotion:
    """The rule above. Owns no state of its own (a demand is kept in the worker's row, through the
    context's ``rows``); lowers workers through its ``scheduler``; reads ``honour_demand`` and the
    time limit of its options, and its clock (for the note)."""

    def __init__(self, context: "RunContext") -> None:
        self._scheduler, self._rows = context.scheduler, context.rows
        self._honour, self._time_limit = context.options.honour_demand, context.options.time_limit
        self._now = context.clock.now

    def set_demand(self, worker: "Worker", level: str, why: str) -> None:
        """A declared CPU demand: a low one sends the worker's whole process group to nice 19 (see
        :mod:`.schedule`), unless the run ignores demands (``honour_demand=False``)."""
        self._rows.demand(worker.run, level, why)
        if level == LOW and self._honour and not worker.done:
            self._scheduler.lower(worker.process.pid)

    def demote_hopeless_bounders(self, live: list["Worker"], best_cost: Optional[int]) -> None:
        """The runner's own demand rule, for bound-only backends (``exact``, not ``anytime``: they
        send bounds, no plans): once it has been solving for :func:`check_after` seconds, if
        its best bound still leaves a gap above ``HOPELESS_GAP`` to ``best_cost`` (the best
        verified cost), it cannot end the run soon and its core serves the plan makers better: its
        demand becomes low. Its bounds stay recorded (sent during the run), and it keeps the CPU
        nobody else wants."""
        if not self._honour:
            return
        cost = best_cost
        if not cost or cost <= 0:
            return
        for worker in live:
            caps, run = worker.backend.capabilities, worker.run
            if (worker.done or run.demand == LOW or not caps.exact or caps.anytime or not run.bounds
                    or run.phase != "solve"):
                continue
            solving = time.monotonic() - worker.solve_started
            progress = last_progress(run.bounds, self._now() - solving, cost)
            if solving < check_after(self._time_limit, progress):
                continue
            gap = (cost - run.bounds[-1].value) / cost
            if gap > HOPELESS_GAP:
                self.set_demand(worker, LOW, f"proof out of reach: gap {100 * gap:.3g} % after "
                                             f"{self._now():.1f} s")
