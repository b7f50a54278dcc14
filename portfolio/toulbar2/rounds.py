"""The penalty search's rounds (techniques.md section 1): after its set-up, rounds of penalised
toulbar2 solves, one per weight vector, while the pace allows.

One round, in order (:meth:`PenaltyRounds.round`):

1. the portfolio's incumbent, when the pace reads it at a round's start (timed runs);
2. per weight vector: the penalised network (:mod:`.network`), its limits from the pace, the solve
   in a forked child (:mod:`.child`), the outcome harvested (:class:`RoundHarvest`: evaluated,
   offered, repaired and polished by the kernels, charged); the round ends early when the pace has
   no room for the next solve or the budget is spent, and the search with it;
3. the round's end, always: the weights' brackets updated from the plans (:mod:`.weights`), the
   next round's solve limit, subgradient steps on the prices (:mod:`.prices`) when the pace has
   room for them.

Whether the search goes on is what the methods return (``True``: go on), never a flag to look up.
Every decision of time or work is the pace's (:class:`.pace.Pace`), so the same code serves timed
runs and deterministic mode.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from portfolio.backend import Reporter
from portfolio.evaluate import evaluate
from portfolio.problem import Problem

from .child import run_in_child
from .network import build_network, build_tables
from .pace import Pace, polish_units, setup_units
from .scaling import ScalingError
from .settings import DEFAULT_RULE, RULES, Settings
from .weights import Bracketing, broken_nodes, first_weights, global_scale, spread

PRICE_SPREAD = 2.0
"""The first round's multipliers of the priced usage: ``1 / 2, 1, 2`` with three vectors."""

POLISH_MIN_FREE = 50
"""Below this many free nodes the kernels' polish is skipped (toulbar2 solves such networks)."""

PORTFOLIO_BEST = "portfolio best"
"""How a plan the portfolio handed over is offered."""


class NoNetwork(Exception):
    """The run's first penalised network cannot be scaled to toulbar2's integers: the engine
    cannot run on this problem (the backend answers ``UNSUPPORTED``)."""


class Polisher:
    """The kernels' memory repair and exact descent, when the kernels are compiled.

    A penalised solve often returns a plan that overloads memory at a few points but is cheaper
    than any feasible plan near it: the original discards it (it only feeds the weights); here the
    kernels' greedy repair (cheapest cost per unit of memory saved at the worst point, until it
    fits) makes it feasible and the descent polishes it, so every solve yields a candidate. On S
    at 5 s a solve at a fifth of the first weight was infeasible (2,149 broken nodes) and repaired
    to 0.932, against 0.864 for the best plan feasible as returned (docs/benchmarks/toulbar2.md)."""

    def __init__(self, problem: Problem, seed: int, notes: list) -> None:
        self.prep, self.repairer = None, None
        if int((problem.strategy_counts > 1).sum()) <= POLISH_MIN_FREE:
            return
        from portfolio.presolve.jitlock import compiled  # numba: in the worker

        if not compiled("search"):
            notes.append("polish skipped: kernels not compiled yet (`portfolio warmup`)")
            return
        from portfolio.kernels.engine import Repairer, prepare

        self.prep = prepare(problem)
        self.repairer = Repairer(self.prep, seed)

    def __call__(self, plan: np.ndarray) -> Optional[np.ndarray]:
        """``plan`` (any, feasible or not) repaired and polished, or None (no kernels, a
        forbidden choice, or the repair could not make it fit)."""
        if self.prep is None:
            return None
        r = self.prep.contract(plan)
        if r is None:
            return None
        sol = self.repairer.repair_and_polish(r)
        return None if sol is None else self.prep.expand(sol)


