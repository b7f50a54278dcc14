"""Deterministic mode's budget: work units instead of seconds, and the exchange points.

Why: a compiler needs the same plan for the same problem, seed and budget, whatever the machine's
load or its number of cores. A timed race cannot give that (which backend reports first, how many
moves fit in a slice, when an incumbent is shared all follow the clock), so in deterministic mode a
backend counts its work instead, and the portfolio exchanges plans only at fixed points of that
count, in a fixed order.

The contract, for a backend that declares ``meta = BackendMeta(deterministic=True)``:

- ``report.work`` is a :class:`Work` in deterministic mode and None in a timed run.
- The backend calls ``report.work.spend(units)`` as it works. A **work unit** is about one
  millisecond of one core of the reference machine (docs/determinism.md); each backend converts its
  own counts (move evaluations, CP-SAT's deterministic time, toulbar2's backtracks, subgradient
  steps) with constants it calibrates once and keeps fixed. Counts, never seconds: no decision of a
  backend in this mode may read a clock (``deadline`` stays the wall-clock safety net, nothing more).
- Every ``exchange`` units of its own count the backend reaches an exchange point: ``spend``
  hands the runner the plan it reported last (``report(plan)`` only remembers plans in this mode)
  and returns. The next ``report.best()`` waits until every backend of the run reached that point
  and returns the portfolio's incumbent of that point, the same in every run. A backend whose
  steps are long (one solve passing several points) spends a step's units before running it and
  reads ``report.best()`` after it, so the others go on through those points meanwhile.
- ``spend`` returns False once the backend's ``total`` is spent: return from ``solve`` then (the
  returned plan counts at the last point). Calls after that return False at once.
- The backend's result must depend only on the problem, the seed, the warm start, the plans
  ``report.best()`` returned, and its work counts: no thread counts from ``allotted_cores()``, no
  time-based limits, no iteration over unordered sets of strings.

:class:`CountingWork` is the meter for calling ``solve`` directly (tests, benchmarks): it counts and
never waits.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

EXCHANGE_UNITS = 1000
"""Work units between two exchange points of one backend (about a second of one core)."""


@runtime_checkable
class Work(Protocol):
    """A backend's budget in deterministic mode (``report.work``)."""

    total: int
    """Units this backend may spend in the run."""
    exchange: int
    """Units between two exchange points."""

    def spent(self) -> int:
        """Units spent so far."""
        ...

    def spend(self, units: float) -> bool:
        """Count ``units`` more; at an exchange point, hand over the last reported plan and wait for
        the portfolio's incumbent of that point. False once ``total`` is spent: return then."""
        ...


class CountingWork:
    """A :class:`Work` that counts and never waits: for a ``solve`` called outside the runner.

    ``points`` lists the counts at which exchange points were passed (a test checks that a backend
    reaches the same points in two runs); ``on_exchange(k)``, when given, is called at each."""

    def __init__(self, total: int, exchange: int = EXCHANGE_UNITS, on_exchange=None) -> None:
        if total < 0 or exchange < 1:
            raise ValueError("total must be >= 0 and exchange >= 1")
        self.total, self.exchange = int(total), int(exchange)
        self._spent = 0.0
        self.points: list[int] = []
        self.on_exchange = on_exchange

    def spent(self) -> int:
        return int(self._spent)

    def spend(self, units: float) -> bool:
        if self._spent >= self.total:
            return False
        if units < 0:
            raise ValueError(f"work units must be >= 0, got {units!r}")
        before = int(self._spent // self.exchange)
        self._spent = min(float(self.total), self._spent + float(units))
        for k in range(before + 1, int(self._spent // self.exchange) + 1):
            self.points.append(k)
            if self.on_exchange is not None:
                self.on_exchange(k)
        return self._spent < self.total
