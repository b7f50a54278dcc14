"""Several toulbar2 children at once (issue 33): :func:`portfolio.toulbar2.child.run_children` runs
them concurrently with the guarantees of one (the stop signal at the search's limit, the kill a
grace later, never past the cap, every child reaped), limits counted in the child's CPU seconds
when asked, and the engine's ``parallel`` knob (timed mode only)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.toulbar2 import child as child_mod
from portfolio.toulbar2 import search
from portfolio.procstat import cpu_seconds
from portfolio.toulbar2.child import KILL_GRACE, ChildJob, run_children, started_search
from portfolio_plugins import toulbar2
from conftest import live_children


def _nap(seconds, value):
    time.sleep(seconds)
    return value


def _hang():
    time.sleep(60)


def _until_signalled(work_share: float) -> dict:
    """Says its search started, then works (``work_share`` of each 20 ms busy, the rest asleep)
    until SIGVTALRM comes; answers the CPU and wall seconds from the start to the signal."""
    got = []
    signal.signal(signal.SIGVTALRM, lambda *_: got.append((time.process_time(), time.monotonic())))
    c0, w0 = time.process_time(), time.monotonic()
    started_search()
    while not got:
        busy_until = time.monotonic() + 0.02 * work_share
        while time.monotonic() < busy_until and not got:
            pass
        if work_share < 1.0 and not got:
            time.sleep(0.02 * (1.0 - work_share))
    return {"cpu": got[0][0] - c0, "wall": got[0][1] - w0}


def test_children_run_concurrently_and_answer_in_order():
    jobs = [ChildJob(_nap, (0.8, i), 10.0) for i in range(3)]
    before = live_children()
    t0 = time.monotonic()
    out = run_children(jobs, parallel=3)
    took = time.monotonic() - t0
    assert out == [("ok", 0), ("ok", 1), ("ok", 2)]
    assert took < 1.9, took          # one after another would take 2.4 s
    t0 = time.monotonic()
    assert run_children(jobs, parallel=1) == out
    assert time.monotonic() - t0 >= 2.4
    assert not live_children() - before


def test_at_most_parallel_children_run_at_once():
    jobs = [ChildJob(_nap, (0.6, i), 10.0) for i in range(4)]
    t0 = time.monotonic()
    assert [v for _, v in run_children(jobs, parallel=2)] == [0, 1, 2, 3]
    assert time.monotonic() - t0 >= 1.2     # two waves of two


def test_a_hanging_child_is_killed_while_its_siblings_answer():
    before = live_children()
    jobs = [ChildJob(_nap, (0.2, "a"), 10.0), ChildJob(_hang, (), 1.0),
            ChildJob(_nap, (0.3, "c"), 10.0)]
    t0 = time.monotonic()
    out = run_children(jobs, parallel=3)
    assert out == [("ok", "a"), ("killed", None), ("ok", "c")]
    assert time.monotonic() - t0 < 3.0
    assert not live_children() - before


def test_nothing_runs_past_the_cap_and_a_late_turn_is_skipped():
    before = live_children()
    t0 = time.monotonic()
    cap = t0 + 1.5
    jobs = [ChildJob(_hang, (), 30.0, search=30.0, cap=cap) for _ in range(2)]
    jobs.append(ChildJob(_nap, (0.1, "late"), 30.0, search=30.0, cap=cap))
    out = run_children(jobs, parallel=2, cpu_limits=True, stretch=2.0)
    assert out == [("killed", None), ("killed", None), ("skipped", None)]
    assert time.monotonic() - t0 < cap - t0 + 0.5
    assert not live_children() - before


def test_cpu_seconds_reads_a_process_and_says_none_for_a_gone_one():
    mine = cpu_seconds(os.getpid())
    assert mine is not None and mine > 0
    assert cpu_seconds(2**22 + 12345) is None
    assert cpu_seconds(2**22 + 12345, children=True) is None


def test_cpu_seconds_counts_waited_for_children_only_when_asked():
    """The runner's switch: a child that burns 0.3 CPU seconds and is waited for counts in
    ``children=True`` (as the runner counts a worker's), never in the plain reading (as the
    toulbar2 engine counts its children, one at a time)."""
    def theirs():
        return cpu_seconds(os.getpid(), children=True) - cpu_seconds(os.getpid())

    before = theirs()
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert theirs() - before >= 0.25


def test_the_cpu_limit_signals_after_the_child_used_its_cpu_not_earlier():
    """A child busy half of the time: its signal comes after about one CPU second, which takes
    about two seconds (or more on a loaded machine) of wall clock; a wall-clock limit would have
    stopped it after one."""
    search_s = 1.0
    job = ChildJob(_until_signalled, (0.5,), 10.0, search=search_s)
    (outcome, value), = run_children([job], parallel=2, cpu_limits=True, stretch=10.0)
    assert outcome == "ok", value
    assert value["cpu"] >= search_s - 0.05, value
    assert value["cpu"] <= search_s + 0.6, value
    assert value["wall"] >= 1.5 * search_s, value


def test_a_busy_child_is_stopped_after_its_cpu_second_beside_a_busy_sibling():
    job = ChildJob(_until_signalled, (1.0,), 10.0, search=1.0)
    out = run_children([job, job], parallel=2, cpu_limits=True, stretch=10.0)
    for outcome, value in out:
        assert outcome == "ok", value
        assert 0.95 <= value["cpu"] <= 1.6, value


def test_the_wall_clock_caps_a_cpu_limit_and_unreadable_proc_falls_back_to_it(monkeypatch):
    """An idle child never uses its CPU second: the stretched wall clock stops it (2 x 0.5 s).
    Without /proc the limit is the plain wall clock (0.5 s)."""
    job = ChildJob(_until_signalled, (0.0,), 10.0, search=0.5)
    (outcome, value), = run_children([job], parallel=2, cpu_limits=True, stretch=2.0)
    assert outcome == "ok" and 0.9 <= value["wall"] <= 1.5, value
    monkeypatch.setattr(child_mod, "cpu_seconds", lambda pid: None)
    (outcome, value), = run_children([job], parallel=2, cpu_limits=True, stretch=2.0)
    assert outcome == "ok" and 0.4 <= value["wall"] <= 0.9, value


def test_the_stop_comes_a_grace_before_the_cap():
    """Searches far longer than the time left: both children get the signal ``KILL_GRACE`` before
    the cap and answer (their best plan comes back), nothing is killed or runs past the cap."""
    t0 = time.monotonic()
    cap = t0 + 2.0
    job = ChildJob(_until_signalled, (0.0,), 60.0, search=30.0, cap=cap)
    out = run_children([job, job], parallel=2, cpu_limits=True, stretch=3.0)
    for outcome, value in out:
        assert outcome == "ok", value
        assert value["wall"] <= cap - t0 - KILL_GRACE + 0.3, value
    assert time.monotonic() <= cap + 0.3


# ------------------------------------------------------------------------------------------ engine
def _sleeper(net, seed, seconds, ub, start=None):
    time.sleep(60)


def _mid():
    return generate_problem(2500, seed=7, forbidden_fraction=0.0)


def _spy(monkeypatch) -> dict:
    calls = {"one": 0, "many": []}
    real_one, real_many = search.run_in_child, search.run_children

    def one(*args, **kw):
        calls["one"] += 1
        return real_one(*args, **kw)

    def many(jobs, parallel, **kw):
        calls["many"].append((len(jobs), parallel, kw))
        return real_many(jobs, parallel, **kw)

    monkeypatch.setattr(search, "run_in_child", one)
    monkeypatch.setattr(search, "run_children", many)
    return calls


@pytest.mark.parametrize("parallel", ["1", "3"])
def test_the_knob_runs_a_rounds_vectors_at_once_and_nothing_outlives_the_deadline(
        parallel, monkeypatch):
    monkeypatch.setenv(search.PARALLEL_ENV, parallel)
    calls = _spy(monkeypatch)
    problem = _mid()
    report = NullReporter()
    before = live_children()
    t0 = time.monotonic()
    result = toulbar2.Toulbar2Backend().solve(problem, time.time() + 5.0, 0, None, report)
    took = time.monotonic() - t0
    assert not live_children() - before
    assert took < 5.5
    assert result.status == Status.FEASIBLE and evaluate(problem, result.solution).feasible
    assert "solves=0," not in result.note
    assert all(evaluate(problem, p).feasible for _, p, _ in report.reports)
    if parallel == "1":   # today's path: one child at a time, wall-clock limits
        assert calls["one"] >= 1 and not calls["many"] and "parallel=" not in result.note
    else:
        assert calls["one"] == 0 and calls["many"]
        assert calls["many"][0][0] == 3   # the first round: its three vectors at once
        assert all(n <= 3 and p == 3 and kw == {"cpu_limits": True, "stretch": 3.0}
                   for n, p, kw in calls["many"])
        assert "parallel=3" in result.note


def test_hanging_children_at_once_are_killed_and_the_backend_still_answers(monkeypatch):
    monkeypatch.setenv(search.EXACT_ENV, "0")
    monkeypatch.setenv(search.PARALLEL_ENV, "3")
    from test_toulbar2 import overload, run_backend

    before = live_children()
    backend = toulbar2.Toulbar2Backend()
    backend.child = _sleeper
    result, _, took = run_backend(overload(), 3.5, backend)
    assert took < 4.5
    assert result.status == Status.FEASIBLE and evaluate(overload(), result.solution).feasible
    assert "killed=3" in result.note or "killed=6" in result.note, result.note
    assert not live_children() - before


def test_a_bad_knob_is_named_and_the_default_kept(monkeypatch):
    notes: list = []
    monkeypatch.setenv(search.PARALLEL_ENV, "many")
    assert search._parallel(1, 3, notes) == 1 and "PORTFOLIO_TOULBAR2_PARALLEL" in notes[0]
    monkeypatch.setenv(search.PARALLEL_ENV, "7")
    assert search._parallel(1, 3, []) == 3          # never more than a round's vectors
    monkeypatch.setenv(search.PARALLEL_ENV, "0")
    assert search._parallel(2, 3, []) == 1
    monkeypatch.delenv(search.PARALLEL_ENV)
    assert search._parallel(search.PARALLEL, 3, []) == search.PARALLEL == 1
