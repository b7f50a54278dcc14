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

Two pieces, one for each side of ``report.work``:

- :class:`CountingWork` is the count itself, the one spend loop: units added up to the total, and
  ``on_exchange(k)`` called at every point k passed. The runner's worker hands the plan over there
  (:mod:`portfolio.runner.points`); called outside the runner (tests, benchmarks) it only counts.
- :class:`Meter` is a backend's side: spend, whether the last spend passed an exchange point, the
  portfolio's incumbent read once after a point (:meth:`Meter.fresh_best`), what is left, and the
  wall-clock safety net. Every built-in deterministic backend paces itself through one (the kernel
  backends through :func:`meter_of`, the exact driver and its LNS pace, toulbar2's ``WorkPace``),
  so the rule "read ``best()`` only right after a point" is kept here (``fresh_best``; the
  ``localsearch`` and ``bound`` plugins still read ``report.best()`` themselves when
  ``exchanged`` says the spend they just made passed a point).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Optional, Protocol, runtime_checkable

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
    """A :class:`Work` that counts: the one spend loop, in the runner's worker and outside it.

    ``on_exchange(k)``, when given, is called at every exchange point k passed (several for a large
    step: each one); the runner's worker hands its remembered plan over there. ``points`` lists the
    points passed (a test checks that a backend reaches the same points in two runs). Outside the
    runner it never waits: a ``solve`` called directly (tests, benchmarks) gets one of these."""

    def __init__(self, total: int, exchange: int = EXCHANGE_UNITS,
                 on_exchange: Optional[Callable[[int], None]] = None) -> None:
        if total < 0 or exchange < 1:
            raise ValueError("total must be >= 0 and exchange >= 1")
        self.total, self.exchange = int(total), int(exchange)
        self._spent = 0.0
        self.points: list[int] = []
        self.on_exchange = on_exchange

    def spent(self) -> int:
        return int(self._spent)

    def spend(self, units: float) -> bool:
        """Count ``units`` (a finite number >= 0), at most up to ``total``; call ``on_exchange`` at
        every point passed. False once ``total`` is spent."""
        if self._spent >= self.total:
            return False
        value = float(units)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"work units must be a finite number >= 0, got {units!r}")
        before = int(self._spent // self.exchange)
        self._spent = min(float(self.total), self._spent + value)
        for k in range(before + 1, int(self._spent // self.exchange) + 1):
            self.points.append(k)
            if self.on_exchange is not None:
                self.on_exchange(k)
        return self._spent < self.total


class Meter:
    """One backend's pacing in deterministic mode, over ``report.work``.

    What every deterministic backend asks of its budget, decided by counts alone:

    - :meth:`spend`: count units; False once the total is spent, and at once after that (``out``);
    - ``exchanged``: the last :meth:`spend` passed an exchange point;
    - :meth:`fresh_best`: the portfolio's incumbent (``report.best()``) when a point was passed
      since the last call, else None: read only then, so that it is the incumbent of that point in
      every run (errors count as None: sharing is best effort);
    - :meth:`left`: units still to spend; ``requested``: every unit asked for (uncapped);
    - the wall-clock safety net, ``stop`` (a ``time.monotonic()`` value; infinite when not
      given): :meth:`clock_out` is the one place a backend in this mode looks at a clock, and it
      remembers that the net fired (``safety_net``: the answer is then not the deterministic one).
    """

    def __init__(self, work: Work, report: Any = None, stop: float = math.inf) -> None:
        self.work, self.report, self.stop = work, report, stop
        self.requested = 0.0
        self.out = False            # the total is spent: return from solve
        self.exchanged = False      # the last spend passed an exchange point
        self.pending = False        # a point was passed since the last fresh_best()
        self.safety_net = False     # clock_out() fired

    def left(self) -> float:
        """Units this backend may still spend."""
        return 0.0 if self.out else float(max(0, self.work.total - self.work.spent()))

    def spend(self, units: float) -> bool:
        """Count ``units`` (negative counts as 0); False once the total is spent."""
        if self.out:
            self.exchanged = False
            return False
        units = max(0.0, float(units))
        self.requested += units
        point = self.work.spent() // self.work.exchange
        ok = self.work.spend(units)
        self.exchanged = self.work.spent() // self.work.exchange > point
        self.pending = self.pending or self.exchanged
        self.out = not ok
        return ok

    def fresh_best(self) -> Optional[Any]:
        """The portfolio's incumbent when an exchange point was passed since the last call (the
        plan of that point, the same in every run), else None."""
        if not self.pending or self.report is None:
            return None
        self.pending = False
        try:
            return self.report.best()
        except Exception:  # noqa: BLE001 -- the runner's sharing is best effort
            return None

    def seconds_left(self) -> float:
        """Seconds to the safety net (for an engine's own wall-clock limit, never a decision)."""
        return self.stop - time.monotonic()

    def clock_out(self, margin: float = 0.0) -> bool:
        """Whether the safety net is less than ``margin`` seconds away; once it is, ``safety_net``
        stays set."""
        if time.monotonic() + margin < self.stop:
            return False
        self.safety_net = True
        return True


def meter_of(report: Any, stop: float = math.inf) -> Optional[Meter]:
    """A :class:`Meter` on ``report.work`` in deterministic mode, None in a timed run (every
    reporter declares ``work``: :class:`portfolio.backend.Reporter`)."""
    return None if report.work is None else Meter(report.work, report, stop)
