"""Small deterministic backends for the tests of deterministic mode, and hostile ones.

The honest ones are seeded random-restart local searches that count every move through
``report.work.spend``, read ``report.best()`` after each exchange point (and continue from it when it
is cheaper), and report their improvements; they differ in their moves, so that exchanging plans
changes what each finds. Importable as a plugin module: ``PORTFOLIO_PLUGINS=det_backends`` with this
folder on PYTHONPATH (the three searches and one backend that is not deterministic join the default
set then; the others run only when named).
"""

from __future__ import annotations

import itertools
import os
import signal
import time

import numpy as np

from portfolio.backend import Backend, BackendMeta, Capabilities, SolveResult, Status, time_left
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.work import CountingWork

BUILT_ON = "built on the incumbent of point"
"""The note of a plan found after continuing from another backend's plan."""


class _DetSearch(Backend):
    """Seeded local search: ``UNITS`` work units per move tried; after each exchange point it
    continues from the portfolio's incumbent when that is cheaper than its own plan."""

    meta = BackendMeta(deterministic=True)
    capabilities = Capabilities(anytime=True, warm_start=True, randomized=True)
    description = "test backend: deterministic local search"
    UNITS = 25
    SALT = 0

    def move(self, problem, plan, rng) -> np.ndarray:
        raise NotImplementedError

    def solve(self, problem, deadline, seed, warm_start, report):
        work = report.work if report.work is not None else CountingWork(8_000)
        rng = np.random.default_rng([seed, self.SALT])
        plan = np.array(warm_start if warm_start is not None else problem.min_usage_strategies,
                        dtype=np.int64)
        cost = evaluate(problem, plan).cost
        report(plan, "start")
        point, built_on, stale = 0, None, 0
        while True:
            candidate = self.move(problem, plan, rng)
            ev = evaluate(problem, candidate)
            if ev.feasible and ev.cost < cost:
                plan, cost, stale = candidate, ev.cost, 0
                report(plan, "improved" if built_on is None else f"{BUILT_ON} {built_on}")
            else:
                stale += 1
            if stale > 60:      # restart: a kick of a few random nodes from the plan
                stale = 0
                kicked = plan.copy()
                for i in rng.integers(problem.num_nodes, size=3):
                    kicked[i] = rng.integers(problem.strategy_counts[i])
                kev = evaluate(problem, kicked)
                if kev.feasible and kev.cost < cost + cost // 50:
                    plan, cost = kicked, kev.cost
            if not work.spend(self.UNITS):
                break
            if work.spent() // work.exchange != point:
                point = work.spent() // work.exchange
                best = report.best()
                if best is not None:
                    best_cost = evaluate(problem, best).cost
                    if best_cost < cost:
                        plan, cost, built_on = np.array(best, dtype=np.int64), best_cost, point
        ev = evaluate(problem, plan)
        return SolveResult(Status.FEASIBLE, plan, note=f"cost {ev.cost}, {work.spent()} units")


class NodeSearch(_DetSearch):
    name = "det-node"
    SALT = 1

    def move(self, problem, plan, rng):
        out = plan.copy()
        i = rng.integers(problem.num_nodes)
        out[i] = rng.integers(problem.strategy_counts[i])
        return out


class EdgeSearch(_DetSearch):
    name = "det-edge"
    SALT = 2
    UNITS = 40

    def move(self, problem, plan, rng):
        out = plan.copy()
        if problem.num_edges == 0:
            return out
        e = rng.integers(problem.num_edges)
        for v in problem.nodes_of_edge(e):
            out[v] = rng.integers(problem.strategy_counts[v])
        return out


class BlockSearch(_DetSearch):
    """Moves three consecutive nodes at once."""

    name = "det-block"
    SALT = 3
    UNITS = 60

    def move(self, problem, plan, rng):
        out = plan.copy()
        start = rng.integers(problem.num_nodes)
        for i in range(start, min(problem.num_nodes, start + 3)):
            out[i] = rng.integers(problem.strategy_counts[i])
        return out


class Jumper(Backend):
    """Spends two and a half exchange intervals per call: each point it jumps over counts."""

    name = "det-jumper"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True, warm_start=True)
    description = "test backend: large work steps"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.array(problem.min_usage_strategies, dtype=np.int64)
        report(plan, "least memory")
        seen = []
        while report.work.spend(2.5 * report.work.exchange):
            seen.append(report.best() is not None)
        return SolveResult(Status.FEASIBLE, plan, note=f"saw an incumbent {sum(seen)} times")


