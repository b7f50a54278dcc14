"""How the toulbar2 engine paces itself: by the wall clock in a timed run (:class:`TimedPace`, the
engine's decisions as they always were), by work units in deterministic mode (:class:`WorkPace`,
:mod:`portfolio.work`: no decision reads a clock).

The engine (:mod:`.search`) asks its pace the same questions in both modes: how much the exact mode
may take, how many subgradient steps fit, whether another round fits, what limit the next toulbar2
solve gets, and when it may read the portfolio's incumbent. A timed pace answers in seconds (the
constants of :mod:`.search`); a work pace answers in counts: subgradient steps by number, toulbar2
solves by backtracks (:func:`.cfn.time_limit`), rounds while units are left, and it reads
``report.best()`` only right after an exchange point (``spend`` returned).

**Work units** (1 unit is about 1 ms of one core of the reference machine). A toulbar2 solve costs

    SOLVE_UNITS + ENTRY_UNITS * entries + NODE_UNITS * nodes * msd**2

(``entries``: cost entries posted; ``nodes``: toulbar2's search nodes; ``msd``: the mean squared
domain size of the network's variables, which stands for the work of enforcing soft arc
consistency at one node: projections and extensions cost in the products of domain sizes. Its
square is a fit, not a law: with ``msd`` alone S's solves came out at half their measured cost,
with its square every measured solve of A, K, N and S lies within 0.67-1.24 of its cost). The
exact mode (hybrid best-first search, knapsacks) costs ``EXACT_NODE_UNITS`` per node instead. A
subgradient step costs ``PRICE_EDGE_UNITS`` per edge entry and ``PRICE_USAGE_UNITS`` per interval
usage of the kernel model; the engine's own work in the backend's process (network building, plan
evaluation) costs ``PARENT_ENTRY_UNITS`` per network entry and solve, the kernels' repair and
polish ``POLISH_UNITS`` per entry of the problem each time, the set-up ``SETUP_UNITS`` per entry of
the problem. The figures were measured in CPU seconds (``getrusage(RUSAGE_CHILDREN)`` of the
toulbar2 children, ``process_time`` of the engine) on A, B, G, K, N and S:
docs/benchmarks/determinism.md, "toulbar2". The backtrack limit of a solve comes from its unit
allowance through the nodes per backtrack seen so far in the run (counts: the same in every run).
"""

from __future__ import annotations

import time
from typing import Any, Optional

import numpy as np

from portfolio.backend import Reporter
from portfolio.problem import Problem

from .child import KILL_GRACE

UNITS_PER_SECOND = 1000
"""A timed constant of :mod:`.search` in seconds is this many work units in deterministic mode."""

SOLVE_UNITS = 20.0
"""Per toulbar2 child: the fork, toulbar2's set-up, the answer through the pipe."""

ENTRY_UNITS = 4.0e-4
"""Per cost entry posted: pytoulbar2's lists, toulbar2's posting and preprocessing."""

NODE_UNITS = 1.35e-5
"""Per search node of the limited discrepancy search, times ``msd**2`` (K: about 0.8 ms a node)."""

EXACT_NODE_UNITS = 1.0e-5
"""Per search node of the exact mode's hybrid best-first search, times ``msd**2`` (B, G)."""

NODES_PER_BACKTRACK = 0.05
"""Prior of the penalised solves' search nodes per backtrack, per variable (measured 0.025-0.045
on K, N and S): the first solve's backtrack limit; later ones use the counts seen in the run."""

PRIOR_BACKTRACKS = 10
"""Weight of that prior, in backtracks, against the counts seen in the run."""

EXACT_NODES_PER_BACKTRACK = 4.0
"""Search nodes per backtrack of the exact mode (measured 3-4 on B and G)."""

PRICE_EDGE_UNITS, PRICE_USAGE_UNITS = 3.4e-5, 9.5e-5
"""Per subgradient step: per edge cost entry and per interval usage of the kernel model."""

