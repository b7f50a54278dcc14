"""The run's answer: every plan verified before it counts, claims checked against verified plans,
the runner's own proofs (least-memory reserve, memory-only infeasibility, a tiny instance
enumerated), and what the run answers at the end. No process code here."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import numpy as np

from ..backend import Status
from ..evaluate import Evaluation, evaluate, min_usage_profile
from ..exhaustive import enumerate_optimum
from . import validate
from .claims import INFEASIBLE, LOWER_BOUND, OPTIMAL, Claim, ClaimBook
from .fallback import safe_plan
from .result import BackendRun
from .warmstart import WARM_START, starts_cold

if TYPE_CHECKING:
    from .context import RunContext

FALLBACK = "fallback"
"""The winner's name when the answer is the runner's own least-memory plan."""

ENUMERATION = "enumeration"
"""The winner's name when the runner scored every plan of a tiny instance."""


@dataclass(frozen=True)
class Answer:
    """What the run answers (:meth:`Answers.final`)."""

    solution: Optional[np.ndarray]
    evaluation: Optional[Evaluation]
    winner: Optional[str]
    proof: Optional[str]
    infeasible_proven_by: Optional[str]


class Answers:
    """Verification, claims and the answer.

    Owns the verified incumbent (plan, evaluation, source), a re-solve's cold part's own best (it
    starts from it), the runner's reserve plan (the least-memory one, made forbidden-free once) and
    the :class:`.claims.ClaimBook`. Asks the rows (the context's ``rows``) for their transitions: a
    verified plan goes into its backend's row, a claim and its fate into its source's. In a timed
    run each new incumbent is published to the workers at once through the context's ``shared``
    board, and the cold part's best through ``shared_cold`` (its own board, when a timed run
    re-solves from a warm start); in deterministic mode only the exchange points publish
    (:mod:`.exchange`), taking plans through :meth:`take`."""

    def __init__(self, context: "RunContext") -> None:
        self._problem, self._rows, self._options = context.problem, context.rows, context.options
        self._clock = context.clock
        self._publish = None if context.deterministic else context.shared
        self._publish_cold = context.shared_cold
        self._claims = ClaimBook()
        self._best: Optional[np.ndarray] = None
        self._best_eval: Optional[Evaluation] = None
        self._best_backend: Optional[str] = None
        self._found: Optional[tuple[np.ndarray, Evaluation]] = None   # a re-solve's cold part's best
        self._cold: Optional[tuple[str, ...]] = None   # its backends (None: the default)
        self._reserve: Optional[tuple[np.ndarray, Evaluation]] = None
        self._reserve_refined = False   # see refine_reserve

    @property
    def best(self) -> Optional[np.ndarray]:
        """The verified incumbent (the reserve aside), a plan of the original problem."""
        return self._best

    @property
    def best_eval(self) -> Optional[Evaluation]:
        return self._best_eval

    @property
    def best_backend(self) -> Optional[str]:
        """Who found the incumbent: a run's name, or the runner's own source."""
        return self._best_backend

    def standing(self) -> Optional[tuple[np.ndarray, int]]:
        """The verified incumbent (the reserve aside) as (plan, cost), or None."""
        if self._best is None or self._best_eval is None:
            return None
        return self._best, self._best_eval.cost

    @property
    def found(self) -> Optional[np.ndarray]:
        """The cheapest plan a re-solve's cold part found itself (no warm start, no warm part's)."""
        return None if self._found is None else self._found[0]

    @property
    def claims(self) -> ClaimBook:
        return self._claims

    def verify(self, plan: object) -> tuple[Optional[str], Optional[Evaluation]]:
        """Evaluate a plan on the original problem: (why refused or None, its evaluation)."""
        try:
            ev = evaluate(self._problem, plan)
        except Exception as exc:  # SolutionError, or a plan no evaluator could read
            return f"invalid plan: {validate.note_text(str(exc))[:120]}", None
        if not ev.feasible:
            return (f"infeasible plan reported as feasible: usage {ev.peak_usage:,} > limit "
                    f"{ev.usage_limit:,} at t={ev.first_violation_time}"), ev
        return None, ev

    def record(self, run: BackendRun, sol: np.ndarray, ev: Evaluation, note: str) -> None:
        """A verified plan in its backend's row (best cost, incumbents over time)."""
        self._rows.improved(run, sol, ev.cost, note)

    def consider(self, run: Optional[BackendRun], plan: object, note: str
                 ) -> tuple[Optional[str], Optional[Evaluation]]:
        """Verify a plan; keep it if it is the best. (why refused or None, its evaluation). In
        deterministic mode only the exchange points publish the incumbent (:mod:`.exchange`)."""
        refused, ev = self.verify(plan)
        if refused:
            return refused, ev
        sol = np.array(plan, dtype=np.int64)
        if run is not None:
            self.record(run, sol, ev, note)
            # a re-solve (a warm start was given) whose cold part found it: its own best, its board
            if self._options.warm_start is not None and \
                    starts_cold(run.backend or run.name, self._cold) \
                    and (self._found is None or ev.cost < self._found[1].cost):
                self._found = (sol, ev)
                if self._publish_cold is not None:
                    self._publish_cold.publish(sol)
        if self._best_eval is None or ev.cost < self._best_eval.cost:
            self._best, self._best_eval = sol, ev
            self._best_backend = None if run is None else run.name
            if self._publish is not None:
                self._publish.publish(sol)
        return None, ev

    def take(self, sol: np.ndarray, ev: Evaluation, source: str) -> bool:
        """A plan verified earlier becomes the incumbent if it is strictly cheaper (deterministic
        mode: at an exchange point, or the best received when the run could not finish). Whether
        it did; publishing it is the caller's."""
        if self._best_eval is None or ev.cost < self._best_eval.cost:
            self._best, self._best_eval, self._best_backend = sol, ev, source
            return True
        return False

    def warm_start(self, plans: Iterable[np.ndarray], cold: tuple[str, ...]) -> None:
        """The warm start's plans, verified like any; the incumbent they make is credited to
        ``WARM_START`` (a presolve that settled the run keeps its name). ``cold``: the backends
        of the re-solve's cold part (:meth:`.warmstart.WarmStart.decide_cold`)."""
        self._cold = cold
        before = self._best_eval
        for plan in plans:
            self.consider(None, plan, "warm start")
        if self._best is not None and self._best_eval is not before:
            self._best_backend = WARM_START

    def proven(self, plan: np.ndarray, name: str, source: str) -> None:
        """A plan the runner proved optimal itself (presolve left nothing to decide, every plan
        scored): verified like any, credited to ``name``, claimed optimal by ``source``."""
        refused, ev = self.consider(None, plan, name)
        if refused is None:
            self._best_backend = name
            self.claim(None, OPTIMAL, ev.cost, True, source)

    def offer(self, run: Optional[BackendRun], plan: object, note: str) -> Optional[str]:
        """A plan from outside this run's workers (a cluster shard, a caller): verified and kept
        like any backend's, credited to ``run`` (a row the caller added to ``runs``) or to
        ``note`` when ``run`` is None. Returns why it was refused, or None."""
        refused, _ = self.consider(run, plan, note)
        if refused is None and run is None and self._best is not None and \
                self._best_backend is None and self._best_eval is not None:
            self._best_backend = note
        return refused

    def outside_bound(self, run: BackendRun, value: object, note: str, exact: bool) -> None:
        """A lower bound from outside (a shard's standing bound), claimed like a backend's."""
        self.in_run_bound(run, value, note, exact)

    def outside_optimal(self, run: BackendRun, cost: int, exact: bool) -> None:
        """An outside claim that ``cost`` is optimal; it stands only while no verified plan is
        cheaper (the claims book checks it like any backend's)."""
        self._rows.claims_optimal(run, None)
        self.claim(run, OPTIMAL, int(cost), exact)

    def outside_reject(self, run: BackendRun, reason: str) -> None:
        """Outside work sent something false: its row says so; its verified plans stay."""
        self._rows.rejected(run, reason)

    def verified_best(self) -> tuple[Optional[int], Optional[str]]:
        """The cheapest verified cost, counting the runner's reserve plan, and its source."""
        cost, source = ((None, None) if self._best_eval is None
                        else (self._best_eval.cost, self._best_backend))
        if self._reserve is not None and (cost is None or self._reserve[1].cost < cost):
            cost, source = self._reserve[1].cost, FALLBACK
        return cost, source

    def incumbent(self) -> Optional[tuple[int, np.ndarray, str]]:
        """The cheapest verified plan so far, the reserve included: (cost, plan on the original
        problem, its source), or None. For callers that want plans as they come (``on_update``)."""
        cost, source = self.verified_best()
        if cost is None:
            return None
        plan = self._reserve[0] if source == FALLBACK else self._best
        return cost, plan, source or "runner"

    def claim(self, run: Optional[BackendRun], kind: str, value: Optional[int], exact: bool,
              source: str = "") -> None:
        """A claim by ``run`` (None: the runner's own, by ``source``), checked at once."""
        claim = self._claims.add(Claim(kind, run.name if run else source,
                                       run.backend if run else "runner", value,
                                       round(self._clock.now(), 4), exact))
        if run is not None:
            self._rows.claimed(run, claim)
        self.check_claims()

    def check_claims(self) -> None:
        """Claims a verified plan contradicts lose their standing; their sources keep their plans."""
        cost, source = self.verified_best()
        for claim in self._claims.check(cost, source):
            run = self._rows.get(claim.source)
            if run is not None:
                self._rows.claim_false(run, claim)

    def in_run_bound(self, run: BackendRun, raw: object, note: str, exact: bool) -> None:
        """A lower bound sent during the run: recorded with its time (gap over time) and claimed
        like a final one. Only improvements count; the claim it improves on is implied by it and
        leaves the book (so a backend whose latest bound is contradicted keeps no bound). A
        malformed value is dropped and named in the row, as in a final result."""
        if run.disqualified:
            return
        try:
            value = validate.bound_value(raw)
        except validate.MessageError as exc:
            self._rows.dropped(run, str(exc))
            return
        if value is None or (run.bounds and value <= run.bounds[-1].value):
            return
        implied = [c for c in run.claims if c.kind == LOWER_BOUND and not c.false and c.value < value]
        self._claims.drop(implied)
        self._rows.bound(run, value, note, implied)
        self.claim(run, LOWER_BOUND, value, exact)

    # ---------------------------------------------------------------- the runner's own proofs
    def own_checks(self) -> None:
        """The least-memory reserve plan, the memory-only infeasibility proof and, on a tiny
        instance, every plan scored (no compilation in any of them)."""
        problem = self._problem
        plain = np.asarray(problem.min_usage_strategies, dtype=np.int64)
        ev = evaluate(problem, plain)
        if self._options.exhaustive:
            self._enumerate()
        if ev.feasible:
            self._reserve = (plain, ev)
            return
        floor = min_usage_profile(problem)
        capacity, limited = problem.capacity.at(problem.time_points)
        over = np.flatnonzero(limited & (floor > capacity))
        if len(over):
            t = int(problem.time_points[over[0]])
            self.claim(None, INFEASIBLE, None, True,
                       f"memory check (least usage exceeds the capacity at t={t})")

    def _enumerate(self) -> None:
        """A tiny instance is settled by scoring every plan (:mod:`portfolio.exhaustive`): its optimum
        is verified like any plan and proven by the runner, so the run ends before any backend
        starts. Only on request (``exhaustive``): a bench row stays its backends' own."""
        found = enumerate_optimum(self._problem)
        if found is None:
            return
        source = f"enumeration (every one of the {found.plans:,} plans scored)"
        if found.plan is not None:
            self.proven(found.plan, ENUMERATION, source)
        elif found.feasible_plans == 0:
            self.claim(None, INFEASIBLE, None, True, source)

    def refine_reserve(self) -> None:
        """Once, right after the first workers are forked: make the reserve forbidden-free with the
        fallback's propagation (plain numpy, 0.2-0.5 s on the contest instances), in this process.

        Why not leave it to ``minusage``: at T = 5 its worker can start too late to finish (A's
        answer was the plain least-memory plan with 6,671 forbidden choices), and a run without
        ``minusage`` would never get it."""
        if self._reserve_refined:
            return
        self._reserve_refined = True
        if not self._options.fallback or self._reserve is None or not self._reserve[1].has_forbidden:
            return
        if self._options.deterministic:  # no clock: every pass to its end (bounded by its waves)
            seconds = math.inf
        else:
            left = self._clock.soft_deadline - time.monotonic()
            if left < 0.5:
                return
            seconds = min(1.0, left / 3)
        plan = safe_plan(self._problem, seconds)
        ev = evaluate(self._problem, plan)
        if ev.feasible and ev.cost < self._reserve[1].cost:
            self._reserve = (plan, ev)

    def accept_result(self, run: BackendRun, exact: bool, result: validate.Result) -> None:
        """A timed run's final result from ``run``'s worker (``exact``: its backend declares the
        capability): its plan verified, its row ended, its claims made."""
        ev = None
        if result.solution is not None:
            refused, ev = self.consider(run, result.solution, "final")
            if refused:
                self._rows.rejected(run, refused)
                return
        self._rows.reported(run, result)
        if result.status is Status.OPTIMAL:
            self._rows.claims_optimal(run, ev.cost)
            self.claim(run, OPTIMAL, ev.cost, exact)
        if result.lower_bound is not None:
            self._rows.claims_bound(run, result.lower_bound)
            self.claim(run, LOWER_BOUND, result.lower_bound, exact)
        if result.status is Status.INFEASIBLE_PROVEN:
            self.claim(run, INFEASIBLE, None, exact)

    def final(self) -> Answer:
        """The answer: the incumbent, or the reserve when it is cheaper (or the only plan) and the
        run may answer with it (``fallback``); how sure it is; who proved no plan exists."""
        solution, evaluation, winner = self._best, self._best_eval, self._best_backend
        if self._options.fallback and self._reserve is not None and (
                evaluation is None or self._reserve[1].cost < evaluation.cost):
            solution, evaluation, winner = self._reserve[0], self._reserve[1], FALLBACK
        cost = None if evaluation is None else evaluation.cost
        winner_backend = self._rows[winner].backend if winner in self._rows else "runner"
        proof = self._claims.verdict(cost, winner, winner_backend)
        infeasible_by = None
        if solution is None:
            standing = [c for c in self._claims.infeasible_claims() if c.exact]
            infeasible_by = standing[0].source if standing else None
        return Answer(solution, evaluation, winner, proof, infeasible_by)
