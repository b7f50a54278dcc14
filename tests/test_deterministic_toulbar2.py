"""The ``toulbar2`` backend in deterministic mode (issue 31): the same plan and exchange points for
the same seed and work, on an idle machine and under a CPU hog; the work budget respected; the
portfolio's incumbent handed at an exchange point adopted; a warm start used as toulbar2's initial
solution, in deterministic and in timed mode."""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pytest

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.toulbar2 import rounds, settings
from portfolio.testing import cpu_hog
from portfolio.work import CountingWork
from portfolio_plugins import toulbar2


@lru_cache(maxsize=None)
def small():
    """Proven by the exact mode in a few dozen search nodes."""
    return generate_problem(300, seed=7, forbidden_fraction=0.0)


@lru_cache(maxsize=None)
def mid():
    """Too many nodes for the exact mode: rounds of penalised solves (nine at 3,000 units)."""
    return generate_problem(2500, seed=7, forbidden_fraction=0.0)


class Meter(CountingWork):
    """A :class:`CountingWork` that also keeps every ``spend`` call and its answer."""

    def __init__(self, total: int, exchange: int, on_exchange=None) -> None:
        super().__init__(total, exchange, on_exchange)
        self.calls: list[tuple[float, bool]] = []

    def spend(self, units: float) -> bool:
        ok = super().spend(units)
        self.calls.append((float(units), ok))
        return ok


