"""CPU weights and the adaptive rule (issue 50, item 3; runner/focus.py, runner/credit.py): weights
become nice levels at a worker's start, the rule moves CPU toward a backend that improves the
incumbent and away from one that does not, never below its floor, leaves an exact backend's proof
search alone, judges nobody before a fair slice, frees a core for an extra seed of the leader,
and in deterministic mode moves work at exchange points only, the same way in every run.

Nice levels can only be raised: under ``nice -n 19`` (as this suite runs on a shared machine)
every level is 19 and the tests that read levels compare with ``min(19, base + offset)``; what
the rule meant (its moves, the extra seeds) is checked whatever the base."""

from __future__ import annotations

import os

import numpy as np
import pytest

import det_backends as db
import faulty_backends as fb
from portfolio.generate import generate_problem
from portfolio.options import RunOptions
from portfolio.runner import focus, run_portfolio
from portfolio.runner.credit import POLISH_SHARE, CreditBook, gain
from portfolio.runner.schedule import LOW_NICE, Scheduler, nice_offset, nice_offsets, own_nice


@pytest.fixture(scope="module")
def roomy():
    """A problem with no memory limit: every plan without forbidden choices is feasible."""
    return generate_problem(60, seed=3, forbidden_fraction=0.0).with_limit(None)


@pytest.fixture
def quick(monkeypatch):
    """The rule looks every half second and judges a worker as soon as it searches (so that the
    tests do not depend on how much CPU a loaded machine gives them)."""
    monkeypatch.setattr(focus, "FAIR_SHARE", 0.0)
    monkeypatch.setattr(focus, "WINDOW_MIN", 0.5)
    monkeypatch.setattr(focus, "WINDOW_SHARE", 0.0)


def _nice(note: str) -> int:
    assert note.startswith("nice="), note
    return int(note.split("=")[1])


# ------------------------------------------------------------------------------------ weights
def test_weights_become_nice_offsets_at_cfs_ratio():
    assert nice_offset(1.0, 1.0) == 0 and nice_offset(2.0, 1.0) == 0
    assert nice_offset(0.5, 1.0) == 3          # log(2) / log(1.25) = 3.1
    assert nice_offset(0.25, 1.0) == 6         # 6.2
    assert nice_offset(1e-9, 1.0) == LOW_NICE  # capped
    assert nice_offsets({"a": 4.0, "b": 1.0, "c": 2.0}) == {"a": 0, "b": 6, "c": 3}


def test_reweigh_raises_only_and_keeps_the_ratios():
    """Two real process groups: a move toward the second raises the first, never lowers anyone."""
    import subprocess

    procs = [subprocess.Popen(["sleep", "30"], start_new_session=True) for _ in range(2)]
    try:
        scheduler = Scheduler("share", 2)
        base = scheduler.base
        a, b = (p.pid for p in procs)
        scheduler.started(a, 1)
        scheduler.started(b, 1)
        scheduler.reweigh({a: 0, b: 4})
        assert scheduler.level(a) == base and scheduler.level(b) == min(LOW_NICE, base + 4)
        assert (fb.nice_of(a), fb.nice_of(b)) == (base, min(LOW_NICE, base + 4))
        scheduler.reweigh({a: 3, b: 0})   # the other way: b cannot go back down, a goes up
        assert scheduler.level(b) == min(LOW_NICE, base + 4)
        assert scheduler.level(a) == min(LOW_NICE, base + 4 + 3)
        assert (fb.nice_of(a), fb.nice_of(b)) == (scheduler.level(a), scheduler.level(b))
        slices = Scheduler("slices", 2)
        assert slices.start_increment(5) == 0 and slices.reweigh({a: 2}) == {a: 2}
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_cpu_weights_become_each_workers_nice_level(roomy):
    """Read from /proc/PID/stat of each worker while it runs, and by the worker itself."""
    seen: dict[str, int] = {}

    def look(pf):
        for worker in pf.crew.live():
            seen[worker.run.name] = fb.nice_of(worker.process.pid)

    base = own_nice()
    result = run_portfolio(roomy, [fb.Stalls("heavy"), fb.Stalls("light")],
                           RunOptions(time_limit=2.0, workers=2, extra_seeds=False, adaptive=False,
                                      cpu_weights={"heavy": 2.0, "light": 0.5}), on_update=look)
    assert seen == {"heavy": base, "light": min(LOW_NICE, base + 6)}, seen
    assert _nice(result.runs["light"].note) == min(LOW_NICE, base + 6)
    assert result.schedule["weights"] == {"heavy": 2.0, "light": 0.5}
    assert result.schedule["start_nice"] == ({} if base == LOW_NICE else
                                             {"light": min(LOW_NICE - base, 6)})
    assert result.schedule["adaptive"] is False and result.schedule["moves"] == []


