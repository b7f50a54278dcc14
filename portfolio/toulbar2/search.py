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
  (:mod:`.child`: toulbar2 keeps global state, and its own CPU timer overruns on a busy machine);
  ``PARALLEL`` children at once (one by default; more take more than the worker's one core).
* **Every plan counts**: each returned plan is evaluated exactly; one that overloads memory is
  repaired by the kernels' greedy repair (the original only feeds it to the weights), then
  polished by the kernels' descent (:class:`portfolio.kernels.engine.Repairer`), and reported when
  it beats the best so far.
* **Incumbents**: the portfolio's best plan gives toulbar2 its upper bound (its penalised cost, plus
  one); toulbar2's plans reach the other backends through the runner. Following the incumbent's
  values in toulbar2's value ordering is available (``PORTFOLIO_TOULBAR2_START=1``) but off: it
  made plans worse (docs/benchmarks/toulbar2.md).
* **Warm start**: the first incumbent (every solve's upper bound), repaired and polished by the
  kernels at once, and toulbar2's initial solution in the first round: its values are what every
  variable tries first, so the first dives run along it and the later ones explore around it
  (``PORTFOLIO_TOULBAR2_WARM_FOLLOW=last``: only the round's last solve follows it; better at short
  limits, worse at the contest's, docs/benchmarks/quality.md).
* **Deterministic mode** (``report.work`` set, :mod:`portfolio.work`): the same steps, decided by
  counts instead of the clock (:mod:`.pace`): the exact mode and every penalised solve get a
  backtrack limit, the prices a number of subgradient steps, rounds go on while work units are
  left, the weights' random draws come from the seed as always, and the portfolio's incumbent is
  read only right after an exchange point. The deadline is only the safety net.

Rules and knobs for benchmarks: ``PORTFOLIO_TOULBAR2_RULE`` (``prices``, ``nodes``, ``global``),
``PORTFOLIO_TOULBAR2_EXACT=0``, ``PORTFOLIO_TOULBAR2_LIMIT`` (first solve's seconds),
``PORTFOLIO_TOULBAR2_LIMIT_STEP`` (its growth per round), ``PORTFOLIO_TOULBAR2_TAIL``
(:mod:`.tail`; every knob is read by :mod:`.knobs`),
``PORTFOLIO_TOULBAR2_PARALLEL`` (solves at once, ``PARALLEL``: with more than one, the backend's
worker holds more than the one core the runner counts for it), ``PORTFOLIO_TOULBAR2_WARM_FOLLOW``
(which first-round solves follow the warm start).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from portfolio.backend import Reporter, SolveResult, Status, time_left
from portfolio.evaluate import evaluate
from portfolio.problem import Problem

from .child import ChildJob, run_children, run_in_child
from .network import build_network, build_tables
from .pace import TimedPace, WorkPace, polish_units, setup_units
from .penalty import penalised_child
from .knobs import env_choice, env_number
from .scaling import ScalingError
from .tail import OwnBest, tail_due, tail_seconds, tail_walk
from .weights import Bracketing, broken_nodes, first_weights, global_scale, spread

VECTORS = 3
"""Weight vectors a round (K), solved ``PARALLEL`` at a time."""

PARALLEL = 1
"""Penalised solves of a round run at once (P; at most ``VECTORS``). 1: one after another, each
solve's upper bound from the plans of the ones before it, its search limit on the wall clock (the
engine since issue 21). Above 1 (issue 33): the round's vectors are posted together, each child's
search limit counts its own CPU seconds (so a solve sharing a core gets the CPU a solve alone
gets) with a wall-clock cap of P times the limit, and the plans are processed in vector order once
the round's children are done. The runner counts the backend's worker as holding one core: P
children take more than that, a larger share of the cores for toulbar2 than for the other nice-0
workers (intended: toulbar2's solves win on the memory-tight graphs). Deterministic mode always
runs one at a time."""

PARALLEL_ENV = "PORTFOLIO_TOULBAR2_PARALLEL"
"""Overrides ``PARALLEL`` (for benchmarks)."""

FIRST_LIMIT, LIMIT_STEP, LIMIT_MAX = 10.0, 2.0, 20.0
"""Wall-clock seconds per toulbar2 search: the first round's, the growth per round, the cap (the
original starts at 12 s). Measured on N at 60 s (docs/benchmarks/toulbar2.md, one run each on a busy
machine): first 2 s 0.878, 4 s 0.905, 10 s 0.948; a shorter solve is not worth its posting."""

RULES = ("prices", "nodes", "global")
"""Weight rules (issue 21): ``prices`` multiplies the Lagrangian priced usage (:mod:`.prices`) by
per-node bracketed weights; ``nodes`` is the original's per-node bracketing of plain usage above
the least; ``global`` brackets one weight for every node."""

DEFAULT_RULE = "prices"

RULE_ENV = "PORTFOLIO_TOULBAR2_RULE"
"""Environment variable that overrides the rule (for benchmarks: benchmarks/toulbar2_rules.py)."""

EXACT_SHARE = 0.5
"""Share of the time the exact mode may use on an eligible (small) instance before the penalty
search takes over (B and G are proven in under a second: docs/benchmarks/toulbar2.md)."""

EXACT_ENV = "PORTFOLIO_TOULBAR2_EXACT"
"""``0`` turns the exact mode off (for benchmarks and tests of the penalty search alone)."""

LIMIT_ENV = "PORTFOLIO_TOULBAR2_LIMIT"
"""Overrides ``FIRST_LIMIT`` (for benchmarks)."""

LIMIT_STEP_ENV = "PORTFOLIO_TOULBAR2_LIMIT_STEP"
"""Overrides ``LIMIT_STEP`` (for benchmarks; 0: every round's solves get the first limit)."""

START_ENV = "PORTFOLIO_TOULBAR2_START"
"""``1`` makes toulbar2 follow the incumbent's values (off by default: it made plans worse)."""

WARM_FOLLOW_ENV = "PORTFOLIO_TOULBAR2_WARM_FOLLOW"
"""Which solves of the first round follow the warm start's values: ``round`` (every one, the
default), ``last`` (the round's last; the others search freely) or ``none``. In a portfolio run the
warm start is the quick backends' plan. Measured on S, default portfolio, three seeds alternated
(issue 33, docs/benchmarks/quality.md): ``last`` far ahead at 60 s (mean 0.981 against 0.935),
``round`` ahead at the contest's 240 s (0.992 against 0.982; ``none`` 0.981 against 0.997)."""

WARM_FOLLOW_MODES = ("round", "last", "none")

PRICE_FIRST_S, PRICE_STEP_S, PRICE_SHARE = 5.0, 1.0, 0.1
"""Subgradient seconds before the first round and between rounds, at most this share of the time
left."""

PRICE_SPREAD = 2.0
"""The first round's multipliers of the priced usage: ``1 / 2, 1, 2`` with three vectors."""

POLISH_MIN_FREE = 50
"""Below this many free nodes the kernels' polish is skipped (toulbar2 solves such networks)."""


def _warm_follow(notes: list) -> str:
    """``$PORTFOLIO_TOULBAR2_WARM_FOLLOW`` when it names a mode (noted when not the default)."""
    mode = env_choice(WARM_FOLLOW_ENV, WARM_FOLLOW_MODES, WARM_FOLLOW_MODES[0], notes)
    if mode != WARM_FOLLOW_MODES[0]:
        notes.append(f"warm start followed by: {mode}")
    return mode


def _follows_warm(mode: str, index: int, vectors: int) -> bool:
    """Whether the first round's solve number ``index`` (of ``vectors``) follows the warm start."""
    return mode == "round" or (mode == "last" and index == vectors - 1)


def _parallel(default: int, vectors: int, notes: list) -> int:
    """``default`` or ``$PORTFOLIO_TOULBAR2_PARALLEL`` children at once, from 1 to ``vectors``."""
    raw = os.environ.get(PARALLEL_ENV)
    value = default
    if raw is not None:
        try:
            value = int(raw)
        except ValueError:
            notes.append(f"${PARALLEL_ENV}={raw!r} is not an integer: {default}")
    return max(1, min(int(value), vectors))


def _run_jobs(jobs: list, parallel: int) -> list:
    """The round's (or one vector's) children: one at a time through :func:`run_in_child` with
    wall-clock limits (P = 1, as always), else up to ``parallel`` at once with CPU-time limits
    stretched to at most ``parallel`` times on the wall clock (:func:`.child.run_children`)."""
    if parallel == 1:
        return [run_in_child(job.target, job.args, job.limit, search=job.search, cap=job.cap)
                for job in jobs]
    return run_children(jobs, parallel, cpu_limits=True, stretch=float(parallel))


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
    round loop of :meth:`PenaltySearch.solve` then reads rounds, batches, outcomes, and what an
    outcome does is in one place."""

    problem: Problem
    best: Any            # portfolio.exact.BestPlan
    polisher: Polisher
    pace: Any            # TimedPace or WorkPace
    stats: dict
    notes: list
    use_start: bool      # follow the incumbent once a plan improved ($PORTFOLIO_TOULBAR2_START)
    own: Optional[OwnBest] = None   # toulbar2's own best plan (the tail walk's start)
    solved_w: list = field(default_factory=list)
    solved_b: list = field(default_factory=list)

    def take(self, w: np.ndarray, outcome: str, value: Any) -> tuple[bool, bool]:
        """The child of weight vector ``w`` ended with ``outcome`` (``ok``, ``killed``, ``error``;
        a skipped one never comes here): (whether toulbar2 follows the incumbent from now on,
        whether the budget is spent). The portfolio's best is read after the charge, as at every
        exchange point."""
        stats, pace = self.stats, self.pace
        stats["solves"] += 1
        pace.solved(outcome, value)
        units = pace.solve_cost(outcome, value) if pace.deterministic else 0.0
        follow = False
        if outcome == "killed":
            stats["killed"] += 1
        elif outcome != "ok":
            self.notes.append(f"toulbar2 child: {value}")
        else:
            follow, units = self._plan(w, value["plan"], units)
        spent = not pace.charge(units)
        follow |= (self.best.offer(pace.exchanged(), "portfolio best", own=False)
                   and self.use_start)
        return follow, spent

    def _plan(self, w: np.ndarray, plan: Any, units: float) -> tuple[bool, float]:
        """A solve's plan (None: nothing below the incumbent's penalised cost, so the incumbent
        stands for it): offered as it is when feasible, then repaired and polished and offered
        again; (whether it improved and toulbar2 follows it, ``units`` plus the polish's)."""
        problem, best, stats = self.problem, self.best, self.stats
        if plan is None and best.plan is not None:
            plan = best.plan
        if plan is None:
            return False, units
        plan = np.asarray(plan, dtype=np.int64)
        stats["plans"] += 1
        self.solved_w.append(w)
        self.solved_b.append(broken_nodes(problem, plan))
        feasible = evaluate(problem, plan).feasible
        stats["feasible"] += int(feasible)
        improved = feasible and best.offer(plan, "toulbar2", own=True)
        polished = self.polisher(plan)
        stats["polished"] += int(polished is not None)
        if self.own is not None:
            self.own.offer(polished if polished is not None else plan if feasible else None)
        units += polish_units(problem) * (self.polisher.prep is not None)
        improved |= best.offer(polished, "toulbar2 + polish" if feasible
                               else "toulbar2 + repair + polish", own=True)
        stats["improved"] += int(improved)
        return bool(improved) and self.use_start, units


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
    solves until the deadline (see the module docstring). ``vectors``: weight vectors a round;
    ``rule``: the weight rule (``$PORTFOLIO_TOULBAR2_RULE`` overrides it); ``child``: the function
    each forked child runs (tests swap it for one that hangs); ``parallel``: solves at once in a
    timed run (``$PORTFOLIO_TOULBAR2_PARALLEL`` overrides it)."""

    vectors: int = VECTORS
    rule: str = DEFAULT_RULE
    child: Callable = penalised_child
    parallel: int = PARALLEL

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        """A backend's solve (the contract of :class:`portfolio.backend.Backend`): plans go out
        through ``report`` as they improve, the best one comes back, with the exact mode's bound
        or proof when it ran. With ``report.work`` set (deterministic mode) every decision counts
        work instead of reading the clock (:mod:`.pace`)."""
        from portfolio.exact import BestPlan

        t0 = time.monotonic()
        stop = t0 + time_left(deadline) - 0.3
        best = BestPlan(problem, report)
        notes: list[str] = []
        pace: Any
        first_limit = env_number(LIMIT_ENV, FIRST_LIMIT, notes, least=1.0, unit=" s")
        if getattr(report, "work", None) is not None:
            pace = WorkPace(report, stop, first_limit, problem)
        else:
            pace = TimedPace(report, stop, first_limit, problem)
        start = _starting_plan(problem, warm_start, best, report, pace)
        if problem.num_nodes == 0:
            plan = np.zeros(0, dtype=np.int64)
            if best.offer(plan, "empty instance", own=True) or best.plan is not None:
                return SolveResult(Status.FEASIBLE, best.plan, note="no nodes")
            return SolveResult(Status.NO_SOLUTION, note="the fixed usage alone exceeds the capacity")
        lower: Optional[int] = None
        exact = self._exact(problem, pace, seed, best, report, notes)
        if exact is not None:
            if isinstance(exact, SolveResult):
                return exact
            lower = exact
        if pace.exhausted():   # deterministic mode: the exact mode spent the whole budget
            return _result(best, lower, notes, {}, pace, t0)
        tables = build_tables(problem)
        polisher = Polisher(problem, seed, notes)
        tail = (0.0 if pace.deterministic or polisher.prep is None
                else tail_seconds(stop - time.monotonic(), notes))
        own = OwnBest(problem) if tail else None   # kept only for the walk
        step = env_number(LIMIT_STEP_ENV, LIMIT_STEP, notes, least=0.0, unit=" s")
        tail_on = False     # from the round tail_due() names, the solves end the tail early
        rng = np.random.default_rng(seed)
        n, k = problem.num_nodes, max(1, int(self.vectors))
        rule = env_choice(RULE_ENV, RULES, self.rule, notes)
        parallel = 1 if pace.deterministic else _parallel(self.parallel, k, notes)
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
        bracket = Bracketing(first, rng, tables.breakable, per_node=rule != "global")
        # Following the incumbent's values (toulbar2's value heuristic) is off by default: measured
        # at 60 s, three seeds (docs/benchmarks/toulbar2.md), medians N 0.947 with it against
        # 0.980 without, S 0.909 against 0.981; from the least-memory start plan it ruined N
        # (0.31). When turned on, it waits for a found plan (this backend's or the portfolio's).
        # A warm start is followed in the first round (toulbar2's initial solution: its upper
        # bound and every variable's first value), whatever this switch says, by every solve of
        # the round or as $PORTFOLIO_TOULBAR2_WARM_FOLLOW says.
        use_start = os.environ.get(START_ENV, "0") == "1"
        warm_follow = _warm_follow(notes) if start is not None else WARM_FOLLOW_MODES[0]
        follow = False
        weights = bracket.vectors()
        out_of_time = not ok
        if not pace.deterministic:
            pace.timings["setup_s"] = time.monotonic() - t0
        while not out_of_time:
            if tail and not tail_on and tail_due(stats["rounds"]):
                tail_on, pace.stop = True, pace.stop - tail   # the walk takes the last seconds
            if not pace.another_round():
                break
            follow |= best.offer(pace.round_best(), "portfolio best", own=False) and use_start
            harvest = RoundHarvest(problem, best, polisher, pace, stats, notes, use_start, own)
            batch = 1 if parallel == 1 else len(weights)   # P = 1: one vector after another
            for first in range(0, len(weights), batch):
                jobs, job_w = [], []
                for w in weights[first:first + batch]:
                    pace.vector_start()
                    try:
                        net = build_network(tables, w)
                    except ScalingError as exc:
                        if stats["solves"] == 0 and not jobs:
                            return SolveResult(Status.UNSUPPORTED, note=f"toulbar2 network: {exc}")
                        notes.append(f"vector skipped: {exc}")
                        continue
                    ub_cost = None if best.plan is None else net.cost_of(best.plan)
                    limits = pace.child_limits(net)
                    if limits is None:
                        out_of_time = True
                        break
                    (seconds, extra), kill, search, cap = limits
                    warm = stats["rounds"] == 0 and _follows_warm(warm_follow, first + len(jobs),
                                                                  len(weights))
                    along = best.plan if follow else (start if warm else None)
                    jobs.append(ChildJob(self.child, (net, seed + stats["solves"] + len(jobs),
                                                      seconds, None if ub_cost is None
                                                      else ub_cost + 1, along) + extra,
                                         kill, search, cap))
                    job_w.append(w)
                for w, (outcome, value) in zip(job_w, _run_jobs(jobs, parallel)):
                    if outcome == "skipped":   # its turn came too close to the deadline
                        continue
                    gained, spent = harvest.take(w, outcome, value)
                    follow |= gained
                    out_of_time |= spent
                    if out_of_time:
                        break
                if out_of_time:
                    break
            stats["rounds"] += int(bool(harvest.solved_w))
            bracket.update(np.array(harvest.solved_w).reshape(-1, n),
                           np.array(harvest.solved_b).reshape(-1, n))
            weights = bracket.vectors()
            pace.next_round(step, LIMIT_MAX)
            target = best.plan if stats["improved"] or start is not None else None
            if prices is not None and pace.more_prices(prices, PRICE_STEP_S, PRICE_SHARE, target):
                tables = dataclasses.replace(tables, excess=prices.penalty())
                follow |= best.offer(pace.exchanged(), "portfolio best", own=False) and use_start
        if tail_on:
            begin = best.plan if own is None or own.plan is None else own.plan
            notes.append(tail_walk(polisher.prep, begin, best, seed, stop, pace.round_best))
        if prices is not None:
            stats["price_steps"] = prices.steps
            if not pace.deterministic:
                stats["shared_prices"] = prices.link.summary()
        if parallel > 1:
            stats["parallel"] = parallel
        return _result(best, lower, [f"rule={rule}"] + notes, stats, pace, t0)

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
        if os.environ.get(EXACT_ENV, "1") == "0":
            return None
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
            # nothing cheaper than the incumbent: the incumbent is optimal
            return SolveResult(Status.OPTIMAL, best.plan, lower_bound=best.cost,
                               note=f"the exact mode proved the incumbent optimal ({out['note']})",
                               timings=out["timings"])
        if dual is not None:
            report.bound(int(dual), "toulbar2 exact mode")
        return None if dual is None else int(dual)


def _result(best: Any, lower: Optional[int], notes: list, stats: dict, pace: Any,
            t0: float) -> SolveResult:
    """The penalty search's answer: its best plan, the exact mode's bound, what it did."""
    safety = pace.out_of_budget_note()
    note = ", ".join(notes + ([safety] if safety else [])
                     + [f"{key}={v}" for key, v in stats.items()])
    timings = {k: round(v, 3) for k, v in pace.timings.items()}
    timings["total_s"] = round(time.monotonic() - t0, 3)
    if best.plan is None:
        return SolveResult(Status.NO_SOLUTION, lower_bound=lower,
                           note=note or "no feasible plan found", timings=timings)
    return SolveResult(Status.FEASIBLE, best.plan, lower_bound=lower, note=note, timings=timings)


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
