"""The memory package's peak report and certified least-peak bound, against brute force on tiny
random instances (forbidden entries, self-loops, hyperedges, several intervals per node)."""

from __future__ import annotations

from itertools import product

import numpy as np
from hypothesis import HealthCheck, given, settings

from portfolio.evaluate import evaluate
from portfolio.memory import least_peak_bound, peak_report
from portfolio.memory.domains import allowed_strategies
from portfolio.problem import Capacity
from tiny import F, make_problem, tiny

CHECK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def least_peak(problem) -> int | None:
    """The least peak over plans without forbidden choices, in plain Python over integer times."""
    counts = [int(k) for k in problem.strategy_counts]
    best = None
    for plan in product(*(range(k) for k in counts)):
        ev = evaluate(problem, list(plan))
        if ev.has_forbidden:
            continue
        usage: dict[int, int] = {}
        for j in range(problem.num_intervals):
            v = int(problem.interval_node[j])
            u = int(problem.usages_of_interval(j)[plan[v]])
            for t in range(int(problem.interval_start[j]), int(problem.interval_end[j])):
                usage[t] = usage.get(t, 0) + u
        peak = max(usage.values(), default=0)
        best = peak if best is None else min(best, peak)
    return best


@CHECK
@given(tiny())
def test_bound_never_exceeds_the_least_peak(problem):
    truth = least_peak(problem)
    bound = least_peak_bound(problem)
    if truth is None:   # no plan without forbidden choices: the bound may say so, or stay low
        return
    assert bound.value is not None, bound.why
    assert bound.value <= truth, (bound, truth)
    stages = list(bound.stages.values())
    assert stages == sorted(stages) and stages[-1] == bound.value


@CHECK
@given(tiny())
def test_no_plan_claimed_only_when_none_exists(problem):
    if least_peak_bound(problem).value is None:
        assert least_peak(problem) is None


def test_forbidden_pairs_raise_the_bound_to_the_true_least_peak():
    # two nodes live together: their small strategies cannot be taken together (forbidden pair)
    p = make_problem(costs=[[0, 0], [0, 0]], intervals=[(0, 2), (1, 3)],
                     usages=[[1, 10], [2, 10]], edges=[[0, 1]], tables=[[F, 0, 0, 0]],
                     capacity=Capacity.uniform(100))
    assert least_peak(p) == 11
    b = least_peak_bound(p)
    assert b.stages["trivial"] == 3 and b.value == 11 and b.time == 1


def test_arc_consistency_removes_strategies_no_finite_plan_uses():
    # node 1's small strategy meets only forbidden entries: arc consistency takes it away
    p = make_problem(costs=[[0], [0, 0]], intervals=[(0, 1), (0, 1)], usages=[[5], [1, 7]],
                     edges=[[0, 1]], tables=[[F, 0]], capacity=Capacity.uniform(100))
    dom = allowed_strategies(p)
    assert dom.alive.tolist() == [True, False, True]
    b = least_peak_bound(p, refine_points=0)
    assert b.stages == {"trivial": 6, "arc consistency": 12, "edge pairs": 12}
    assert b.value == least_peak(p) == 12


def test_trivially_tight_instance_is_matched_exactly():
    # no edges: every node takes its least usage independently, so the bound is the least peak
    p = make_problem(costs=[[0, 0], [0, 0], [0]], intervals=[(0, 3), (1, 4), (2, 5)],
                     usages=[[4, 2], [3, 9], [6]], edges=[], tables=[])
    assert least_peak_bound(p).value == least_peak(p) == 11


def test_peak_report_names_the_time_and_the_largest_nodes():
    p = make_problem(costs=[[0, 0], [0], [0]], intervals=[(0, 2), (1, 3), (5, 6)],
                     usages=[[4, 8], [3], [20]], edges=[], tables=[])
    rep = peak_report(p, [1, 0, 0])
    assert (rep.peak, rep.time) == (20, 5)
    rep = peak_report(make_problem(costs=[[0, 0], [0]], intervals=[(0, 2), (1, 3)],
                                   usages=[[4, 8], [3]], edges=[], tables=[]), [1, 0])
    assert (rep.peak, rep.time, rep.live_nodes) == (11, 1, 2)
    assert [c[0] for c in rep.contributors] == [0, 1] and rep.contributors[0] == (0, 1, 8)
    assert "11 at t=1" in rep.text()


def test_peak_report_does_not_wrap_on_huge_usages():
    big = 2**62
    p = make_problem(costs=[[0], [0], [0]], intervals=[(0, 1)] * 3, usages=[[big]] * 3,
                     edges=[], tables=[])
    assert peak_report(p, [0, 0, 0]).peak == 3 * big
    assert least_peak_bound(p).value == 3 * big