@dataclass
class RoundHarvest:
    """What one round's penalised solves bring in, one child's outcome at a time (:meth:`take`):
    each plan counted, evaluated exactly, offered, repaired and polished by the kernels, and
    remembered for the weights' bracketing (``solved_w``: the vectors that gave a plan,
    ``solved_b``: the nodes each plan broke); the work of each solve charged. Why an object: the
    round loop then reads rounds, vectors, outcomes, and what an outcome does is in one place."""

    problem: Problem
    best: Any            # portfolio.exact.BestPlan
    polisher: Polisher
    pace: Pace
    stats: dict
    notes: list
    solved_w: list = field(default_factory=list)
    solved_b: list = field(default_factory=list)

    def take(self, w: np.ndarray, outcome: str, value: Any) -> bool:
        """The child of weight vector ``w`` ended with ``outcome`` (``ok``, ``killed``,
        ``error``): whether the budget has room for more. The portfolio's best is read after the
        charge, as at every exchange point."""
        stats, pace = self.stats, self.pace
        stats["solves"] += 1
        units = pace.solved(outcome, value)
        if outcome == "killed":
            stats["killed"] += 1
        elif outcome != "ok":
            self.notes.append(f"toulbar2 child: {value}")
        else:
            units = self._plan(w, value["plan"], units)
        go_on = pace.charge(units)
        self.best.offer(pace.exchanged(), PORTFOLIO_BEST, own=False)
        return go_on

    def _plan(self, w: np.ndarray, plan: Any, units: float) -> float:
        """A solve's plan (None: nothing below the incumbent's penalised cost, so the incumbent
        stands for it): offered as it is when feasible, then repaired and polished and offered
        again; ``units`` plus the polish's."""
        problem, best, stats = self.problem, self.best, self.stats
        if plan is None and best.plan is not None:
            plan = best.plan
        if plan is None:
            return units
        plan = np.asarray(plan, dtype=np.int64)
        stats["plans"] += 1
        self.solved_w.append(w)
        self.solved_b.append(broken_nodes(problem, plan))
        feasible = evaluate(problem, plan).feasible
        stats["feasible"] += int(feasible)
        improved = feasible and best.offer(plan, "toulbar2", own=True)
        polished = self.polisher(plan)
        stats["polished"] += int(polished is not None)
        units += polish_units(problem) * (self.polisher.prep is not None)
        improved |= best.offer(polished, "toulbar2 + polish" if feasible
                               else "toulbar2 + repair + polish", own=True)
        stats["improved"] += int(improved)
        return units


def price_model(problem: Problem, polisher: Polisher, seed: int, notes: list,
                report: Optional[Reporter] = None, t0: Optional[float] = None) -> Optional[Any]:
    """The Lagrangian price model, or None (with a note) when the kernels are not ready."""
    if polisher.prep is None:
        notes.append("prices need the compiled kernels: per-node rule")
        return None
    from .prices import PriceModel

    try:
        return PriceModel(problem, polisher.prep, seed, report, t0)
    except ValueError as exc:
        notes.append(f"prices unavailable ({exc}): per-node rule")
        return None