def test_the_extra_seed_goes_to_the_most_weight_per_copy(roomy):
    result = run_portfolio(roomy, [fb.RandomSpin("a"), fb.RandomSpin("b"), fb.Stalls("c")],
                           RunOptions(time_limit=4.0, workers=3, seed=1, adaptive=False,
                                      cpu_weights={"a": 1.0, "b": 3.0, "c": 0.1}))
    copies = sorted(n for n in result.runs if "+" in n)
    assert copies and all(n.startswith("b+") for n in copies), copies


# ------------------------------------------------------------------------------------ credit
def test_a_polish_of_another_backends_plan_credits_its_finder():
    book = CreditBook(lambda name: name != "greedy")
    n = 100
    start = np.zeros(n, dtype=np.int64)
    book.posted("greedy", start, 1000, None, True)
    found = start.copy()
    found[:30] = 1                                   # 30 % of the nodes: a region of its own
    assert book.posted("tb2", found, 900, (start, 1000), True) == "tb2"
    polished = found.copy()
    polished[40:42] = 2                              # two nodes from the board's plan
    assert book.posted("ls", polished, 880, (found, 900), True) == "tb2"
    again = polished.copy()
    again[50] = 3                                    # its own plan again: still tb2's region
    assert book.posted("ls", again, 870, (polished, 880), True) == "tb2"
    credit = book.take()
    assert "greedy" not in credit                     # its plan had nothing to improve on
    assert credit["tb2"] == pytest.approx(gain(1000, 900) + (1 - POLISH_SHARE) * (
        gain(900, 880) + gain(880, 870)))
    assert credit["ls"] == pytest.approx(POLISH_SHARE * (gain(900, 880) + gain(880, 870)))
    assert book.take() == {}                         # taken
    far = again.copy()
    far[60:] = 4                                     # 40 % moved: its own region now
    assert book.posted("ls", far, 800, (again, 870), True) == "ls"
    assert book.take() == {"ls": pytest.approx(gain(870, 800))}


def test_a_backend_that_does_not_read_the_board_never_polishes_it():
    book = CreditBook(lambda name: True)
    plan = np.zeros(50, dtype=np.int64)
    book.posted("a", plan, 100, None, True)
    near = plan.copy()
    near[0] = 1
    assert book.posted("b", near, 90, (plan, 100), reads_board=False) == "b"
    assert book.take() == {"b": pytest.approx(gain(100, 90))}


# ------------------------------------------------------------------------------------ the rule
def test_cpu_moves_from_a_stalled_backend_to_an_improving_one_down_to_its_floor(roomy, quick):
    base = own_nice()
    result = run_portfolio(roomy, [fb.Improves(), fb.Stalls(), fb.Proves()],
                           RunOptions(time_limit=5.0, workers=3, extra_seeds=False, adaptive=True))
    moves = result.schedule["moves"]
    assert moves, result.schedule
    assert set(moves[0]["levels"]) == {"improves", "stalls"}        # the proof search is left out
    assert moves[0]["rates"]["stalls"] == 0 and moves[0]["rates"]["improves"] > 0
    floor = min(LOW_NICE, base + focus.FLOOR_LEVELS)                 # not one level more
    assert _nice(result.runs["stalls"].note) == floor
    assert _nice(result.runs["improves"].note) == base
    assert _nice(result.runs["proves"].note) == base                 # keeps its share
    assert result.runs["proves"].demand == "proof"
    assert result.schedule["credit"]["improves"] > 0 and "stalls" not in result.schedule["credit"]