class Sharing(NullReporter):
    """A reporter whose ``best()`` is what a test hands it (the runner's incumbent of a point)."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = None
        self.reads = 0

    def best(self):
        self.reads += 1
        return self.shared


def run(problem, total: int, exchange: int, warm=None, on_exchange=None, seed: int = 0):
    report = Sharing()
    report.work = Meter(total, exchange, on_exchange)
    result = toulbar2.Toulbar2Backend().solve(problem, time.time() + 300, seed, warm, report)
    return result, report


@lru_cache(maxsize=None)
def idle_run(total: int, exchange: int):
    """``run(mid(), total, exchange)``, once per module (its plans serve several tests)."""
    return run(mid(), total, exchange)


def same_run(a, b) -> None:
    (ra, pa), (rb, pb) = a, b
    assert ra.status == rb.status and ra.lower_bound == rb.lower_bound
    assert np.array_equal(ra.solution, rb.solution)
    assert pa.work.points == pb.work.points and pa.work.calls == pb.work.calls
    assert [n for _, _, n in pa.reports] == [n for _, _, n in pb.reports]
    assert all(np.array_equal(x, y) for (_, x, _), (_, y, _) in zip(pa.reports, pb.reports))
    assert ra.note == rb.note


def test_declared_deterministic_with_its_other_fields_kept():
    meta = toulbar2.Toulbar2Backend.meta
    assert meta.deterministic is True
    assert meta.requires == ("pytoulbar2",) and meta.requirement == toulbar2.REQUIREMENT
    assert meta.engines == ("pytoulbar2", "numba", "numpy") and meta.default


def test_small_instance_proof_is_the_same_idle_and_under_a_cpu_hog():
    first = run(small(), 2000, 10)
    with cpu_hog():
        second = run(small(), 2000, 10)
    result = first[0]
    assert result.status == Status.OPTIMAL, result.note
    assert result.lower_bound == evaluate(small(), result.solution).cost
    assert first[1].work.points, "the exact mode's work passed no exchange point"
    same_run(first, second)


def test_penalised_rounds_are_the_same_idle_and_under_a_cpu_hog_and_keep_to_the_budget():
    total = 3000
    first = idle_run(total, 500)
    with cpu_hog():
        second = run(mid(), total, 500)
    same_run(first, second)
    result, report = first
    assert result.status == Status.FEASIBLE and evaluate(mid(), result.solution).feasible
    assert "rounds=0," not in result.note and "exact mode off" in result.note
    calls = report.work.calls
    assert len(calls) >= 5 and report.work.points
    # the engine stops at the first False, and only the last charge may cross the total
    answers = [ok for _, ok in calls]
    assert False not in answers[:-1]
    assert sum(units for units, _ in calls[:-1]) < total
    assert result.timings["units"] == pytest.approx(sum(units for units, _ in calls), abs=0.1)


def test_an_incumbent_handed_at_an_exchange_point_becomes_the_upper_bound(monkeypatch):
    """The runner hands a plan better than any the backend has at the first exchange point: the
    next toulbar2 solves are bounded by its penalised cost, and nothing worse comes back."""
    good, _ = idle_run(3000, 500)
    alone, _ = idle_run(1500, 300)
    good_cost = evaluate(mid(), good.solution).cost
    assert good_cost < evaluate(mid(), alone.solution).cost   # the handed plan is news to it
    handed = []
    report_box = {}

    def on_exchange(k):
        if k == 1:
            report_box["report"].shared = good.solution
            handed.append(report_box["report"].reads)   # reads before the handover

    seen = []
    real = rounds.run_in_child

    def spy(target, args, *rest, **kw):
        # read since the handover: the solve's bound may come from the handed plan (a solve that
        # prepaid the point reads the incumbent after it ran; the next one starts from it)
        seen.append((bool(handed) and report_box["report"].reads > handed[0], args[0], args[3]))
        return real(target, args, *rest, **kw)

    monkeypatch.setattr(rounds, "run_in_child", spy)
    report = Sharing()
    report_box["report"] = report
    report.work = Meter(3000, 300, on_exchange)   # point 1: after the first prices
    result = toulbar2.Toulbar2Backend().solve(mid(), time.time() + 300, 0, None, report)
    assert handed and report.reads >= 1
    assert evaluate(mid(), result.solution).cost <= good_cost
    after = [(net, ub) for was_handed, net, ub in seen if was_handed]
    assert after, "no toulbar2 solve after the exchange point"
    net, ub = after[0]
    assert ub <= net.cost_of(good.solution) + 1


def test_the_incumbent_is_read_only_at_exchange_points():
    report = Sharing()
    report.work = Meter(1500, 10**6)   # no exchange point in the whole run
    toulbar2.Toulbar2Backend().solve(mid(), time.time() + 300, 0, None, report)
    assert report.reads == 0


@pytest.mark.parametrize("follow", ["round", "last", "none"])
@pytest.mark.parametrize("mode", ["deterministic", "timed"])
def test_a_warm_start_is_toulbar2s_start_and_nothing_worse_is_reported(mode, follow, monkeypatch):
    """A good feasible warm start: the first round's solves follow its values (toulbar2's initial
    solution; with the option ``warm_follow=last`` only the round's last, with ``none``
    none), every reported plan is cheaper than it, and so is or equals the answer (without it the
    first report is the least-memory plan, far dearer)."""
    warm, _ = idle_run(1500, 300)
    warm_cost = evaluate(mid(), warm.solution).cost
    starts = []
    real = rounds.run_in_child

    def spy(target, args, *rest, **kw):
        starts.append(args[4])
        return real(target, args, *rest, **kw)

    monkeypatch.setattr(rounds, "run_in_child", spy)
    report = Sharing()
    report.options = {"warm_follow": follow}
    if mode == "deterministic":   # enough work for the first round and more (8 solves)
        report.work = Meter(6000, 500)
        deadline = time.time() + 300
    else:
        deadline = time.time() + 4.0
    result = toulbar2.Toulbar2Backend().solve(mid(), deadline, 1, warm.solution.copy(), report)
    k = settings.VECTORS
    first_round = starts[:k]
    assert first_round and (mode == "timed" or len(starts) > k)
    followed = [along is not None and np.array_equal(along, warm.solution) for along in first_round]
    expected = {"round": [True] * k, "last": [False] * (k - 1) + [True], "none": [False] * k}
    assert followed == expected[follow][:len(followed)]
    assert all(along is None for along in starts[k:])   # later rounds follow nothing by default
    assert all(evaluate(mid(), plan).cost < warm_cost for _, plan, _ in report.reports)
    assert evaluate(mid(), result.solution).cost <= warm_cost
    assert (f"followed by: {follow}" in (result.note or "")) == (follow != "round")


