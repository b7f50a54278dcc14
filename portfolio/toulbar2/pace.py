"""How the toulbar2 engine paces itself: by the wall clock in a timed run (:class:`TimedPace`, the
engine's decisions as they always were), by work units in deterministic mode (:class:`WorkPace`,
:mod:`portfolio.work`: no decision reads a clock).

The engine (:mod:`.search`, :mod:`.rounds`) asks its pace the same questions in both modes, the
:class:`Pace` protocol: how much the exact mode may take, how many subgradient steps fit, whether
another round fits, what limit the next toulbar2 solve gets, what a solve or a step cost, and when
it may read the portfolio's incumbent. A timed pace answers in seconds (:class:`Schedule`); a work
pace answers in counts: subgradient steps by number, toulbar2 solves by backtracks
(:func:`.cfn.time_limit`), rounds while units are left, and it reads ``report.best()`` only right
after an exchange point, through the backend's :class:`portfolio.work.Meter` (the pacing primitive
every deterministic backend shares).

**Work units** (1 unit is about 1 ms of one core of the reference machine). A toulbar2 solve costs

    solve + entry * entries + node * nodes * msd**2

(:class:`UnitCosts`; ``entries``: cost entries posted; ``nodes``: toulbar2's search nodes; ``msd``:
the mean squared domain size of the network's variables, which stands for the work of enforcing
soft arc consistency at one node: projections and extensions cost in the products of domain sizes.
Its square is a fit, not a law: with ``msd`` alone S's solves came out at half their measured cost,
with its square every measured solve of A, K, N and S lies within 0.67-1.24 of its cost). The exact
mode (hybrid best-first search, knapsacks) costs ``exact_node`` per node instead. A subgradient step
costs ``price_edge`` per edge entry and ``price_usage`` per interval usage of the kernel model; the
engine's own work in the backend's process (network building, plan evaluation) costs
``parent_entry`` per network entry and solve, the kernels' repair and polish ``polish`` per entry
of the problem each time, the set-up ``setup`` per entry of the problem. The figures were measured
in CPU seconds (``getrusage(RUSAGE_CHILDREN)`` of the toulbar2 children, ``process_time`` of the
engine) on A, B, G, K, N and S: docs/benchmarks/determinism.md, "toulbar2". The backtrack limit of
a solve comes from its unit allowance through the nodes per backtrack seen so far in the run
(counts: the same in every run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Protocol, runtime_checkable

import numpy as np

from portfolio.backend import Reporter
from portfolio.problem import Problem
from portfolio.work import Meter

from .child import KILL_GRACE


@dataclass(frozen=True)
class Schedule:
    """The engine's schedule in seconds; deterministic mode reads every figure as
    ``UNITS_PER_SECOND`` units per second."""

    limit_max: float = 20.0
    """The most a toulbar2 search's limit grows to (the backend's ``first_limit`` is the first
    round's, ``limit_step`` its growth per round)."""
    min_solve: float = 1.0
    """No toulbar2 solve, exact mode included, on less than this."""
    round_margin: float = 1.0
    """A timed round starts only while this much is left before the stop."""
    price_margin: float = 2.0
    """Subgradient steps between rounds only while this much is left."""
    exact_share: float = 0.5
    """Share of what is left that the exact mode may use on an eligible (small) instance before
    the penalty search takes over (B and G are proven in under a second:
    docs/benchmarks/toulbar2.md)."""
    price_first: float = 5.0
    """Subgradient steps before the first round ..."""
    price_step: float = 1.0
    """... and between two rounds ..."""
    price_share: float = 0.1
    """... at most this share of what is left."""


SCHEDULE = Schedule()

UNITS_PER_SECOND = 1000
"""A figure of :class:`Schedule` in seconds is this many work units in deterministic mode."""


