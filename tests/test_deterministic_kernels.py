"""The kernel backends in deterministic mode (issue 31): the same seed and work give the same run,
on a loaded machine, with sleeps in between and with a clock that races; the work total is kept;
the portfolio's plan is read only right after an exchange point and searched from; warm starts are
really used (``localsearch``, ``bound``) or ignored as documented (``greedy``, ``minusage``).

Each backend's ``solve`` is called in-process with a :class:`CountingWork` that plays the runner
(:class:`Runner` below)."""

from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np
import pytest

from portfolio.backend import NullReporter, declared
from portfolio.evaluate import evaluate
from portfolio.generate import generate_problem
from portfolio.io import load_problem
from portfolio.problem import Capacity, Problem
from portfolio.testing import cpu_hog
from portfolio.work import CountingWork
from portfolio_plugins.bound import BoundBackend
from portfolio_plugins.greedy import GreedyBackend
from portfolio_plugins.localsearch import LocalSearchBackend
from portfolio_plugins.minusage import MinUsageBackend

from conftest import bench_path

BACKENDS = {"minusage": MinUsageBackend, "greedy": GreedyBackend,
            "localsearch": LocalSearchBackend, "bound": BoundBackend}
ONE_SHOT = ("minusage", "greedy")
FAR = 10**6   # seconds to the deadline: the safety net never fires in these tests


class Runner(NullReporter):
    """A reporter in deterministic mode that plays the runner: from exchange point ``at`` on,
    ``best()`` returns ``plan``; ``best()`` read anywhere but right after an exchange point fails
    the test. ``pause`` sleeps at every exchange point and report (a slow portfolio)."""

    def __init__(self, total: int, exchange: int, plan: Optional[np.ndarray] = None,
                 at: Optional[int] = None, pause: float = 0.0) -> None:
        super().__init__()
        self.work = _Recording(self, total, exchange)
        self.plan, self.at, self.pause = plan, at, pause
        self.handed: Optional[np.ndarray] = None
        self.fresh = False
        self.reads: list[int] = []   # the count at each best()
        self.report_at: list[int] = []   # the count at each reported plan

    def exchange(self, k: int) -> None:
        self.fresh = True
        if self.at is not None and k >= self.at:
            self.handed = self.plan
        time.sleep(self.pause)

    def best(self) -> Optional[np.ndarray]:
        assert self.fresh, "report.best() read away from an exchange point"
        self.reads.append(self.work.spent())
        return self.handed

    def __call__(self, solution: np.ndarray, note: str = "") -> None:
        super().__call__(solution, note)
        self.report_at.append(self.work.spent())
        time.sleep(self.pause)

    def trace(self, result) -> tuple:
        """Everything a deterministic run must repeat: the answer, the reported plans and
        bounds, every count, the exchange points and where ``best()`` was read."""
        plan = None if result.solution is None else result.solution.tolist()
        return (plan, result.lower_bound, [(p.tolist(), n) for _, p, n in self.reports],
                [b for _, b, _ in self.bounds], self.work.calls, self.work.points, self.reads)


class _Recording(CountingWork):
    """CountingWork that keeps every ``spend`` and its answer."""

    def __init__(self, owner: Runner, total: int, exchange: int) -> None:
        super().__init__(total, exchange, on_exchange=owner.exchange)
        self.owner = owner
        self.calls: list[float] = []
        self.answers: list[bool] = []

    def spend(self, units: float) -> bool:
        self.owner.fresh = False
        self.calls.append(units)
        ok = super().spend(units)
        self.answers.append(ok)
        return ok


def solve(name: str, problem: Problem, seed: int, total: int, exchange: int = 100,
          warm: Optional[np.ndarray] = None, **runner) -> tuple[object, Runner]:
    rep = Runner(total, exchange, **runner)
    result = BACKENDS[name]().solve(problem, time.time() + FAR, seed, warm, rep)
    return result, rep


