"""Deterministic mode for the exact engines: the limit of one engine call.

Why a layer over the backend's :class:`portfolio.work.Meter` (the pacing primitive every
deterministic backend shares: spending, exchange points, the incumbent read once after a point,
the safety net): the driver, the LNS loop and the engines all spend from one budget, and when one
call is over must be decided by counts alone (:class:`WorkLimit`, the units one full-model slice
or one LNS window may spend).
"""

from __future__ import annotations

from ..work import Meter


class WorkLimit:
    """What one engine call may spend in deterministic mode: ``units`` at most (and never more
    than the backend has left), spent through the backend's meter as the engine works."""

    def __init__(self, units: float, meter: Meter) -> None:
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