@dataclass(frozen=True)
class UnitCosts:
    """Deterministic mode's work units per count (see the module docstring), calibrated once in CPU
    seconds and kept fixed: ``python benchmarks/toulbar2_work.py``, figures in
    docs/benchmarks/determinism.md, "toulbar2"."""

    solve: float = 20.0
    """Per toulbar2 child: the fork, toulbar2's set-up, the answer through the pipe."""
    entry: float = 4.0e-4
    """Per cost entry posted: pytoulbar2's lists, toulbar2's posting and preprocessing."""
    node: float = 1.35e-5
    """Per search node of the limited discrepancy search, times ``msd**2`` (K: about 0.8 ms a
    node)."""
    exact_node: float = 1.0e-5
    """Per search node of the exact mode's hybrid best-first search, times ``msd**2`` (B, G)."""
    nodes_per_backtrack: float = 0.05
    """Prior of the penalised solves' search nodes per backtrack, per variable (measured
    0.025-0.045 on K, N and S): the first solve's backtrack limit; later ones use the counts seen
    in the run."""
    prior_backtracks: int = 10
    """Weight of that prior, in backtracks, against the counts seen in the run."""
    exact_nodes_per_backtrack: float = 4.0
    """Search nodes per backtrack of the exact mode (measured 3-4 on B and G)."""
    price_edge: float = 3.4e-5
    """Per subgradient step and edge cost entry of the kernel model ..."""
    price_usage: float = 9.5e-5
    """... and per interval usage."""
    parent_entry: float = 6.0e-5
    """Per solve and network entry, in the engine's process: the scaled network, the incumbent's
    penalised cost, the plan's evaluation and broken nodes."""
    polish: float = 1.0e-4
    """Per polish and entry of the problem (strategies, edge entries, interval usages): the
    kernels' repair and descent."""
    setup: float = 2.5e-4
    """Once per run and entry of the problem: the tables, the kernels' model, the price model."""
    prepay_prior: float = 0.5
    """Before any solve has run, a solve is expected to use this share of its allowance
    (:meth:`WorkPace.prepay`)."""


COSTS = UnitCosts()

MIN_SOLVE_UNITS = SCHEDULE.min_solve * UNITS_PER_SECOND
"""No toulbar2 solve on fewer units than this (the timed engine's one-second floor)."""


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


def solve_units(entries: int, nodes: int, weight: float, node_units: float = COSTS.node) -> float:
    """Work units of one toulbar2 solve from its counts (see the module docstring)."""
    return COSTS.solve + COSTS.entry * entries + node_units * nodes * weight


def setup_units(problem: Problem) -> float:
    """Units of the engine's set-up on ``problem``."""
    return COSTS.setup * problem_entries(problem)


def polish_units(problem: Problem) -> float:
    """Units of one repair and polish by the kernels on ``problem``."""
    return COSTS.polish * problem_entries(problem)


class ChildLimits(NamedTuple):
    """What the next toulbar2 child gets (:func:`.child.run_in_child`)."""

    seconds: float
    """toulbar2's own time limit (0: none, the backtrack limit in ``extra`` decides)."""
    extra: tuple
    """More arguments for the child (deterministic mode: the backtrack limit)."""
    kill: float
    """Seconds after which the child is killed."""
    search: float
    """Seconds of its search (the stop signal's delay)."""
    cap: float
    """The ``time.monotonic()`` value no child outlives."""