PARENT_ENTRY_UNITS = 6.0e-5
"""Per solve and network entry, in the engine's process: the scaled network, the incumbent's
penalised cost, the plan's evaluation and broken nodes."""

POLISH_UNITS = 1.0e-4
"""Per polish and entry of the problem (strategies, edge entries, interval usages): the kernels'
repair and descent."""

SETUP_UNITS = 2.5e-4
"""Once per run and entry of the problem: the tables, the kernels' model, the price model."""

MIN_SOLVE_UNITS = 1.0 * UNITS_PER_SECOND
"""No toulbar2 solve on less than this (the timed engine's one-second floor)."""


PREPAY_PRIOR = 0.5
"""Before any solve has run, a solve is expected to use half its allowance (see ``prepay``)."""

def problem_entries(problem: Problem) -> int:
    """Strategies, edge cost entries and interval usages: the size the engine's own work follows."""
    return int(len(problem.node_costs) + len(problem.edge_costs) + len(problem.interval_usages))


def network_entries(net: Any) -> int:
    """Cost entries a penalised network posts (its unary rows and edge tables)."""
    return int(sum(len(row) for row in net.unary if row is not None)
               + sum(len(table) for table in net.tables))


def node_weight(counts: np.ndarray) -> float:
    """``msd**2``: the square of the variables' mean squared domain size (at least 1)."""
    counts = np.asarray(counts, dtype=np.float64)
    return max(1.0, float((counts**2).mean())**2) if len(counts) else 1.0


def solve_units(entries: int, nodes: int, weight: float, node_units: float = NODE_UNITS) -> float:
    """Work units of one toulbar2 solve from its counts (see the module docstring)."""
    return SOLVE_UNITS + ENTRY_UNITS * entries + node_units * nodes * weight


class TimedPace:
    """The timed engine's decisions, by the wall clock (``stop``: a ``time.monotonic()`` value)."""

    deterministic = False

    def __init__(self, report: Reporter, stop: float, first_limit: float,
                 problem: Problem) -> None:
        self.report, self.stop = report, stop
        self.limit = first_limit         # seconds of the next solve
        self.build_guess = 0.5 + 1e-6 * (len(problem.edge_costs) + len(problem.node_costs))
        self.timings = {"setup_s": 0.0, "post_s": 0.0, "search_s": 0.0}
        self.left = 0.0                  # seconds left when the vector's solve began

    def exact_limits(self, share: float) -> Optional[dict]:
        """``solve_exact``'s limits for ``share`` of the time left, or None when under a second."""
        seconds = share * (self.stop - time.monotonic())
        return None if seconds < 1.0 else {"seconds": seconds}

    def first_prices(self, prices: Any, seconds: float, share: float,
                     target: Optional[np.ndarray]) -> None:
        prices.share()   # the run's price board before and after: adopt what is better
        prices.advance(min(seconds, share * (self.stop - time.monotonic())), target)
        prices.share()

    def more_prices(self, prices: Any, seconds: float, share: float,
                    plan: Optional[np.ndarray]) -> bool:
        """Subgradient steps between rounds when two seconds are left; whether it ran."""
        if time.monotonic() >= self.stop - 2.0:
            return False
        prices.share()
        prices.advance(min(seconds, share * (self.stop - time.monotonic())), plan)
        prices.share()
        return True

    def another_round(self) -> bool:
        return time.monotonic() < self.stop - 1.0

    def round_best(self) -> Optional[np.ndarray]:
        """The portfolio's best plan, read at every round's start."""
        try:
            return self.report.best()
        except Exception:  # noqa: BLE001 -- sharing is best effort
            return None

    def exchanged(self) -> Optional[np.ndarray]:
        return None

    def vector_start(self) -> None:
        self.left = self.stop - time.monotonic()

    def child_limits(self, net: Any) -> Optional[tuple]:
        """``((seconds, extra child arguments), kill after, search seconds, cap)`` for the next
        solve, or None when less than a second is left for it (toulbar2's timer starts after the
        posting: the kill waits for both)."""
        seconds = min(self.limit, self.left - self.build_guess - KILL_GRACE)
        if seconds < 1.0:
            return None
        return (seconds, ()), seconds + self.build_guess + KILL_GRACE, seconds, self.stop

    def solved(self, outcome: str, value: Any) -> None:
        if outcome == "ok" and isinstance(value, dict) and "build_s" in value:
            self.build_guess = max(0.5, 1.5 * float(value["build_s"]))
            self.timings["post_s"] += float(value["build_s"])
            self.timings["search_s"] += float(value["solve_s"])

    def charge(self, units: float) -> bool:
        return True

    def next_round(self, step: float, cap: float) -> None:
        self.limit = min(cap, self.limit + step)

    def out_of_budget_note(self) -> Optional[str]:
        return None

    def exhausted(self) -> bool:
        return False