def test_the_freed_core_goes_to_an_extra_seed_of_the_leader(roomy, quick):
    """Two workers on two cores: once the stalled one weighs a quarter, a core is free."""
    result = run_portfolio(roomy, [fb.Improves(), fb.Stalls()],
                           RunOptions(time_limit=5.0, workers=2, seed=2, adaptive=True))
    assert result.schedule["moves"], result.schedule
    assert "improves+1" in result.runs, list(result.runs)
    off = run_portfolio(roomy, [fb.Improves(), fb.Stalls()],
                        RunOptions(time_limit=3.0, workers=2, seed=2, adaptive=False))
    assert list(off.runs) == ["improves", "stalls"] and off.schedule["moves"] == []


def test_nobody_is_judged_before_a_fair_slice(roomy, quick, monkeypatch):
    monkeypatch.setattr(focus, "FAIR_MAX", 1e9)
    monkeypatch.setattr(focus, "FAIR_SHARE", 1e9)
    base = own_nice()
    result = run_portfolio(roomy, [fb.Improves(), fb.Stalls()],
                           RunOptions(time_limit=3.0, workers=2, extra_seeds=False, adaptive=True))
    assert result.schedule["moves"] == []
    assert _nice(result.runs["stalls"].note) == base


def test_budget_aware_windows_and_fair_slices():
    assert focus.window(10) == 2.0 and focus.window(60) == 6.0 and focus.window(240) == 15.0
    assert focus.fair_cpu(10) == 2.0 and focus.fair_cpu(60) == 12.0 and focus.fair_cpu(240) == 30.0


# ------------------------------------------------------------------------------------ deterministic
def test_deterministic_mode_moves_work_at_points_and_gives_the_same_plan_twice():
    problem = generate_problem(150, seed=1)
    backends = [db.NodeSearch(), db.EdgeSearch(), db.BlockSearch()]
    options = RunOptions(deterministic=True, work=12_000, time_limit=120.0, seed=3, adaptive=True)
    first = run_portfolio(problem, backends, options)
    second = run_portfolio(problem, backends, options)
    assert first.deterministic["complete"] and second.deterministic["complete"]
    assert first.plan_hash == second.plan_hash
    assert first.schedule["moves"] == second.schedule["moves"]
    assert first.schedule["moves"], first.schedule                 # the rule did move work
    assert first.deterministic["work_per_backend"] == second.deterministic["work_per_backend"]
    assert sum(first.deterministic["work_per_backend"].values()) == pytest.approx(12_000, abs=3)
    assert all("point" in m and m["point"] % 2 == 0 for m in first.schedule["moves"])
    off = run_portfolio(problem, backends, RunOptions(deterministic=True, work=12_000,
                                                      time_limit=120.0, seed=3, adaptive=False))
    assert off.schedule["moves"] == [] and off.deterministic["identity"] != \
        first.deterministic["identity"]


def test_deterministic_weights_scale_the_work_shares():
    problem = generate_problem(60, seed=2)
    result = run_portfolio(problem, [db.NodeSearch(), db.EdgeSearch()],
                           RunOptions(deterministic=True, work=4_000, adaptive=False,
                                      cpu_weights={"det-node": 3.0}))
    assert result.deterministic["work_per_backend"] == {"det-edge": 1_000, "det-node": 3_000}
    assert os.nice(0) == own_nice()   # nobody niced the runner
