"""The toulbar2 engine's solve: the 2025 contest winner's penalty method (techniques.md section 1),
made better with what the project has.

* **Exact mode** first on small reduced instances (:mod:`.exact`: the true problem, one knapsack
  per time point that can overload, unscaled): a completed search ends the run with an optimality
  claim; its bound is reported otherwise (B and G are proven in under a second).
* **Penalty search** until the deadline: memory is not a constraint; each strategy pays a weight
  times its *priced* usage (:mod:`.prices`: the Lagrangian prices of the project's subgradient, so
  usage costs only where memory binds; the original charges all usage above the node's least), and
  toulbar2 (limited discrepancy search, :mod:`.penalty`) minimises the whole penalised network
  (:mod:`.network`, scaled by :mod:`.scaling`). Weights are bracketed per node (:mod:`.weights`)
  between values that did and did not overload memory inside the node's intervals, ``K`` vectors a
  round, each solved in its own forked child that is stopped at its limit and killed soon after
  (:mod:`.child`: toulbar2 keeps global state, and its own CPU timer overruns on a busy machine),
  one after another.
* **Every plan counts**: each returned plan is evaluated exactly; one that overloads memory is
  repaired by the kernels' greedy repair (the original only feeds it to the weights), then
  polished by the kernels' descent (:class:`portfolio.kernels.engine.Repairer`), and reported when
  it beats the best so far.
* **Incumbents**: the portfolio's best plan gives toulbar2 its upper bound (its penalised cost, plus
  one); toulbar2's plans reach the other backends through the runner. (Following the incumbent's
  values in toulbar2's value ordering made plans worse, N 0.947 against 0.980 and S 0.909 against
  0.981 at 60 s, docs/benchmarks/toulbar2.md, and was removed in issue 41.)
* **Warm start**: the first incumbent (every solve's upper bound), repaired and polished by the
  kernels at once, and toulbar2's initial solution in the first round (its values are what every
  variable tries first), by the solves that :attr:`Settings.warm_follow` names: ``round`` (every
  one), ``last`` (the round's last; the others search freely) or ``none``. Which is better depends
  on the budget (docs/benchmarks/options.md): the backend's option has a budget-aware default.
* **Deterministic mode** (``report.work`` set, :mod:`portfolio.work`): the same steps, decided by
  counts instead of the clock (:mod:`.pace`): the exact mode and every penalised solve get a
  backtrack limit, the prices a number of subgradient steps, rounds go on while work units are
  left, the weights' random draws come from the seed as always, and the portfolio's incumbent is
  read only right after an exchange point. The deadline is only the safety net.

Settings (:class:`Settings`) are the ``toulbar2`` backend's declared options (``plugins/toulbar2.py``),
never environment variables: they are recorded with every result.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from portfolio.backend import Reporter, SolveResult, Status, time_left
from portfolio.evaluate import evaluate
from portfolio.problem import Problem

from .child import run_in_child
from .network import build_network, build_tables
from .pace import TimedPace, WorkPace, polish_units, setup_units
from .penalty import penalised_child
from .scaling import ScalingError
from .weights import Bracketing, broken_nodes, first_weights, global_scale, spread

VECTORS = 3
"""Weight vectors a round (K), solved one after another: each solve's upper bound comes from the
plans of the ones before it. (Solving a round's vectors at once, P children on CPU-time limits,
measured worse at 60 s on S, 0.9523 against 0.9586, and N, 0.970 against 1.012, and was removed
in issue 41: docs/benchmarks/toulbar2.md, "Solves of a round at once".)"""

FIRST_LIMIT, LIMIT_STEP, LIMIT_MAX = 10.0, 2.0, 20.0
"""Wall-clock seconds per toulbar2 search: the first round's, the growth per round, the cap (the
original starts at 12 s). Measured on N at 60 s (docs/benchmarks/toulbar2.md, one run each on a busy
machine): first 2 s 0.878, 4 s 0.905, 10 s 0.948; a shorter solve is not worth its posting."""

RULES = ("prices", "nodes")
"""Weight rules (issue 21): ``prices`` multiplies the Lagrangian priced usage (:mod:`.prices`) by
per-node bracketed weights; ``nodes`` is the original's per-node bracketing of plain usage above
the least, the rule when prices cannot be had (the kernels not compiled)."""

DEFAULT_RULE = "prices"

EXACT_SHARE = 0.5
"""Share of the time the exact mode may use on an eligible (small) instance before the penalty
search takes over (B and G are proven in under a second: docs/benchmarks/toulbar2.md)."""

WARM_FOLLOW_MODES = ("round", "last", "none")
"""Which solves of the first round follow the warm start's values (see the module)."""


