"""The pacing primitive of deterministic mode (``portfolio.work``): ``CountingWork``, the one spend
loop (the runner's worker and every direct call count through it), and ``Meter``, a backend's side
(spend, the exchange points, the incumbent read once after a point, the safety net)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from portfolio.work import CountingWork, Meter, Work, meter_of


class Board:
    """A reporter whose ``best()`` counts its reads and returns what the test put there."""

    def __init__(self, work=None) -> None:
        self.work, self.plan, self.reads = work, None, 0

    def best(self):
        self.reads += 1
        return self.plan


def test_counting_work_calls_every_point_a_large_step_passes_and_caps_at_the_total():
    seen: list[int] = []
    work = CountingWork(1000, 100, on_exchange=seen.append)
    assert isinstance(work, Work)
    assert work.spend(250) and seen == [1, 2]
    assert work.spend(0) and seen == [1, 2]
    assert not work.spend(10_000)                  # past the total: capped, False
    assert work.spent() == 1000 and seen == list(range(1, 11)) and work.points == seen
    assert not work.spend(1) and work.points == seen   # after the total: False, nothing counted


@pytest.mark.parametrize("units", [-1.0, math.nan, math.inf])
def test_counting_work_refuses_negative_and_non_finite_units(units):
    with pytest.raises(ValueError, match="finite number >= 0"):
        CountingWork(1000).spend(units)


def test_meter_reads_the_incumbent_once_after_each_point_and_never_before():
    report = Board(CountingWork(1000, 100))
    report.plan = np.array([1, 2])
    meter = meter_of(report)
    assert meter is not None and meter.left() == 1000
    assert meter.spend(60) and not meter.exchanged and meter.fresh_best() is None
    assert report.reads == 0                       # no point passed: the board is not read
    assert meter.spend(60) and meter.exchanged
    assert meter.spend(10) and not meter.exchanged   # the last spend passed none ...
    assert meter.fresh_best() is report.plan          # ... but a point passed since the last read
    assert meter.fresh_best() is None and report.reads == 1
    assert meter.spend(-5) and meter.requested == 130 and meter.work.spent() == 130


def test_meter_stops_at_the_total_and_counts_nothing_after():
    calls: list[float] = []

    class Recording(CountingWork):
        def spend(self, units):
            calls.append(units)
            return super().spend(units)

    meter = Meter(Recording(300, 100))
    assert not meter.spend(500) and meter.out and meter.left() == 0.0
    assert not meter.spend(5) and not meter.exchanged
    assert calls == [500.0] and meter.requested == 500.0


def test_meter_hands_no_incumbent_when_the_board_fails():
    class Broken(Board):
        def best(self):
            raise RuntimeError("pipe closed")

    report = Broken(CountingWork(1000, 100))
    meter = meter_of(report)
    meter.spend(150)
    assert meter.fresh_best() is None              # sharing is best effort


def test_clock_out_is_the_safety_net_and_is_remembered():
    meter = Meter(CountingWork(1000), stop=time.monotonic() + 60)
    assert not meter.clock_out() and not meter.clock_out(30) and not meter.safety_net
    assert meter.clock_out(61) and meter.safety_net
    assert not Meter(CountingWork(1000)).clock_out(10**6)   # no stop given: never


def test_a_timed_run_has_no_meter():
    from portfolio.backend import NullReporter

    assert meter_of(Board(None)) is None and meter_of(NullReporter()) is None
    with pytest.raises(AttributeError):   # every reporter declares ``work``: none is probed for
        meter_of(object())
