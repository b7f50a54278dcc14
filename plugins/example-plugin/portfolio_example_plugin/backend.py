"""The ``example`` backend: iterated local search from a safe start.

From the warm start (or a least-memory plan that avoids forbidden entries, ``safe_plan``: the plain
least-memory plan, ``problem.min_usage_strategies``, may take forbidden entries, and single-node
moves often cannot leave them), until the deadline: give each node, in random order,
its best improving strategy until no single-node move improves; restart from the best plan with a few
random nodes changed (a "kick"). Moves keep memory within capacity: every reported plan is feasible.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult, Status,
                               options_of, time_left)
from portfolio.backend_options import Option
from portfolio.evaluate import delta_cost, evaluate, usage_profile
from portfolio.problem import FORBIDDEN, Problem
from portfolio.runner.fallback import safe_plan


class _Memory:
    """The plan's memory use at each of ``problem.time_points``, updated move by move."""

    def __init__(self, problem: Problem, plan: np.ndarray) -> None:
        self.problem, self.plan = problem, plan
        self.lo, self.hi = problem.interval_point_range
        self.profile = usage_profile(problem, plan)

    def change(self, node: int, strategy: int) -> tuple[int, np.ndarray]:
        """(first time point, change of use per point) if ``node`` switched to ``strategy``."""
        js = self.problem.intervals_of(node)  # a presolved node may own several intervals
        if len(js) == 0:
            return 0, np.zeros(0, dtype=np.int64)
        a = int(self.lo[js].min())
        delta = np.zeros(int(self.hi[js].max()) - a, dtype=np.int64)
        for j in js.tolist():
            usages = self.problem.usages_of_interval(j)
            delta[self.lo[j] - a:self.hi[j] - a] += usages[strategy] - usages[self.plan[node]]
        return a, delta

    def fits(self, node: int, strategy: int) -> bool:
        a, delta = self.change(node, strategy)
        w = slice(a, a + len(delta))
        return bool((delta <= 0).all() or (self.profile[w] + delta <= self.problem.point_capacity[w]).all())

    def move(self, node: int, strategy: int) -> None:
        a, delta = self.change(node, strategy)
        self.profile[a:a + len(delta)] += delta
        self.plan[node] = strategy


class ExampleBackend(Backend):
    name = "example"
    description = "Example plugin: safe least-memory start, random kicks, improving single-node moves"
    capabilities = Capabilities(anytime=True, warm_start=True, reduced=True)
    meta = BackendMeta(
        # default=True (the default): a user may add it to the default set with
        # `[portfolio] add_to_default = ["example"]` in a config; it never joins it by itself,
        # and runs whenever named (`--backends example`)
        engines=("numpy",),  # what it computes with: its version goes into results
        # its settings: `--option example.kick_share=0.1`, `[example]` in a config file,
        # `backend_options={"example": {...}}`, `-b 'example[kick_share=0.1]'` in a bench sweep
        options=(Option("kick_share", "float", 0.05, low=0.0, high=1.0,
                        help="the largest share of the nodes a kick changes"),))

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        stop = time.monotonic() + time_left(deadline)  # the wall clock read once; ours from here
        rng = np.random.default_rng(seed)  # every random choice comes from the seed
        kick_share = options_of(self, report)["kick_share"]  # given, or the declared default
        if warm_start is None:  # least memory, avoiding forbidden entries where it can
            plan = safe_plan(problem, max(0.05, 0.25 * (stop - time.monotonic())))
        else:
            plan = np.array(warm_start, dtype=np.int64)
        if not evaluate(problem, plan).feasible:
            return SolveResult(Status.NO_SOLUTION, note="the start plan exceeds the capacity")
        best, best_cost, rounds = plan.copy(), evaluate(problem, plan).cost, 0
        report(best, "start")
        n, counts = problem.num_nodes, problem.strategy_counts
        while time.monotonic() < stop:
            memory, cost = _Memory(problem, plan), evaluate(problem, plan).cost
            if rounds:  # kick (not before the first descent), never into a forbidden choice
                size = min(n, int(rng.integers(1, 2 + int(n * kick_share))))
                for node in rng.choice(n, size=size, replace=False).tolist():
                    s = int(rng.integers(counts[node]))
                    d = delta_cost(problem, plan, node, s)
                    if d < FORBIDDEN // 2 and memory.fits(node, s):
                        memory.move(node, s)
                        cost += d
            cost = self._descend(problem, memory, cost, stop, rng)
            rounds += 1
            if cost < best_cost:
                best, best_cost = plan.copy(), cost
                report(best, f"round {rounds}")
            shared = report.best()  # the portfolio's best plan so far (None without warm_start)
            if shared is not None and evaluate(problem, shared).cost < best_cost:
                plan = np.array(shared, dtype=np.int64)  # continue from it, but do not report it
            else:
                plan = best.copy()
        return SolveResult(Status.FEASIBLE, best, note=f"{rounds} rounds")

    @staticmethod
    def _descend(problem: Problem, memory: _Memory, cost: int, stop: float,
                 rng: np.random.Generator) -> int:
        """Make improving single-node moves until there are none (or ``stop``, on
        ``time.monotonic()``, has passed); return the cost."""
        plan, improved = memory.plan, True
        while improved:
            improved = False
            for node in rng.permutation(problem.num_nodes).tolist():
                if time.monotonic() >= stop:
                    return cost
                deltas = [delta_cost(problem, plan, node, s) for s in range(problem.strategy_counts[node])]
                for s in sorted(range(len(deltas)), key=deltas.__getitem__):
                    if deltas[s] >= 0:
                        break
                    if memory.fits(node, s):
                        memory.move(node, s)
                        cost, improved = cost + deltas[s], True
                        break
        return cost
