"""toulbar2's tail walk (:mod:`portfolio.toulbar2.tail`, issue 33): its length, the plan it starts
from, what it reports, and that it keeps to the deadline and out of deterministic mode."""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pytest

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.exact import BestPlan
from portfolio.generate import generate_problem
from portfolio.toulbar2 import search, tail
from portfolio.work import CountingWork
from portfolio_plugins import toulbar2


@lru_cache(maxsize=None)
def instance():
    """Memory binds (the cheapest plan overloads it); too big for the exact mode's quick proof."""
    return generate_problem(300, seed=3, forbidden_fraction=0.0)


@lru_cache(maxsize=None)
def polisher():
    notes: list = []
    pol = search.Polisher(instance(), 0, notes)
    assert pol.prep is not None, notes
    return pol


def poor_start() -> np.ndarray:
    """A feasible plan far from the optimum: the least-memory plan."""
    from portfolio.kernels.engine import min_volume_plan

    prep = polisher().prep
    plan = prep.expand(min_volume_plan(prep.rm))
    assert evaluate(instance(), plan).feasible
    return plan


# ------------------------------------------------------------------------------------------ length
@pytest.mark.parametrize("raw, seconds, expected", [
    ("0.1", 240.0, 24.0),            # the share of the time
    ("0.1", 600.0, tail.TAIL_MAX_S),  # capped
    ("0.1", 10.0, 0.0),              # under TAIL_MIN_S: no tail
    ("0", 240.0, 0.0),               # off
    ("-1", 240.0, 0.0),              # clipped to 0
    ("0.9", 40.0, 20.0),             # clipped to half the time
])
def test_the_tail_is_a_share_of_the_time_within_its_limits(raw, seconds, expected, monkeypatch):
    monkeypatch.setenv(tail.TAIL_ENV, raw)
    notes: list = []
    assert tail.tail_seconds(seconds, notes) == pytest.approx(expected)
    assert not notes


def test_a_tail_that_is_not_a_number_is_noted_and_the_default_used(monkeypatch):
    monkeypatch.setenv(tail.TAIL_ENV, "long")
    notes: list = []
    monkeypatch.delenv(tail.TAIL_ENV)
    default = tail.tail_seconds(240.0, [])
    monkeypatch.setenv(tail.TAIL_ENV, "long")
    assert tail.tail_seconds(240.0, notes) == default
    assert len(notes) == 1 and tail.TAIL_ENV in notes[0] and "'long'" in notes[0]


# ---------------------------------------------------------------------------------------- own best
def test_own_best_keeps_the_cheapest_feasible_plan_only():
    problem = instance()
    soff = problem.strategy_offsets
    cheapest = np.array([int(np.argmin(problem.node_costs[soff[i]:soff[i + 1]]))
                         for i in range(problem.num_nodes)], dtype=np.int64)
    own = tail.OwnBest(problem)
    own.offer(cheapest)                       # overloads memory: never a start
    own.offer(None)
    assert own.plan is None and own.cost is None
    poor = poor_start()
    good = polisher()(cheapest)
    assert good is not None and evaluate(problem, good).cost < evaluate(problem, poor).cost
    own.offer(good)
    own.offer(poor)                           # dearer: does not replace it
    assert np.array_equal(own.plan, good) and own.cost == evaluate(problem, good).cost


# ------------------------------------------------------------------------------------------- walk
def walk(start: np.ndarray, seconds: float, fetch=lambda: None, known=None):
    """A tail walk from ``start`` for ``seconds``; (note, reports, wall seconds)."""
    report = NullReporter()
    best = BestPlan(instance(), report)
    best.offer(known if known is not None else start, "given", own=False)
    t0 = time.monotonic()
    note = tail.tail_walk(polisher().prep, start, best, 0, t0 + seconds, fetch)
    return note, report.reports, time.monotonic() - t0


def test_the_walk_reports_only_feasible_plans_each_cheaper_and_ends_in_time():
    problem, start = instance(), poor_start()
    note, reports, took = walk(start, 1.5)
    assert took < 1.5 + 0.3
    assert reports, note
    costs = [evaluate(problem, p).cost for _, p, _ in reports]
    assert all(evaluate(problem, p).feasible for _, p, _ in reports)
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    assert costs[0] < evaluate(problem, start).cost
    assert "below its start" in note and f"{len(reports)} reported" in note