class RacingClock:
    """``time.monotonic`` and ``perf_counter`` that jump ``step`` seconds at every read: any
    decision taken from them (a throttle, a time share, a chunk sized by speed) changes."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.reads = time.monotonic(), step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        return self.now


@pytest.fixture(scope="module")
def small() -> Problem:
    return generate_problem(nodes=300, seed=7)


@pytest.fixture(scope="module")
def mid() -> Problem:
    """G (816 nodes): a mid-size contest instance that a short search does not finish."""
    return load_problem(bench_path("G"))


@pytest.fixture(scope="module")
def good_g(mid: Problem) -> np.ndarray:
    """A good plan of G (a longer deterministic local search than the tests' runs)."""
    result, _ = solve("localsearch", mid, 3, 2000)
    return result.solution


def _budget(name: str) -> tuple[int, int]:
    """(total, exchange) of a test run: one-shot backends spend their size, so their exchange
    points are made dense to be compared."""
    return (10**6, 1) if name in ONE_SHOT else (400, 100)


# -------------------------------------------------------------------------------------- contract
@pytest.mark.parametrize("name", list(BACKENDS))
def test_declares_deterministic_and_keeps_its_engines(name):
    meta, problems = declared(BACKENDS[name]())
    assert meta.deterministic and not problems
    assert meta.engines == {"minusage": ("numpy",), "greedy": ("numba", "numpy"),
                            "localsearch": ("numba", "numpy"),
                            "bound": ("numba", "numpy", "pytoulbar2")}[name]


# -------------------------------------------------------------------------------------- repeats
@pytest.mark.parametrize("name", list(BACKENDS))
def test_same_seed_and_work_repeat_under_load_and_sleeps(name, small):
    total, exchange = _budget(name)
    first, rep1 = solve(name, small, 5, total, exchange)
    with cpu_hog():
        second, rep2 = solve(name, small, 5, total, exchange, pause=0.002)
    assert rep1.trace(first) == rep2.trace(second)
    assert rep1.work.spent() > 0 and (name in ONE_SHOT or rep1.work.points)


@pytest.mark.parametrize("name", list(BACKENDS))
def test_no_clock_decides_anything(name, small, monkeypatch):
    total, exchange = _budget(name)
    first, rep1 = solve(name, small, 2, total, exchange)
    clock = RacingClock(0.5)
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(time, "perf_counter", clock)
    second, rep2 = solve(name, small, 2, total, exchange)
    monkeypatch.undo()
    assert clock.reads > (1 if name in ONE_SHOT else 20)   # it was read, and it raced
    assert rep1.trace(first) == rep2.trace(second)


@pytest.mark.parametrize("name", ["localsearch", "bound"])
def test_mid_size_repeats_under_load(name, mid):
    first, rep1 = solve(name, mid, 1, 300, 100)
    with cpu_hog():
        second, rep2 = solve(name, mid, 1, 300, 100, pause=0.01)
    assert rep1.trace(first) == rep2.trace(second)
    assert rep1.work.points == [1, 2, 3]


def test_another_seed_searches_elsewhere(mid):
    runs = [solve("localsearch", mid, seed, 200)[1] for seed in (0, 1)]
    for rep in runs:
        assert all(evaluate(mid, p).feasible for _, p, _ in rep.reports)
    plans = [[p.tolist() for _, p, _ in rep.reports] for rep in runs]
    assert plans[0] != plans[1]


# -------------------------------------------------------------------------------------- the total
@pytest.mark.parametrize("name", ["localsearch", "bound"])
def test_anytime_backends_spend_the_total_and_stop(name, small):
    _, rep = solve(name, small, 0, 250, 100)
    work = rep.work
    assert work.spent() == 250
    assert work.answers[-1] is False and work.answers.count(False) == 1   # returned at once
    assert sum(work.calls[:-1]) < 250 <= sum(work.calls)   # never past it by more than a step


@pytest.mark.parametrize("name", ONE_SHOT)
def test_one_shot_backends_spend_once_by_size(name, small, mid):
    sizes = []
    for problem in (small, mid):
        _, rep = solve(name, problem, 0, 10**6)
        assert len(rep.work.calls) == 1
        sizes.append(rep.work.calls[0])
    assert 0 < sizes[0] < sizes[1]   # G is the larger one
    _, tight = solve(name, mid, 0, 1)   # a total below the size: still one plan, then stop
    assert tight.work.answers == [False] and tight.reports


# -------------------------------------------------------------------------------------- exchanges
def test_localsearch_adopts_the_portfolio_plan_at_an_exchange(mid, good_g):
    good_cost = evaluate(mid, good_g).cost
    result, rep = solve("localsearch", mid, 0, 200, 50, plan=good_g, at=2)
    again, rep2 = solve("localsearch", mid, 0, 200, 50, plan=good_g, at=2)
    assert rep.trace(result) == rep2.trace(again)
    assert [r // 50 for r in rep.reads] == [1, 2, 3, 4]   # once per point, right after it
    assert "adopted=1" in result.note
    assert evaluate(mid, result.solution).cost <= good_cost
    cold, _ = solve("localsearch", mid, 0, 200, 50)
    assert evaluate(mid, cold.solution).cost > good_cost   # it did not find it alone
    # before point 2 its own plans; after it only improvements on the plan handed over
    costs = [(at, evaluate(mid, p).cost) for at, (_, p, _) in zip(rep.report_at, rep.reports)]
    assert all(c > good_cost for at, c in costs if at < 100)
    assert all(c < good_cost for at, c in costs if at >= 100)


def test_bound_takes_its_target_from_an_exchange(mid, good_g, monkeypatch):
    from portfolio.kernels import bound as kbound
    from portfolio.kernels.engine import prepare

    targets = []
    step = kbound.LagrangeBound.step

    def spy(self, ub):
        targets.append((rep.work.spent(), ub))
        return step(self, ub)

    monkeypatch.setattr(kbound.LagrangeBound, "step", spy)
    rep = Runner(300, 100, plan=good_g, at=2)
    BoundBackend().solve(mid, time.time() + FAR, 0, None, rep)
    good = evaluate(mid, good_g).cost - kbound.kernel_offset(prepare(mid))
    before = [ub for at, ub in targets if at < 200]
    after = [ub for at, ub in targets if at >= 200]
    assert before and after
    assert all(ub > good for ub in before)   # the greedy plan's cost until point 2 ...
    assert set(after) == {good}              # ... the portfolio's from it on
    assert [r // 100 for r in rep.reads] == [1, 2, 3]   # once per point, right after it


# -------------------------------------------------------------------------------------- warm starts
@pytest.mark.parametrize("deterministic", [True, False])
def test_localsearch_starts_from_a_feasible_warm_start(mid, good_g, deterministic):
    good_cost = evaluate(mid, good_g).cost
    if deterministic:
        result, rep = solve("localsearch", mid, 0, 150, 100, warm=good_g)
        assert np.array_equal(rep.reports[0][1], good_g)   # its first incumbent, handed over
        assert "warm start" in result.note
    else:
        rep = NullReporter({"max_rounds": 2})
        result = LocalSearchBackend().solve(mid, time.time() + 60, 0, good_g, rep)
    assert all(evaluate(mid, p).cost <= good_cost for _, p, _ in rep.reports)
    assert evaluate(mid, result.solution).cost <= good_cost
    cold, _ = solve("localsearch", mid, 0, 150, 100)
    assert evaluate(mid, cold.solution).cost > good_cost


def test_localsearch_repairs_a_warm_start_that_no_longer_fits(mid, good_g):
    from portfolio.kernels.engine import Repairer, prepare

    peak = evaluate(mid, good_g).peak_usage
    tight = dataclasses.replace(mid, capacity=Capacity.uniform(int(peak * 0.97)))
    assert not evaluate(tight, good_g).feasible
    result, rep = solve("localsearch", tight, 0, 150, 100, warm=good_g)
    prep = prepare(tight)
    repaired = prep.expand(Repairer(prep, 0).repair_and_polish(prep.project(good_g)))
    assert np.array_equal(rep.reports[0][1], repaired)
    assert "warm start repaired" in result.note
    cold, _ = solve("localsearch", tight, 0, 150, 100)
    assert evaluate(tight, result.solution).cost < evaluate(tight, cold.solution).cost


def test_bound_steps_towards_the_warm_cost(mid, good_g, monkeypatch):
    from portfolio.kernels import bound as kbound
    from portfolio.kernels import engine
    from portfolio.kernels.engine import prepare

    cold, _ = solve("bound", mid, 0, 150)
    targets = []
    step = kbound.LagrangeBound.step

    def spy(self, ub):
        targets.append(ub)
        return step(self, ub)

    def no_greedy(*args, **kwargs):
        raise AssertionError("a greedy plan was built despite the warm start")

    monkeypatch.setattr(kbound.LagrangeBound, "step", spy)
    monkeypatch.setattr(engine, "greedy_plan", no_greedy)
    warm, _ = solve("bound", mid, 0, 150, warm=good_g)
    good = evaluate(mid, good_g).cost - kbound.kernel_offset(prepare(mid))
    assert targets and set(targets) == {good}
    assert warm.lower_bound >= cold.lower_bound   # a closer target: a bound at least as high


@pytest.mark.parametrize("name", ONE_SHOT)
def test_one_shot_backends_ignore_the_warm_start(name, mid, good_g):
    with_warm, rep1 = solve(name, mid, 0, 10**6, 1, warm=good_g)
    without, rep2 = solve(name, mid, 0, 10**6, 1)
    assert rep1.trace(with_warm) == rep2.trace(without)