@runtime_checkable
class Pace(Protocol):
    """The questions the engine asks its pace; :class:`TimedPace` and :class:`WorkPace` answer
    them, in seconds or in counts."""

    deterministic: bool
    """Deterministic mode (work units; the clock is only the safety net)."""
    timings: dict
    """What the pace measured, for the result's timings."""

    def exhausted(self) -> bool:
        """The budget is spent (the engine returns)."""
        ...

    def exact_limits(self) -> Optional[dict]:
        """Keyword limits of :func:`.exact.solve_exact`, or None when the exact mode does not fit."""
        ...

    def exact_units(self, work: dict) -> float:
        """What the exact mode's search cost, from its counts (``work``)."""
        ...

    def charge(self, units: float) -> bool:
        """Count ``units`` of work; False once the budget is spent."""
        ...

    def exchanged(self) -> Optional[np.ndarray]:
        """The portfolio's incumbent when this pace may read it after a charge, else None."""
        ...

    def round_best(self) -> Optional[np.ndarray]:
        """The portfolio's incumbent when this pace reads it at a round's start, else None."""
        ...

    def setup_done(self) -> None:
        """The set-up before the first round is over (a timed pace notes its seconds)."""
        ...

    def first_prices(self, prices: Any, target: Optional[np.ndarray]) -> None:
        """Subgradient steps before the first round, towards ``target``'s cost when given."""
        ...

    def more_prices(self, prices: Any, plan: Optional[np.ndarray]) -> bool:
        """Subgradient steps between two rounds; whether any ran (the penalty then changes)."""
        ...

    def another_round(self) -> bool:
        """Whether another round of solves may start."""
        ...

    def vector_start(self) -> None:
        """A solve's preparation begins (a timed pace counts the network's build against it)."""
        ...

    def child_limits(self, net: Any) -> Optional[ChildLimits]:
        """The next solve's limits for the penalised network ``net``, or None when it does not fit
        (the round and the search end)."""
        ...

    def solved(self, outcome: str, value: Any) -> float:
        """A solve ended (``outcome`` and its ``value``, see :func:`.child.run_in_child`): its
        counts noted; returns its work units (0 in a timed run)."""
        ...

    def next_round(self) -> None:
        """A round ended: the next one's solves get a longer limit."""
        ...

    def out_of_budget_note(self) -> Optional[str]:
        """Why the engine stopped before its budget was spent, when the safety net stopped it."""
        ...


class TimedPace:
    """The timed engine's decisions, by the wall clock (``stop``: a ``time.monotonic()`` value)."""

    deterministic = False

    def __init__(self, report: Reporter, stop: float, problem: Problem, first_limit: float,
                 limit_step: float, schedule: Schedule = SCHEDULE) -> None:
        self.report, self.stop, self.schedule = report, stop, schedule
        self.t0 = time.monotonic()
        self.limit = first_limit         # seconds of the next solve
        self.limit_step = limit_step
        self.build_guess = 0.5 + 1e-6 * (len(problem.edge_costs) + len(problem.node_costs))
        self.timings = {"setup_s": 0.0, "post_s": 0.0, "search_s": 0.0}
        self.left = 0.0                  # seconds left when the vector's solve began

    def exhausted(self) -> bool:
        return False

    def exact_limits(self) -> Optional[dict]:
        """``solve_exact``'s limits for its share of the time left, or None when under a second."""
        seconds = self.schedule.exact_share * (self.stop - time.monotonic())
        return None if seconds < self.schedule.min_solve else {"seconds": seconds}

    def exact_units(self, work: dict) -> float:
        return 0.0

    def charge(self, units: float) -> bool:
        return True

    def exchanged(self) -> Optional[np.ndarray]:
        return None

    def round_best(self) -> Optional[np.ndarray]:
        """The portfolio's best plan, read at every round's start."""
        try:
            return self.report.best()
        except Exception:  # noqa: BLE001 -- sharing is best effort
            return None

    def setup_done(self) -> None:
        self.timings["setup_s"] = time.monotonic() - self.t0

    def first_prices(self, prices: Any, target: Optional[np.ndarray]) -> None:
        s = self.schedule
        prices.share()   # the run's price board before and after: adopt what is better
        prices.advance(min(s.price_first, s.price_share * (self.stop - time.monotonic())), target)
        prices.share()

    def more_prices(self, prices: Any, plan: Optional[np.ndarray]) -> bool:
        """Subgradient steps between rounds when two seconds are left; whether it ran."""
        s = self.schedule
        if time.monotonic() >= self.stop - s.price_margin:
            return False
        prices.share()
        prices.advance(min(s.price_step, s.price_share * (self.stop - time.monotonic())), plan)
        prices.share()
        return True

    def another_round(self) -> bool:
        return time.monotonic() < self.stop - self.schedule.round_margin

    def vector_start(self) -> None:
        self.left = self.stop - time.monotonic()

    def child_limits(self, net: Any) -> Optional[ChildLimits]:
        """The next solve's seconds, or None when less than a second is left for it (toulbar2's
        timer starts after the posting: the kill waits for both)."""
        seconds = min(self.limit, self.left - self.build_guess - KILL_GRACE)
        if seconds < self.schedule.min_solve:
            return None
        return ChildLimits(seconds, (), seconds + self.build_guess + KILL_GRACE, seconds, self.stop)

    def solved(self, outcome: str, value: Any) -> float:
        if outcome == "ok" and isinstance(value, dict) and "build_s" in value:
            self.build_guess = max(0.5, 1.5 * float(value["build_s"]))
            self.timings["post_s"] += float(value["build_s"])
            self.timings["search_s"] += float(value["solve_s"])
        return 0.0

    def next_round(self) -> None:
        self.limit = min(self.schedule.limit_max, self.limit + self.limit_step)

    def out_of_budget_note(self) -> Optional[str]:
        return None


