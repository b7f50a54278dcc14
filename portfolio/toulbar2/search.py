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
  one after another: the rounds are :mod:`.rounds`'.
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

Where things are: this module is the engine's entry (the start, the exact mode, the answer);
:mod:`.rounds` the penalty search's rounds; :mod:`.pace` every decision of time or work (the
:class:`~.pace.Pace` both modes implement, the schedule in seconds, the work units per count);
:mod:`.settings` the ``toulbar2`` backend's declared options (``plugins/toulbar2.py``), never
environment variables: they are recorded with every result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from portfolio.backend import NORMAL, PROOF, Reporter, SolveResult, Status, time_left
from portfolio.problem import Problem

from .pace import Pace, TimedPace, WorkPace
from .penalty import penalised_child
from .rounds import NoNetwork, PenaltyRounds
from .settings import DEFAULT_RULE, Settings


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
        pace: Pace = (WorkPace if report.work is not None else TimedPace)(
            report, stop, problem, settings.first_limit, settings.limit_step)
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
        rounds = PenaltyRounds(problem, seed, start, best, pace, settings, self.rule, self.child,
                               report, notes, t0)
        try:
            rounds.run()
        except NoNetwork as exc:
            return SolveResult(Status.UNSUPPORTED, note=f"toulbar2 network: {exc}")
        return _result(best, lower, [f"rule={rounds.rule}"] + notes, rounds.stats, pace, t0,
                       safety_net=pace.out_of_budget_note() is not None)

    def _exact(self, problem: Problem, pace: Pace, seed: int, best: Any, report: Reporter,
               notes: list) -> Optional[Any]:
        """The exact mode (:mod:`.exact`) on a small reduced instance, for up to
        :attr:`.pace.Schedule.exact_share` of the time (of the work units in deterministic
        mode), before the penalty
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
        limits = pace.exact_limits()
        if limits is None:
            return None
        # a proof search on a model that fits: the runner's adaptive rule keeps its share
        report.demand(PROOF, "exact mode")
        out = solve_exact(problem, seed=seed, ub=best.cost, start=best.plan, **limits)
        report.demand(NORMAL, "penalty rounds")
        notes.append(f"exact mode: {out['note']}")
        if out["plan"] is not None:
            best.offer(np.asarray(out["plan"], dtype=np.int64), "toulbar2 exact mode", own=True)
        if not pace.charge(pace.exact_units(out["work"])):   # timed: nothing to charge
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


def _result(best: Any, lower: Optional[int], notes: list, stats: dict, pace: Pace,
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
                   report: Reporter, pace: Pace) -> Optional[np.ndarray]:
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