@dataclass(frozen=True)
class Settings:
    """The engine's settings, the ``toulbar2`` backend's options: which first-round solves follow
    the warm start, the first round's solve limit and its growth per round (wall-clock seconds),
    weight vectors a round, and whether the exact mode runs first on small instances."""

    warm_follow: str = "round"
    first_limit: float = FIRST_LIMIT
    limit_step: float = LIMIT_STEP
    vectors: int = VECTORS
    exact: bool = True

    @classmethod
    def of(cls, values: dict) -> "Settings":
        """The settings from a backend's resolved options (names it does not know are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


PRICE_FIRST_S, PRICE_STEP_S, PRICE_SHARE = 5.0, 1.0, 0.1
"""Subgradient seconds before the first round and between rounds, at most this share of the time
left."""

PRICE_SPREAD = 2.0
"""The first round's multipliers of the priced usage: ``1 / 2, 1, 2`` with three vectors."""

POLISH_MIN_FREE = 50
"""Below this many free nodes the kernels' polish is skipped (toulbar2 solves such networks)."""


def _follows_warm(mode: str, index: int, vectors: int) -> bool:
    """Whether the first round's solve number ``index`` (of ``vectors``) follows the warm start."""
    return mode == "round" or (mode == "last" and index == vectors - 1)


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
    round loop of :meth:`PenaltySearch.solve` then reads rounds, vectors, outcomes, and what an
    outcome does is in one place."""

    problem: Problem
    best: Any            # portfolio.exact.BestPlan
    polisher: Polisher
    pace: Any            # TimedPace or WorkPace
    stats: dict
    notes: list
    solved_w: list = field(default_factory=list)
    solved_b: list = field(default_factory=list)

    def take(self, w: np.ndarray, outcome: str, value: Any) -> bool:
        """The child of weight vector ``w`` ended with ``outcome`` (``ok``, ``killed``,
        ``error``): whether the budget is spent. The portfolio's best is read after the charge,
        as at every exchange point."""
        stats, pace = self.stats, self.pace
        stats["solves"] += 1
        pace.solved(outcome, value)
        units = pace.solve_cost(outcome, value) if pace.deterministic else 0.0
        if outcome == "killed":
            stats["killed"] += 1
        elif outcome != "ok":
            self.notes.append(f"toulbar2 child: {value}")
        else:
            units = self._plan(w, value["plan"], units)
        spent = not pace.charge(units)
        self.best.offer(pace.exchanged(), "portfolio best", own=False)
        return spent

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


def _price_model(problem: Problem, polisher: Polisher, seed: int, notes: list,
                 report: Reporter, t0: float) -> Optional[Any]:
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


@dataclass
class PenaltySearch:
    """The engine as a backend runs it: exact mode on small instances, then rounds of penalised
    solves until the deadline (see the module docstring). ``settings``: the backend's options;
    ``rule``: the weight rule (``nodes`` only where prices cannot be had, and in tests);
    ``child``: the function each forked child runs (tests swap it for one that hangs)."""

    settings: Settings = field(default_factory=Settings)
    rule: str = DEFAULT_RULE
    child: Callable = penalised_child

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        """A backend's solve (the contract of :class:`portfolio.backend.Backend`): plans go out
        through ``report`` as they improve, the best one comes back, with the exact mode's bound
        or proof when it ran. With ``report.work`` set (deterministic mode) every decision counts
        work instead of reading the clock (:mod:`.pace`)."""
        from portfolio.exact import BestPlan

        settings = self.settings
        t0 = time.monotonic()
        stop = t0 + time_left(deadline) - 0.3
        best = BestPlan(problem, report)
        notes: list[str] = []
        pace: Any
        if report.work is not None:
            pace = WorkPace(report, stop, settings.first_limit, problem)
        else:
            pace = TimedPace(report, stop, settings.first_limit, problem)
        start = _starting_plan(problem, warm_start, best, report, pace)
        if problem.num_nodes == 0:
            plan = np.zeros(0, dtype=np.int64)
            if best.offer(plan, "empty instance", own=True) or best.plan is not None:
                return SolveResult(Status.FEASIBLE, best.plan, note="no nodes")
            return SolveResult(Status.NO_SOLUTION, note="the fixed usage alone exceeds the capacity")
        lower: Optional[int] = None
        exact = self._exact(problem, pace, seed, best, report, notes) if settings.exact else None
        if exact is not None:
            if isinstance(exact, SolveResult):
                return exact
            lower = exact
        if pace.exhausted():   # deterministic mode: the exact mode spent the whole budget
            return _result(best, lower, notes, {}, pace, t0)
        tables = build_tables(problem)
        polisher = Polisher(problem, seed, notes)
        rng = np.random.default_rng(seed)
        n, k = problem.num_nodes, max(1, int(settings.vectors))
        rule = self.rule if self.rule in RULES else DEFAULT_RULE
        prices = None
        if rule == "prices":
            prices = _price_model(problem, polisher, seed, notes, report, t0)
            rule = "nodes" if prices is None else rule
        stats = {"rounds": 0, "solves": 0, "killed": 0, "plans": 0, "feasible": 0, "polished": 0,
                 "improved": 0}
        if start is not None:   # the warm start, repaired and polished by the kernels
            improved = best.offer(polisher(start), "warm start + polish", own=True)
            stats["improved"] += int(improved)
        ok = pace.charge(setup_units(problem) + polish_units(problem) * (start is not None))
        best.offer(pace.exchanged(), "portfolio best", own=False)
        if prices is not None and ok:
            # no target but a warm start: the start plan (least memory) is far too dear a target,
            # its steps overshoot (N: 0.55 against 0.96 with the primal target)
            pace.first_prices(prices, PRICE_FIRST_S, PRICE_SHARE,
                              best.plan if start is not None else None)
            tables = dataclasses.replace(tables, excess=prices.penalty())
            first = spread(1.0, n, k, rng, PRICE_SPREAD)
            best.offer(pace.exchanged(), "portfolio best", own=False)
        else:
            first = first_weights(global_scale(tables), n, k, rng)
        bracket = Bracketing(first, rng, tables.breakable)
        # A warm start is toulbar2's initial solution in the first round (its upper bound and
        # every variable's first value), for the solves settings.warm_follow names.
        follow = settings.warm_follow if start is not None else "none"
        if start is not None and follow != "round":
            notes.append(f"warm start followed by: {follow}")
        weights = bracket.vectors()
        out_of_time = not ok
        if not pace.deterministic:
            pace.timings["setup_s"] = time.monotonic() - t0
        while not out_of_time and pace.another_round():
            best.offer(pace.round_best(), "portfolio best", own=False)
            harvest = RoundHarvest(problem, best, polisher, pace, stats, notes)
            for index, w in enumerate(weights):
                pace.vector_start()
                try:
                    net = build_network(tables, w)
                except ScalingError as exc:
                    if stats["solves"] == 0:
                        return SolveResult(Status.UNSUPPORTED, note=f"toulbar2 network: {exc}")
                    notes.append(f"vector skipped: {exc}")
                    continue
                ub_cost = None if best.plan is None else net.cost_of(best.plan)
                limits = pace.child_limits(net)
                if limits is None:
                    out_of_time = True
                    break
                (seconds, extra), kill, search, cap = limits
                warm = stats["rounds"] == 0 and _follows_warm(follow, index, len(weights))
                outcome, value = run_in_child(
                    self.child, (net, seed + stats["solves"], seconds,
                                 None if ub_cost is None else ub_cost + 1,
                                 start if warm else None) + extra,
                    kill, search=search, cap=cap)
                if harvest.take(w, outcome, value):
                    out_of_time = True
                    break
            stats["rounds"] += int(bool(harvest.solved_w))
            bracket.update(np.array(harvest.solved_w).reshape(-1, n),
                           np.array(harvest.solved_b).reshape(-1, n))
            weights = bracket.vectors()
            pace.next_round(settings.limit_step, LIMIT_MAX)
            target = best.plan if stats["improved"] or start is not None else None
            if prices is not None and pace.more_prices(prices, PRICE_STEP_S, PRICE_SHARE, target):
                tables = dataclasses.replace(tables, excess=prices.penalty())
                best.offer(pace.exchanged(), "portfolio best", own=False)
        if prices is not None:
            stats["price_steps"] = prices.steps
            if not pace.deterministic:
                stats["shared_prices"] = prices.link.summary()
        return _result(best, lower, [f"rule={rule}"] + notes, stats, pace, t0,
                       safety_net=pace.deterministic and pace.out_of_budget_note() is not None)

    def _exact(self, problem: Problem, pace: Any, seed: int, best: Any, report: Reporter,
               notes: list) -> Optional[Any]:
        """The exact mode (:mod:`.exact`) on a small reduced instance, for up to
        ``EXACT_SHARE`` of the time (of the work units in deterministic mode), before the penalty
        search: a proven answer ends the run (:class:`SolveResult`), else its lower bound (an int)
        or None is returned and the penalty search goes on from its plan. Not eligible (size,
        cost span): None, with the reason. A warm start is the incumbent here: toulbar2's upper
        bound, and the answer when nothing better is found (its values as toulbar2's first choices
        changed nothing measurable with a good start: B, G and a generated instance each needed
        the same search nodes within one, docs/benchmarks/determinism.md)."""
        from .exact import exact_eligible, solve_exact

        ok, why = exact_eligible(problem)
        if not ok:
            notes.append(f"exact mode off ({why})")
            return None
        limits = pace.exact_limits(EXACT_SHARE)
        if limits is None:
            return None
        out = solve_exact(problem, seed=seed, ub=best.cost, start=best.plan, **limits)
        notes.append(f"exact mode: {out['note']}")
        if out["plan"] is not None:
            best.offer(np.asarray(out["plan"], dtype=np.int64), "toulbar2 exact mode", own=True)
        if pace.deterministic and not pace.charge(pace.exact_units(out["work"])):
            notes.append("work budget spent in the exact mode")
        best.offer(pace.exchanged(), "portfolio best", own=False)
        dual = out["dual"]
        if out["proven"] and best.plan is not None and best.cost == out["cost"]:
            return SolveResult(Status.OPTIMAL, best.plan, lower_bound=best.cost,
                               note=f"proven optimal by the exact mode ({out['note']})",
                               timings=out["timings"])
        if out["infeasible"] and best.plan is None:
            return SolveResult(Status.INFEASIBLE_PROVEN,
                               note=f"the exact mode proved it ({out['note']})",
                               timings=out["timings"])
        if dual is not None and best.cost is not None and dual > best.cost:
            # ``dual`` bounds every plan of the network from below, and the incumbent is a
            # verified plan of the problem at ``best.cost``: a bound above it means the network
            # and the problem disagree (no plan at the incumbent's own cost), never a proof
            notes.append(f"exact mode disagrees with the problem: its bound {dual} is above the "
                         f"cost {best.cost} of a verified plan; no claim")
            return None
        if dual is not None:
            report.bound(int(dual), "toulbar2 exact mode")
        return None if dual is None else int(dual)


def _result(best: Any, lower: Optional[int], notes: list, stats: dict, pace: Any,
            t0: float, safety_net: bool = False) -> SolveResult:
    """The penalty search's answer: its best plan, the exact mode's bound, what it did
    (``safety_net``: deterministic mode stopped by the clock before its work was done)."""
    safety = pace.out_of_budget_note()
    note = ", ".join(notes + ([safety] if safety else [])
                     + [f"{key}={v}" for key, v in stats.items()])
    timings = {k: round(v, 3) for k, v in pace.timings.items()}
    timings["total_s"] = round(time.monotonic() - t0, 3)
    if best.plan is None:
        return SolveResult(Status.NO_SOLUTION, lower_bound=lower,
                           note=note or "no feasible plan found", timings=timings,
                           safety_net=safety_net)
    return SolveResult(Status.FEASIBLE, best.plan, lower_bound=lower, note=note, timings=timings,
                       safety_net=safety_net)


def _starting_plan(problem: Problem, warm_start: Optional[np.ndarray], best: Any,
                   report: Reporter, pace: Any) -> Optional[np.ndarray]:
    """Offer every cheap starting point, as the exact backends do
    (:func:`portfolio.exact.driver.starting_plan`): the warm start, the portfolio's best (in a
    timed run only: deterministic mode reads it at exchange points only), the least-memory plan
    avoiding forbidden entries. Returns the warm start when it is a plan of this problem (one
    allowed strategy index per node; it may overload memory): toulbar2 starts from it."""
    from portfolio.exact.driver import starting_plan

    starting_plan(problem, warm_start, best, report if not pace.deterministic else _NoBest())
    if warm_start is None:
        return None
    plan = np.asarray(warm_start)
    if plan.shape != (problem.num_nodes,) or not np.issubdtype(plan.dtype, np.integer):
        return None
    plan = plan.astype(np.int64)
    if ((plan < 0) | (plan >= problem.strategy_counts)).any():
        return None
    return plan


class _NoBest:
    """A reporter view whose ``best`` is None (deterministic mode's start reads no incumbent)."""

    @staticmethod
    def best() -> None:
        return None
