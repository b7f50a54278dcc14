"""Deterministic mode for the exact engines: one backend's meter and the limit of one engine call.

Why a layer over ``report.work`` (:mod:`portfolio.work`): the driver, the LNS loop and the engines
all spend from one budget, and two things must be decided by counts alone: when a call is over
(:class:`WorkLimit`, the units one full-model slice or one LNS window may spend) and when the
portfolio's incumbent may be read (:meth:`WorkMeter.fresh_best`: only once an exchange point was
passed, so that ``report.best()`` is the incumbent of that point in every run).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..work import Work


class WorkMeter:
    """One exact backend's spending in deterministic mode.

    ``requested`` sums every unit asked for (uncapped, unlike ``work.spent()``): a test checks with
    it that the backend stops once the budget is gone."""

    def __init__(self, work: Work, report) -> None:
        self.work, self.report = work, report
        self.requested = 0.0
        self.out = False            # the backend's total is spent: return from solve
        self._fresh = False         # an exchange point was passed since the last fresh_best()

    def left(self) -> float:
        """Units this backend may still spend."""
        return 0.0 if self.out else float(max(0, self.work.total - self.work.spent()))

    def spend(self, units: float) -> bool:
        """Count ``units`` (an exchange point may be passed inside); False once the total is spent."""
        if self.out:
            return False
        units = max(0.0, float(units))
        self.requested += units
        point = self.work.spent() // self.work.exchange
        ok = self.work.spend(units)
        if self.work.spent() // self.work.exchange != point:
            self._fresh = True
        if not ok:
            self.out = True
        return ok

    def fresh_best(self) -> Optional[np.ndarray]:
        """The portfolio's incumbent when an exchange point was passed since the last call (the
        plan of that point, the same in every run), else None."""
        if not self._fresh:
            return None
        self._fresh = False
        try:
            return self.report.best()
        except Exception:  # noqa: BLE001 -- the runner's sharing is best effort
            return None


class WorkLimit:
    """What one engine call may spend in deterministic mode: ``units`` at most (and never more
    than the backend has left), spent through the backend's meter as the engine works."""

    def __init__(self, units: float, meter: WorkMeter) -> None:
        self.units, self.meter = float(units), meter
        self.spent = 0.0

    def left(self) -> float:
        """Units this call may still spend."""
        return max(0.0, min(self.units - self.spent, self.meter.left()))

    def spend(self, units: float) -> bool:
        """Count ``units``; False once this call's limit or the backend's total is spent."""
        units = max(0.0, float(units))
        self.spent += units
        ok = self.meter.spend(units)
        return ok and self.spent < self.units