class PenaltyRounds:
    """The penalty search after the exact mode (see the module): the set-up at construction (the
    tables, the kernels' polisher, the weight rule and its prices), then :meth:`run`. ``stats``
    and ``rule`` are what the result reports; ``start`` is the warm start as a plan of the problem
    (or None); ``child`` is the function each forked child runs."""

    def __init__(self, problem: Problem, seed: int, start: Optional[np.ndarray], best: Any,
                 pace: Pace, settings: Settings, rule: str, child: Callable, report: Reporter,
                 notes: list, t0: float) -> None:
        self.problem, self.seed, self.start, self.best, self.pace = problem, seed, start, best, pace
        self.settings, self.child, self.notes = settings, child, notes
        self.tables = build_tables(problem)
        self.polisher = Polisher(problem, seed, notes)
        self.rng = np.random.default_rng(seed)
        self.vectors = max(1, int(settings.vectors))
        self.rule = rule if rule in RULES else DEFAULT_RULE
        self.prices = None
        if self.rule == "prices":
            self.prices = price_model(problem, self.polisher, seed, notes, report, t0)
            self.rule = "nodes" if self.prices is None else self.rule
        self.stats = {"rounds": 0, "solves": 0, "killed": 0, "plans": 0, "feasible": 0,
                      "polished": 0, "improved": 0}
        self.bracket: Optional[Bracketing] = None
        self.weights: list = []

    def run(self) -> None:
        """The first round's preparation, then rounds while the pace allows one and the budget
        lasts. Raises :class:`NoNetwork` when the first network cannot be scaled."""
        go_on = self.set_up()
        self.pace.setup_done()
        while go_on and self.pace.another_round():
            go_on = self.round()
        if self.prices is not None:
            self.stats["price_steps"] = self.prices.steps
            if not self.pace.deterministic:
                self.stats["shared_prices"] = self.prices.link.summary()

    def set_up(self) -> bool:
        """The warm start repaired and polished, the set-up charged, the first prices and the
        first round's weights; whether the budget has room for a round."""
        problem, best, pace, start = self.problem, self.best, self.pace, self.start
        n, k = problem.num_nodes, self.vectors
        if start is not None:   # the warm start, repaired and polished by the kernels
            improved = best.offer(self.polisher(start), "warm start + polish", own=True)
            self.stats["improved"] += int(improved)
        go_on = pace.charge(setup_units(problem) + polish_units(problem) * (start is not None))
        best.offer(pace.exchanged(), PORTFOLIO_BEST, own=False)
        if self.prices is not None and go_on:
            # no target but a warm start: the start plan (least memory) is far too dear a target,
            # its steps overshoot (N: 0.55 against 0.96 with the primal target)
            pace.first_prices(self.prices, best.plan if start is not None else None)
            self.tables = dataclasses.replace(self.tables, excess=self.prices.penalty())
            first = spread(1.0, n, k, self.rng, PRICE_SPREAD)
            best.offer(pace.exchanged(), PORTFOLIO_BEST, own=False)
        else:
            first = first_weights(global_scale(self.tables), n, k, self.rng)
        self.bracket = Bracketing(first, self.rng, self.tables.breakable)
        # A warm start is toulbar2's initial solution in the first round (its upper bound and
        # every variable's first value), for the solves settings.warm_follow names.
        if start is not None and self.settings.warm_follow != "round":
            self.notes.append(f"warm start followed by: {self.settings.warm_follow}")
        self.weights = self.bracket.vectors()
        return go_on

    def round(self) -> bool:
        """One round: a solve per weight vector, then the round's end; whether the search goes
        on (False: the pace had no room for a solve, or the budget is spent; the round's end
        counts all the same)."""
        self.best.offer(self.pace.round_best(), PORTFOLIO_BEST, own=False)
        harvest = RoundHarvest(self.problem, self.best, self.polisher, self.pace, self.stats,
                               self.notes)
        go_on = self.solve_vectors(harvest)
        self.end_round(harvest)
        return go_on

    def solve_vectors(self, harvest: RoundHarvest) -> bool:
        """The round's weight vectors solved in order; False at the first that ends the search."""
        for index, w in enumerate(self.weights):
            if not self.solve_vector(index, w, harvest):
                return False
        return True

    def solve_vector(self, index: int, w: np.ndarray, harvest: RoundHarvest) -> bool:
        """Weight vector ``w``'s penalised network solved in a child and harvested; False when
        the pace has no room for the solve or the budget is spent after it. A vector whose
        network cannot be scaled is skipped, with a note (the run's first: :class:`NoNetwork`)."""
        pace, stats, best = self.pace, self.stats, self.best
        pace.vector_start()
        try:
            net = build_network(self.tables, w)
        except ScalingError as exc:
            if stats["solves"] == 0:
                raise NoNetwork(str(exc)) from exc
            self.notes.append(f"vector skipped: {exc}")
            return True
        ub_cost = None if best.plan is None else net.cost_of(best.plan)
        limits = pace.child_limits(net)
        if limits is None:
            return False
        follows = (self.start is not None and stats["rounds"] == 0
                   and self.settings.follows_warm(index, len(self.weights)))
        outcome, value = run_in_child(
            self.child, (net, self.seed + stats["solves"], limits.seconds,
                         None if ub_cost is None else ub_cost + 1,
                         self.start if follows else None) + limits.extra,
            limits.kill, search=limits.search, cap=limits.cap)
        return harvest.take(w, outcome, value)

    def end_round(self, harvest: RoundHarvest) -> None:
        """The brackets updated from the round's plans, the next round's weights and solve limit,
        and subgradient steps on the prices when the pace has room for them."""
        n, pace, best = self.problem.num_nodes, self.pace, self.best
        self.stats["rounds"] += int(bool(harvest.solved_w))
        self.bracket.update(np.array(harvest.solved_w).reshape(-1, n),
                            np.array(harvest.solved_b).reshape(-1, n))
        self.weights = self.bracket.vectors()
        pace.next_round()
        target = best.plan if self.stats["improved"] or self.start is not None else None
        if self.prices is not None and pace.more_prices(self.prices, target):
            self.tables = dataclasses.replace(self.tables, excess=self.prices.penalty())
            best.offer(pace.exchanged(), PORTFOLIO_BEST, own=False)