def test_the_walk_sends_nothing_the_portfolio_already_beats():
    """The portfolio's plan (``fetch``) is read during the walk: a walk from a poor start while
    the portfolio holds a good plan reports only plans below the good one's cost."""
    problem, start = instance(), poor_start()
    _, first, _ = walk(start, 1.0)
    good = first[-1][1]
    good_cost = evaluate(problem, good).cost
    _, again, _ = walk(start, 1.0, fetch=lambda: good)
    assert all(evaluate(problem, p).cost < good_cost for _, p, _ in again)
    # without the read, the same walk's first reports are the poor start's early descents
    _, blind, _ = walk(start, 1.0)
    assert blind and evaluate(problem, blind[0][1]).cost > good_cost


def test_a_walk_without_a_plan_says_so():
    best = BestPlan(instance(), NullReporter())
    note = tail.tail_walk(polisher().prep, None, best, 0, time.monotonic() + 1.0, lambda: None)
    assert note == "tail walk: no plan to start from"
    soff = instance().strategy_offsets
    cheapest = np.array([int(np.argmin(instance().node_costs[soff[i]:soff[i + 1]]))
                         for i in range(instance().num_nodes)], dtype=np.int64)
    note = tail.tail_walk(polisher().prep, cheapest, best, 0, time.monotonic() + 1.0,
                          lambda: None)
    assert note == "tail walk: its start does not fit"


# ------------------------------------------------------------------------------------- in a solve
def test_the_tail_is_due_after_its_rounds_only():
    assert not tail.tail_due(tail.TAIL_AFTER_ROUNDS - 1)
    assert tail.tail_due(tail.TAIL_AFTER_ROUNDS) and tail.tail_due(tail.TAIL_AFTER_ROUNDS + 5)


def test_a_timed_solve_ends_with_the_walk_and_keeps_to_its_deadline(monkeypatch):
    problem = instance()
    monkeypatch.setenv(search.EXACT_ENV, "0")
    monkeypatch.setenv(tail.TAIL_ENV, "0.3")
    monkeypatch.setattr(tail, "TAIL_AFTER_ROUNDS", 0)   # from the first round: 8 s hold one
    report = NullReporter()
    t0 = time.monotonic()
    result = toulbar2.Toulbar2Backend().solve(problem, time.time() + 8.0, 0, None, report)
    took = time.monotonic() - t0
    assert took < 8.0
    assert "tail walk:" in result.note and "solves=0," not in result.note
    assert result.status == Status.FEASIBLE and evaluate(problem, result.solution).feasible
    assert all(evaluate(problem, p).feasible for _, p, _ in report.reports)
    # the solves ended before the tail: no toulbar2 report in the walk's seconds but the walk's
    tail_from = t0 + 8.0 - 0.3 * 8.0
    late = [note for at, _, note in report.reports if at > tail_from + 0.5]
    assert all(note == "toulbar2 + tail walk" for note in late)


@pytest.mark.parametrize("share, after", [("0", 0), ("0.3", 99)])
def test_off_or_before_its_rounds_there_is_no_walk(share, after, monkeypatch):
    monkeypatch.setenv(search.EXACT_ENV, "0")
    monkeypatch.setenv(tail.TAIL_ENV, share)
    monkeypatch.setattr(tail, "TAIL_AFTER_ROUNDS", after)
    report = NullReporter()
    result = toulbar2.Toulbar2Backend().solve(instance(), time.time() + 4.0, 0, None, report)
    assert result.status == Status.FEASIBLE and "tail walk" not in result.note
    assert "solves=0," not in result.note
    assert not any(note == "toulbar2 + tail walk" for _, _, note in report.reports)


def test_deterministic_mode_has_no_walk_whatever_the_setting(monkeypatch):
    monkeypatch.setenv(search.EXACT_ENV, "0")
    monkeypatch.setenv(tail.TAIL_ENV, "0.3")
    monkeypatch.setattr(tail, "TAIL_AFTER_ROUNDS", 0)
    report = NullReporter()
    report.work = CountingWork(3000, 1000)
    result = toulbar2.Toulbar2Backend().solve(instance(), time.time() + 300, 0, None, report)
    assert result.status == Status.FEASIBLE and "tail walk" not in result.note
