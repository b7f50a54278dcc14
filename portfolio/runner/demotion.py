"""The demotion rule: which workers drop to a low CPU demand, where :mod:`.schedule` gives them the
lowest priority (nice 19, the last slice, not counted as holding a core).

Two ways in. A backend declares it (``report.demand("low")``: an exact backend whose full model
does not fit and that runs LNS windows instead); measured at 60 s on the shared instances whose
exact model does not fit, those windows improved nothing while taking cores from the local search
(``docs/benchmarks/runner.md``). Or the runner decides it for a bound-only backend (exact, not
anytime: ``bound``) whose in-run bound still leaves a gap above ``HOPELESS_GAP`` after solving for
``BOUNDER_CHECK`` of the budget: it cannot end the run soon, and its core is worth more to the plan
makers (an extra local-search seed takes it). ``honour_demand=False`` turns both off.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..backend import LOW

if TYPE_CHECKING:
    from .supervise import _Worker

BOUNDER_CHECK = 0.2
HOPELESS_GAP = 0.01
"""A bound-only backend (exact, not anytime) that has been solving for ``BOUNDER_CHECK`` of the
budget and whose best bound leaves a gap above ``HOPELESS_GAP`` to the best verified cost gets a low
demand."""


class Demotion:
    """Mixin of :class:`.core.Portfolio`: the rule above.

    Uses ``options``, ``scheduler``, ``now()`` and ``_verified_best`` (:class:`.answers.Answers`)."""

    def _set_demand(self, worker: "_Worker", level: str, why: str) -> None:
        """A declared CPU demand: a low one sends the worker's whole process group to nice 19 (see
        :mod:`.schedule`), unless the run ignores demands (``honour_demand=False``)."""
        run = worker.run
        run.demand, run.demand_note = level, why
        if level == LOW and self.options.honour_demand and not worker.done:
            self.scheduler.lower(worker.process.pid)

    def _demote_hopeless_bounders(self, live: list["_Worker"]) -> None:
        """The runner's own demand rule, for bound-only backends (``exact``, not ``anytime``: they
        send bounds, no plans): once it has been solving for ``BOUNDER_CHECK`` of the budget, if
        its best bound still leaves a gap above ``HOPELESS_GAP`` to the best verified cost, it
        cannot end the run soon and its core serves the plan makers better: its demand becomes
        low. Its bounds stay recorded (sent during the run), and it keeps the CPU nobody else wants."""
        if not self.options.honour_demand:
            return
        chance = time.monotonic() - BOUNDER_CHECK * self.options.time_limit
        cost, _ = self._verified_best()
        if not cost or cost <= 0:
            return
        for worker in live:
            caps, run = worker.backend.capabilities, worker.run
            if (worker.done or run.demand == LOW or not caps.exact or caps.anytime or not run.bounds
                    or run.phase != "solve" or worker.solve_started > chance):
                continue
            gap = (cost - run.bounds[-1].value) / cost
            if gap > HOPELESS_GAP:
                self._set_demand(worker, LOW, f"proof out of reach: gap {100 * gap:.3g} % after "
                                              f"{self.now():.1f} s")