class WorkPace:
    """Deterministic mode's decisions, by counts (``report.work``, spent through a
    :class:`portfolio.work.Meter`); ``stop`` is only the safety net: past it the engine stops, and
    says so (the plan is then not the deterministic one)."""

    deterministic = True

    def __init__(self, report: Reporter, stop: float, problem: Problem, first_limit: float,
                 limit_step: float, schedule: Schedule = SCHEDULE,
                 costs: UnitCosts = COSTS) -> None:
        self.meter = Meter(report.work, report, stop)
        self.schedule, self.costs = schedule, costs
        self.limit = first_limit * UNITS_PER_SECOND   # units of the next solve
        self.limit_step = limit_step
        self.weight = node_weight(problem.strategy_counts)
        self.variables = problem.num_nodes
        self.nodes, self.backtracks = 0, 0   # toulbar2's counts so far (nodes per backtrack)
        self.prepaid = 0.0               # units the running solve paid before it started
        self.used_units = 0.0            # what the run's solves cost, and what they were allowed
        self.allowed_units = 0.0
        self.entries = 0                 # entries of the network being solved

    # ---------------------------------------------------------------------------------- counting
    @property
    def timings(self) -> dict:
        return {"units": round(self.meter.requested, 1)}

    def left(self) -> float:
        return self.meter.left()

    def exhausted(self) -> bool:
        return self.left() <= 0

    def charge(self, units: float) -> bool:
        """Spend ``units`` (less what the last solve prepaid); False once the budget is spent (the
        engine returns then). When an exchange point passed, :meth:`exchanged` reads the
        portfolio's incumbent of the last one, when the engine asks for it (the runner's
        ``best()`` waits for that point to be settled)."""
        units = float(max(0.0, units - self.prepaid))
        self.prepaid = 0.0
        return self.meter.spend(units)

    def prepay(self, allowance: float) -> None:
        """The expected cost of the solve about to run, spent before it runs: the points it passes
        are handed over at once (with the plans known before the solve), so the other backends go
        through them while toulbar2 solves instead of waiting for it; the solve's own charge is
        then only what it used beyond that. Expected: the allowance times the share of their
        allowances the run's earlier solves used (a prior of one half), all counts."""
        used = (self.costs.prepay_prior + self.used_units) / (1.0 + self.allowed_units)
        self.allowed_units += float(max(0.0, allowance))
        self.prepaid = float(max(0.0, allowance)) * min(1.0, used)
        self.meter.spend(self.prepaid)

    def exchanged(self) -> Optional[np.ndarray]:
        """The portfolio's incumbent of the last exchange point passed, once; else None."""
        return self.meter.fresh_best()

    def round_best(self) -> Optional[np.ndarray]:
        return None

    def setup_done(self) -> None:
        pass

    def _clock_ok(self) -> bool:
        return not self.meter.clock_out(KILL_GRACE)

    def out_of_budget_note(self) -> Optional[str]:
        if self.meter.safety_net:
            return "stopped by the wall-clock safety net before its work budget: not deterministic"
        return None

    # ---------------------------------------------------------------------------------- decisions
    def exact_limits(self) -> Optional[dict]:
        """The exact mode gets its share of the units left, as backtracks; None under the floor."""
        allowance = self.schedule.exact_share * self.left()
        if allowance < MIN_SOLVE_UNITS or not self._clock_ok():
            return None
        nodes = max(0.0, allowance - self.costs.solve) / (self.costs.exact_node * self.weight)
        return {"seconds": self.meter.seconds_left(),
                "backtracks": max(1, int(nodes / self.costs.exact_nodes_per_backtrack))}

    def exact_units(self, work: dict) -> float:
        if not work:
            return self.costs.solve
        return solve_units(work["entries"], work.get("nodes", 0), self.weight,
                           self.costs.exact_node)

    def _steps(self, prices: Any, units: float) -> int:
        return int(units // prices.step_units) if prices.step_units > 0 else 0

    def _advance(self, prices: Any, seconds: float, plan: Optional[np.ndarray]) -> None:
        """As many subgradient steps as ``seconds`` (as units), at most the schedule's share of
        what is left, buy; charged."""
        units = min(seconds * UNITS_PER_SECOND, self.schedule.price_share * self.left())
        steps = self._steps(prices, units)
        prices.advance_steps(steps, plan)
        self.charge(steps * prices.step_units)

    def first_prices(self, prices: Any, target: Optional[np.ndarray]) -> None:
        self._advance(prices, self.schedule.price_first, target)

    def more_prices(self, prices: Any, plan: Optional[np.ndarray]) -> bool:
        if self.left() < self.schedule.price_margin * UNITS_PER_SECOND:
            return False
        self._advance(prices, self.schedule.price_step, plan)
        return True

    def another_round(self) -> bool:
        return self.left() >= MIN_SOLVE_UNITS and self._clock_ok()

    def vector_start(self) -> None:
        pass

    def nodes_per_backtrack(self) -> float:
        prior = self.costs.nodes_per_backtrack * self.variables
        return max(1.0, (self.costs.prior_backtracks * prior + self.nodes)
                   / (self.costs.prior_backtracks + self.backtracks))

    def child_limits(self, net: Any) -> Optional[ChildLimits]:
        """The next solve's backtrack limit: what its unit allowance (the round's limit, at most
        what is left) buys after the posting, at the nodes per backtrack seen so far."""
        c = self.costs
        self.entries = network_entries(net)
        allowance = min(self.limit, self.left())
        if allowance < MIN_SOLVE_UNITS or not self._clock_ok():
            return None
        fixed = c.solve + (c.entry + c.parent_entry) * self.entries
        nodes = max(0.0, allowance - fixed) / (c.node * self.weight)
        backtracks = max(1, int(nodes / self.nodes_per_backtrack()))
        self.prepay(allowance)
        safety = max(0.0, self.meter.seconds_left())
        return ChildLimits(0, (backtracks,), safety, safety, self.meter.stop)

    def solved(self, outcome: str, value: Any) -> float:
        """The solve's counts noted; its units (a child that gave no counts: its posting only)."""
        counted = outcome == "ok" and isinstance(value, dict)
        if counted and "nodes" in value:
            self.nodes += int(value["nodes"])
            self.backtracks += max(1, int(value["backtracks"]))
        nodes = int(value.get("nodes", 0)) if counted else 0
        cost = solve_units(self.entries, nodes, self.weight) + self.costs.parent_entry * self.entries
        self.used_units += cost
        return cost

    def next_round(self) -> None:
        self.limit = min(self.schedule.limit_max * UNITS_PER_SECOND,
                         self.limit + self.limit_step * UNITS_PER_SECOND)