class WorkPace:
    """Deterministic mode's decisions, by counts (``report.work``); ``stop`` is only the safety
    net: past it the engine stops, and says so (the plan is then not the deterministic one)."""

    deterministic = True

    def __init__(self, report: Reporter, stop: float, first_limit: float,
                 problem: Problem) -> None:
        self.report, self.work, self.stop = report, report.work, stop
        self.limit = first_limit * UNITS_PER_SECOND   # units of the next solve
        self.weight = node_weight(problem.strategy_counts)
        self.variables = problem.num_nodes
        self.nodes, self.backtracks = 0, 0   # toulbar2's counts so far (nodes per backtrack)
        self.units = 0.0                 # what the engine charged (the meter stops at its total)
        self.points_seen = self._points()
        self.pending = False             # an exchange point passed since the incumbent was read
        self.prepaid = 0.0               # units the running solve paid before it started
        self.used_units = 0.0            # what the run's solves cost, and what they were allowed
        self.allowed_units = 0.0
        self.safety = False              # the wall-clock safety net stopped something
        self.entries = 0                 # entries of the network being solved
        self.timings = {"units": 0.0}

    # ---------------------------------------------------------------------------------- counting
    def _points(self) -> int:
        return int(self.work.spent()) // int(self.work.exchange)

    def left(self) -> float:
        return float(self.work.total - self.work.spent())

    def exhausted(self) -> bool:
        return self.left() <= 0

    def charge(self, units: float) -> bool:
        """Spend ``units`` (less what the last solve prepaid); False once the budget is spent (the
        engine returns then). When an exchange point passed, :meth:`exchanged` reads the
        portfolio's incumbent of the last one, when the engine asks for it (the runner's
        ``best()`` waits for that point to be settled)."""
        units = float(max(0.0, units - self.prepaid))
        self.prepaid = 0.0
        return self._spend(units)

    def _spend(self, units: float) -> bool:
        self.units += units
        self.timings["units"] = round(self.units, 1)
        ok = self.work.spend(units)
        now = self._points()
        if now > self.points_seen:
            self.points_seen = now
            self.pending = True
        return ok

    def prepay(self, allowance: float) -> None:
        """The expected cost of the solve about to run, spent before it runs: the points it passes
        are handed over at once (with the plans known before the solve), so the other backends go
        through them while toulbar2 solves instead of waiting for it; the solve's own charge is
        then only what it used beyond that. Expected: the allowance times the share of their
        allowances the run's earlier solves used (a prior of one half), all counts."""
        used = (PREPAY_PRIOR + self.used_units) / (1.0 + self.allowed_units)
        self.allowed_units += float(max(0.0, allowance))
        self.prepaid = float(max(0.0, allowance)) * min(1.0, used)
        self._spend(self.prepaid)

    def exchanged(self) -> Optional[np.ndarray]:
        """The portfolio's incumbent of the last exchange point passed, once; else None."""
        if not self.pending:
            return None
        self.pending = False
        try:
            return self.report.best()
        except Exception:  # noqa: BLE001 -- sharing is best effort
            return None

    def round_best(self) -> Optional[np.ndarray]:
        return None

    def _clock_ok(self) -> bool:
        if time.monotonic() < self.stop - KILL_GRACE:
            return True
        self.safety = True
        return False

    def out_of_budget_note(self) -> Optional[str]:
        if self.safety:
            return "stopped by the wall-clock safety net before its work budget: not deterministic"
        return None

    # ---------------------------------------------------------------------------------- decisions
    def exact_limits(self, share: float) -> Optional[dict]:
        """The exact mode gets ``share`` of the units left, as backtracks; None under the floor."""
        allowance = share * self.left()
        if allowance < MIN_SOLVE_UNITS or not self._clock_ok():
            return None
        nodes = max(0.0, allowance - SOLVE_UNITS) / (EXACT_NODE_UNITS * self.weight)
        return {"seconds": self.stop - time.monotonic(),
                "backtracks": max(1, int(nodes / EXACT_NODES_PER_BACKTRACK))}

    def exact_units(self, work: dict) -> float:
        if not work:
            return SOLVE_UNITS
        return solve_units(work["entries"], work.get("nodes", 0), self.weight, EXACT_NODE_UNITS)

    def _steps(self, prices: Any, units: float) -> int:
        return int(units // prices.step_units) if prices.step_units > 0 else 0

    def first_prices(self, prices: Any, seconds: float, share: float,
                     target: Optional[np.ndarray]) -> None:
        steps = self._steps(prices, min(seconds * UNITS_PER_SECOND, share * self.left()))
        prices.advance_steps(steps, target)
        self.charge(steps * prices.step_units)

    def more_prices(self, prices: Any, seconds: float, share: float,
                    plan: Optional[np.ndarray]) -> bool:
        if self.left() < 2 * UNITS_PER_SECOND:
            return False
        steps = self._steps(prices, min(seconds * UNITS_PER_SECOND, share * self.left()))
        prices.advance_steps(steps, plan)
        self.charge(steps * prices.step_units)
        return True

    def another_round(self) -> bool:
        return self.left() >= MIN_SOLVE_UNITS and self._clock_ok()

    def vector_start(self) -> None:
        pass

    def nodes_per_backtrack(self) -> float:
        prior = NODES_PER_BACKTRACK * self.variables
        return max(1.0, (PRIOR_BACKTRACKS * prior + self.nodes)
                   / (PRIOR_BACKTRACKS + self.backtracks))

    def child_limits(self, net: Any) -> Optional[tuple]:
        """The next solve's backtrack limit: what its unit allowance (the round's limit, at most
        what is left) buys after the posting, at the nodes per backtrack seen so far."""
        self.entries = network_entries(net)
        allowance = min(self.limit, self.left())
        if allowance < MIN_SOLVE_UNITS or not self._clock_ok():
            return None
        fixed = SOLVE_UNITS + (ENTRY_UNITS + PARENT_ENTRY_UNITS) * self.entries
        nodes = max(0.0, allowance - fixed) / (NODE_UNITS * self.weight)
        backtracks = max(1, int(nodes / self.nodes_per_backtrack()))
        self.prepay(allowance)
        safety = max(0.0, self.stop - time.monotonic())
        return (0, (backtracks,)), safety, safety, self.stop

    def solved(self, outcome: str, value: Any) -> None:
        if outcome == "ok" and isinstance(value, dict) and "nodes" in value:
            self.nodes += int(value["nodes"])
            self.backtracks += max(1, int(value["backtracks"]))

    def solve_cost(self, outcome: str, value: Any) -> float:
        """Units of the solve just run (a child that gave no counts: its posting only)."""
        nodes = int(value.get("nodes", 0)) if outcome == "ok" and isinstance(value, dict) else 0
        cost = solve_units(self.entries, nodes, self.weight) + PARENT_ENTRY_UNITS * self.entries
        self.used_units += cost
        return cost

    def next_round(self, step: float, cap: float) -> None:
        self.limit = min(cap * UNITS_PER_SECOND, self.limit + step * UNITS_PER_SECOND)


def setup_units(problem: Problem) -> float:
    return SETUP_UNITS * problem_entries(problem)


def polish_units(problem: Problem) -> float:
    return POLISH_UNITS * problem_entries(problem)