class Exact(Backend):
    """Enumerates a tiny instance, spends three exchange intervals and claims the optimum, at its
    last point: an exact claim that ends the run there, deterministically."""

    name = "det-exact"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(exact=True)
    description = "test backend: an exact claim at its end"

    def solve(self, problem, deadline, seed, warm_start, report):
        best = None
        for plan in itertools.product(*[range(int(k)) for k in problem.strategy_counts]):
            ev = evaluate(problem, list(plan))
            if ev.feasible and (best is None or ev.cost < best[0]):
                best = (ev.cost, np.array(plan, dtype=np.int64))
        report.work.spend(3 * report.work.exchange)
        return SolveResult(Status.OPTIMAL, best[1], lower_bound=best[0], note="every plan scored")


class _Twin(Backend):
    """Hands over one plan at point 1: a plan of all ``STRATEGY``, after ``DELAY`` seconds. Two
    twins with plans of equal cost show that the fixed order decides, not the arrival."""

    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True)
    description = "test backend: one plan at point 1"
    STRATEGY, DELAY = 0, 0.0

    def solve(self, problem, deadline, seed, warm_start, report):
        time.sleep(self.DELAY)
        report(np.full(problem.num_nodes, self.STRATEGY, dtype=np.int64), "twin")
        report.work.spend(report.work.exchange)
        return SolveResult(Status.NO_SOLUTION)


class TwinA(_Twin):
    name, STRATEGY, DELAY = "det-twin-a", 1, 0.4


class TwinB(_Twin):
    name, STRATEGY, DELAY = "det-twin-b", 0, 0.0


# ------------------------------------------------------------------------------ hostile ones
class NeverSpends(Backend):
    """Declares the mode but never counts: works until the deadline. Every point waits for it."""

    name = "det-never-spends"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True)
    description = "test backend: never calls spend"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies, "least memory")
        stop = time.monotonic() + time_left(deadline)
        while time.monotonic() < stop:
            time.sleep(0.02)
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies))


class SleepsAtPoint(Backend):
    """Passes two exchange points, then sleeps for ever."""

    name = "det-sleeps"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True)
    description = "test backend: sleeps for ever after point 2"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies, "least memory")
        report.work.spend(2 * report.work.exchange)
        report.best()   # waits until point 2 is settled
        while True:
            time.sleep(0.05)


class CrashesAtPoint(Backend):
    """Passes two exchange points, then dies by SIGKILL."""

    name = "det-crashes"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True)
    description = "test backend: dies after point 2"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies, "least memory")
        report.work.spend(2 * report.work.exchange)
        report.best()   # waits until point 2 is settled
        os.kill(os.getpid(), signal.SIGKILL)
        return SolveResult(Status.NO_SOLUTION)


class StopsOnSafetyNet(Backend):
    """Passes one exchange point, then returns its plan saying its wall-clock safety net stopped it
    before its work was spent (``SolveResult.safety_net``), as toulbar2 or the exact LNS may."""

    name = "det-safety-net"
    meta = BackendMeta(deterministic=True, default=False)
    capabilities = Capabilities(anytime=True)
    description = "test backend: stops on its safety net"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.array(problem.min_usage_strategies, dtype=np.int64)
        report(plan, "least memory")
        report.work.spend(report.work.exchange)
        return SolveResult(Status.FEASIBLE, plan, note="the clock stopped it", safety_net=True)


class NotDeterministic(Backend):
    """An ordinary (timed) backend: left out of deterministic runs."""

    name = "timed-toy"
    meta = BackendMeta(engines=("numpy",))
    capabilities = Capabilities()
    description = "test backend: does not support deterministic mode"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies, dtype=np.int64))


SEARCHES = [NodeSearch, EdgeSearch, BlockSearch]


@hookimpl
def portfolio_backends() -> list:
    return [NodeSearch(), EdgeSearch(), BlockSearch(), Jumper(), Exact(), TwinA(), TwinB(),
            NotDeterministic(), NeverSpends(), SleepsAtPoint(), CrashesAtPoint(),
            StopsOnSafetyNet()]
