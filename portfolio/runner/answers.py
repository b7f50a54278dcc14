"""The run's answer: every plan verified before it counts, claims checked against verified plans,
the runner's own proofs (least-memory reserve, memory-only infeasibility, presolve left nothing to
decide), and the :class:`PortfolioResult` assembled at the end. No process code here."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..backend import Status, engine_versions
from ..evaluate import Evaluation, evaluate, min_usage_profile
from ..exhaustive import enumerate_optimum
from . import validate
from .claims import INFEASIBLE, LOWER_BOUND, OPTIMAL, Claim
from .fallback import safe_plan
from .presolving import summary
from .result import BackendRun, BoundPoint, Incumbent, PortfolioResult
from .warmstart import starts_cold
from .worker import PlanMapping

if TYPE_CHECKING:
    from .supervise import _Worker

FALLBACK = "fallback"
"""The winner's name when the answer is the runner's own least-memory plan."""

ENUMERATION = "enumeration"
"""The winner's name when the runner scored every plan of a tiny instance."""


class Answers:
    """Mixin of :class:`.core.Portfolio`: verification, claims and the final result.

    Uses ``problem``, ``runs``, ``claims``, ``best``/``best_eval``/``best_backend``, ``reserve``,
    ``shared`` (the best plan published to workers), ``warm``, ``found`` and ``shared_cold`` (a
    re-solve's cold part: its best plan and the board it reads), ``options`` and ``now()``."""

    def _verify(self, plan: object) -> tuple[Optional[str], Optional[Evaluation]]:
        """Evaluate a plan on the original problem: (why refused or None, its evaluation)."""
        try:
            ev = evaluate(self.problem, plan)
        except Exception as exc:  # SolutionError, or a plan no evaluator could read
            return f"invalid plan: {validate.note_text(str(exc))[:120]}", None
        if not ev.feasible:
            return (f"infeasible plan reported as feasible: usage {ev.peak_usage:,} > limit "
                    f"{ev.usage_limit:,} at t={ev.first_violation_time}"), ev
        return None, ev

    def _record(self, run: BackendRun, sol: np.ndarray, ev: Evaluation, note: str) -> None:
        """A verified plan in its backend's row (best cost, incumbents over time)."""
        if run.best_cost is None or ev.cost < run.best_cost:
            run.best_cost, run.best_solution, run.time_to_best = ev.cost, sol, round(self.now(), 4)
            run.incumbents.append(Incumbent(round(self.now(), 4), ev.cost, run.name, note))

    def _consider(self, run: Optional[BackendRun], plan: object, note: str
                  ) -> tuple[Optional[str], Optional[Evaluation]]:
        """Verify a plan; keep it if it is the best. (why refused or None, its evaluation). In
        deterministic mode only the exchange points publish the incumbent (:mod:`.exchange`)."""
        refused, ev = self._verify(plan)
        if refused:
            return refused, ev
        sol = np.array(plan, dtype=np.int64)
        if run is not None:
            self._record(run, sol, ev, note)
            if self.warm is not None and starts_cold(run.backend or run.name, self.options.cold) \
                    and (self.found is None or ev.cost < self.found[1].cost):
                self.found = (sol, ev)   # a re-solve's cold part: its own best, its own board
                if self.shared_cold is not None:
                    self.shared_cold.publish(sol)
        if self.best_eval is None or ev.cost < self.best_eval.cost:
            self.best, self.best_eval = sol, ev
            self.best_backend = None if run is None else run.name
            if not self.options.deterministic:
                self.shared.publish(sol)
        return None, ev

    def offer(self, run: Optional[BackendRun], plan: object, note: str) -> Optional[str]:
        """A plan from outside this run's workers (a cluster shard, a caller): verified and kept
        like any backend's, credited to ``run`` (a row the caller added to ``runs``) or to
        ``note`` when ``run`` is None. Returns why it was refused, or None."""
        refused, _ = self._consider(run, plan, note)
        if refused is None and run is None and self.best is not None and \
                self.best_backend is None and self.best_eval is not None:
            self.best_backend = note
        return refused

    def outside_bound(self, run: BackendRun, value: object, note: str, exact: bool) -> None:
        """A lower bound from outside (a shard's standing bound), claimed like a backend's."""
        self._in_run_bound(run, value, note, exact)

    def outside_optimal(self, run: BackendRun, cost: int, exact: bool) -> None:
        """An outside claim that ``cost`` is optimal; it stands only while no verified plan is
        cheaper (the claims book checks it like any backend's)."""
        run.claimed_optimal = True
        self._claim(run, OPTIMAL, int(cost), exact)

    def outside_reject(self, run: BackendRun, reason: str) -> None:
        """Outside work sent something false: its row says so; its verified plans stay."""
        self._reject(run, reason)

    def _verified_best(self) -> tuple[Optional[int], Optional[str]]:
        """The cheapest verified cost, counting the runner's reserve plan, and its source."""
        cost, source = (None, None) if self.best_eval is None else (self.best_eval.cost, self.best_backend)
        if self.reserve is not None and (cost is None or self.reserve[1].cost < cost):
            cost, source = self.reserve[1].cost, FALLBACK
        return cost, source

    def incumbent(self) -> Optional[tuple[int, np.ndarray, str]]:
        """The cheapest verified plan so far, the reserve included: (cost, plan on the original
        problem, its source), or None. For callers that want plans as they come (``on_update``)."""
        cost, source = self._verified_best()
        if cost is None:
            return None
        plan = self.reserve[0] if source == FALLBACK else self.best
        return cost, plan, source or "runner"

    def _claim(self, run: Optional[BackendRun], kind: str, value: Optional[int], exact: bool,
               source: str = "") -> None:
        self.claims.add(Claim(kind, run.name if run else source, run.backend if run else "runner",
                              value, round(self.now(), 4), exact))
        if run is not None:
            run.claims.append(self.claims.claims[-1])
        self._check_claims()

    def _check_claims(self) -> None:
        """Claims a verified plan contradicts lose their standing; their sources keep their plans."""
        cost, source = self._verified_best()
        for claim in self.claims.check(cost, source):
            run = self.runs.get(claim.source)
            if run is None:
                continue
            earlier = run.note
            if earlier.startswith("false claim"):
                earlier = earlier.split(" || ", 1)[1] if " || " in earlier else ""
            false = ", ".join(c.what() for c in run.claims if c.false)
            run.note = f"false claim: {false}; {claim.why_false}" + (f" || {earlier}" if earlier else "")
            if run.status is Status.OPTIMAL:
                run.status = Status.FEASIBLE if run.best_cost is not None else Status.NO_SOLUTION
            elif run.status is Status.INFEASIBLE_PROVEN:
                run.status = Status.NO_SOLUTION
            run.claimed_optimal = False
            standing = [c.value for c in run.claims if not c.false and c.value is not None]
            run.lower_bound = max(standing) if standing else None

    def _in_run_bound(self, run: BackendRun, raw: object, note: str, exact: bool) -> None:
        """A lower bound sent during the run: recorded with its time (gap over time) and claimed
        like a final one. Only improvements count; the claim it improves on is implied by it and
        leaves the book (so a backend whose latest bound is contradicted keeps no bound). A
        malformed value is dropped and named in the row, as in a final result."""
        if run.disqualified:
            return
        try:
            value = validate.bound_value(raw)
        except validate.MessageError as exc:
            run.note = f"dropped: {exc}"
            return
        if value is None or (run.bounds and value <= run.bounds[-1].value):
            return
        implied = [c for c in run.claims if c.kind == LOWER_BOUND and not c.false and c.value < value]
        run.claims = [c for c in run.claims if c not in implied]
        self.claims.claims = [c for c in self.claims.claims if all(c is not i for i in implied)]
        run.bounds.append(BoundPoint(round(self.now(), 4), value, run.name, note))
        run.lower_bound = max(value, run.lower_bound if run.lower_bound is not None else value)
        self._claim(run, LOWER_BOUND, value, exact)

    def _reject(self, run: BackendRun, reason: str) -> None:
        """The backend sent something false or malformed: its row says so. Plans it reported
        before were verified and stay eligible."""
        run.status, run.note = Status.REJECTED, reason
        run.finished = run.finished if run.finished is not None else round(self.now(), 4)

    # ---------------------------------------------------------------- the runner's own proofs
    def _own_checks(self) -> None:
        """The least-memory reserve plan, the memory-only infeasibility proof and, on a tiny
        instance, every plan scored (no compilation in any of them)."""
        plain = np.asarray(self.problem.min_usage_strategies, dtype=np.int64)
        ev = evaluate(self.problem, plain)
        if self.options.exhaustive:
            self._enumerate()
        if ev.feasible:
            self.reserve = (plain, ev)
            return
        floor = min_usage_profile(self.problem)
        capacity, limited = self.problem.capacity.at(self.problem.time_points)
        over = np.flatnonzero(limited & (floor > capacity))
        if len(over):
            t = int(self.problem.time_points[over[0]])
            self._claim(None, INFEASIBLE, None, True,
                        f"memory check (least usage exceeds the capacity at t={t})")

    def _enumerate(self) -> None:
        """A tiny instance is settled by scoring every plan (:mod:`portfolio.exhaustive`): its optimum
        is verified like any plan and proven by the runner, so the run ends before any backend
        starts. Only on request (``exhaustive``): a bench row stays its backends' own."""
        found = enumerate_optimum(self.problem)
        if found is None:
            return
        source = f"enumeration (every one of the {found.plans:,} plans scored)"
        if found.plan is not None:
            refused, ev = self._consider(None, found.plan, "enumeration")
            if refused is None:
                self.best_backend = ENUMERATION
                self._claim(None, OPTIMAL, ev.cost, True, source)
        elif found.feasible_plans == 0:
            self._claim(None, INFEASIBLE, None, True, source)

    def _safe_reserve(self) -> None:
        """Once, right after the first workers are forked: make the reserve forbidden-free with the
        fallback's propagation (plain numpy, 0.2-0.5 s on the contest instances), in this process.

        Why not leave it to ``minusage``: at T = 5 its worker can start too late to finish (A's
        answer was the plain least-memory plan with 6,671 forbidden choices), and a run without
        ``minusage`` would never get it."""
        self.reserve_refined = True
        if not self.options.fallback or self.reserve is None or not self.reserve[1].has_forbidden:
            return
        if self.options.deterministic:  # no clock: every pass to its end (bounded by its waves)
            seconds = math.inf
        else:
            left = self.soft_deadline - time.monotonic()
            if left < 0.5:
                return
            seconds = min(1.0, left / 3)
        plan = safe_plan(self.problem, seconds)
        ev = evaluate(self.problem, plan)
        if ev.feasible and ev.cost < self.reserve[1].cost:
            self.reserve = (plan, ev)

    def _use_presolved(self, pre: PlanMapping, seconds: Optional[float]) -> None:
        self.presolve_info = summary(pre, seconds or 0.0) if seconds is not None else summary(pre, 0.0)
        if pre.infeasible is not None or pre.reduced is None:
            # Presolve treats forbidden entries as hard: no forbidden-free plan. Not a proof that no
            # plan exists; every backend keeps the original problem.
            self.presolve_info["note"] = "no forbidden-free plan; backends get the original problem"
            return
        self.presolved = pre
        red = pre.reduced
        if np.all(red.strategy_counts == 1):
            refused, ev = self._consider(None, pre.expand(np.zeros(red.num_nodes, dtype=np.int64)),
                                         "presolve")
            if refused is None:
                self.best_backend = "presolve"
                self._claim(None, OPTIMAL, ev.cost, True, "presolve (nothing left to decide)")


    def _accept_result(self, worker: "_Worker", result: validate.Result) -> None:
        run = worker.run
        run.finished = round(self.now(), 4)
        notes = ([result.note] if result.note else ([run.note] if run.note else [])) + [
            f"dropped: {p}" for p in result.problems]
        run.note = "; ".join(notes)
        ev = None
        if result.solution is not None:
            refused, ev = self._consider(run, result.solution, "final")
            if refused:
                self._reject(run, refused)
                return
        run.status = result.status
        run.safety_net = result.safety_net
        exact = bool(worker.backend.capabilities.exact)
        if result.status is Status.OPTIMAL:
            run.claimed_optimal, run.lower_bound = True, ev.cost
            self._claim(run, OPTIMAL, ev.cost, exact)
        if result.lower_bound is not None:
            run.lower_bound = max(result.lower_bound, run.lower_bound or result.lower_bound)
            self._claim(run, LOWER_BOUND, result.lower_bound, exact)
        if result.status is Status.INFEASIBLE_PROVEN:
            self._claim(run, INFEASIBLE, None, exact)

    def _result(self) -> PortfolioResult:
        for run in self.runs.values():
            if run.status is Status.PENDING:
                why = run.note or "the time was up before it could start"
                run.note = f"never started: {why}"
        self._check_claims()
        deterministic = self._deterministic_summary() if self.options.deterministic else None
        solution, evaluation, winner = self.best, self.best_eval, self.best_backend
        if self.options.fallback and self.reserve is not None and (
                evaluation is None or self.reserve[1].cost < evaluation.cost):
            solution, evaluation, winner = self.reserve[0], self.reserve[1], FALLBACK
        cost = None if evaluation is None else evaluation.cost
        winner_backend = self.runs[winner].backend if winner in self.runs else "runner"
        proof = self.claims.verdict(cost, winner, winner_backend)
        infeasible_by = None
        if solution is None:
            standing = [c for c in self.claims.infeasible_claims() if c.exact]
            infeasible_by = standing[0].source if standing else None
        return PortfolioResult(
            problem=self.problem.name, time_limit=self.options.time_limit, runs=self.runs,
            solution=solution, evaluation=evaluation, winner=winner, elapsed=self.now(),
            infeasible_proven_by=infeasible_by, proof=proof, claims=list(self.claims.claims),
            stopped_early=self.stopped_early, presolve=self.presolve_info, interrupted=self.interrupted,
            schedule={"policy": self.scheduler.policy, "cores": self.cores,
                      "honour_demand": self.options.honour_demand},
            engines=engine_versions(self.backends), deterministic=deterministic,
            warm_start=None if self.warm is None else {
                **self.warm.report(cost),
                "cold": sorted(b.name for b in self.backends if starts_cold(b.name, self.options.cold))},
            options={name: dict(values) for name, values in self.option_values.items()},
            options_given={k: dict(v) for k, v in self.options.backend_options.items()},
            config=self.options.config,
        )

