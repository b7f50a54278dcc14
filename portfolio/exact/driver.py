"""The driver every exact engine (CP-SAT, MaxSAT, ...) shares, and the base of their backends.

An exact *engine* (:class:`~.contract.ExactEngine`) knows one thing: build a model of a
:class:`Problem` and solve it within a time limit, starting from a hint, calling back with each
improving plan, and saying what it proved. The *driver* (:func:`solve_with_engine`) owns everything
else, once for all engines: the starting plan, the choice between the full model and
large-neighbourhood search (:mod:`.lns`) by the engine's own size estimate, the time split, and the
:class:`SolveResult` with its lower bound.

Why a window is just a Problem: the LNS fixes every node outside a window at the incumbent and
hands the engine the *window problem* (edges to fixed nodes folded into node costs, fixed usage
taken off the capacity, see :func:`.lns.build_window`). An engine that can solve a Problem
can therefore solve a window, with no second code path.

In deterministic mode (``report.work`` set) :func:`solve_deterministic` runs the same phases
with work units for seconds and counts for every choice (no clock, no machine-dependent thread
count).

Claims: ``optimal`` means optimal among plans without forbidden choices (every such plan is cheaper
than any plan with one, since a forbidden entry alone costs 10**18); ``infeasible`` means no plan
without forbidden choices fits in memory, which is *not* a proof that the original instance has no
answer, so the driver reports it as ``no-solution``.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping, Optional

import numpy as np

from ..backend import (LOW, PROOF, Backend, BackendMeta, Capabilities, Reporter, SolveResult,
                       Status, allotted_cores, options_of, time_left)
from ..evaluate import evaluate
from ..problem import Problem
from ..runner.fallback import safe_plan
from ..work import Meter
from .contract import ExactEngine, ExactOutcome
from .lns import MIN_WINDOW_UNITS, LnsParams, WorkPace, run_lns
from .meter import WorkLimit

# ------------------------------------------------------------------------------------------ driver
FULL_SHARE = 0.75
"""Share of the time left that the full model gets when LNS may follow (large models only)."""

SMALL_MODEL = 0.25
"""A model this fraction of the budget or less gets all the time: CP-SAT-like engines run their
own neighbourhood search inside, and an outer LNS on a model this small adds nothing measurable."""


POLISH_SHARE, POLISH_MAX = 0.15, 10.0
"""The first ``min(POLISH_SHARE x time left, POLISH_MAX)`` seconds go to the shared local-search
kernels, to hand the exact engine a strong complete hint. Measured on A (docs/benchmarks/cpsat.md,
"Memory encodings on A"): from the least-memory plan CP-SAT reached 2.1e10 (bound 5.2e9) in 60 s;
hinted with a 20 s local-search plan it proved the optimum in 48 s."""


POLISH_MIN_FREE = 50
"""No polish below this many free nodes: the engine solves such a model at once, and the polish
would spend its whole share (measured: the bundled example, 6 free nodes after presolve, took
10.9 s to an optimal cpsat claim with the polish, most of it polishing)."""


def kernel_polish(problem: Problem, stop: float, seed: int,
                  start: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """Run the shared local-search kernels until ``stop`` (a ``time.monotonic()`` value) from
    ``start`` (or their greedy plan); returns the best feasible plan they found, or None."""
    from ..kernels.engine import Searcher, greedy_plan, prepare

    prep = prepare(problem)
    search = Searcher(prep, seed)
    if start is not None:
        r = prep.contract(np.asarray(start, dtype=np.int64))
        if r is not None:
            search.offer(r)
    if search.best is None:
        sol, ok, _ = greedy_plan(prep, 2, seed)
        if ok:
            search.offer(sol)
    search.run(stop, None, lambda rsol: None, lambda: None)
    return None if search.best is None else prep.expand(search.best)


RETURN_MARGIN_SHARE, RETURN_MARGIN_MAX = 0.03, 2.0
"""The driver stops its engine ``min(3 % of the time, 2 s)`` before the backend's deadline: the
runner kills a backend soon after that deadline (0.7 s later at 60 s), and a killed exact backend
loses its bound and its claim. Measured: A at 60 s with cpsat and maxsat sharing two cores, CP-SAT
overran by more than the runner's grace and its row read ``timeout`` without a bound."""


class BestPlan:
    """The best verified plan a backend knows, and the reporting of its own improvements (shared
    by the exact backends and ``toulbar2``)."""

    def __init__(self, problem: Problem, report: Reporter) -> None:
        self.problem, self.report = problem, report
        self.plan: Optional[np.ndarray] = None
        self.cost: Optional[int] = None
        self.clean = False            # feasible and without forbidden choices

    def offer(self, plan: Optional[np.ndarray], note: str, own: bool) -> bool:
        if plan is None:
            return False
        plan = np.asarray(plan, dtype=np.int64)
        try:
            ev = evaluate(self.problem, plan)
        except Exception:  # noqa: BLE001 -- a plan of the wrong shape is simply not taken
            return False
        if not ev.feasible or (self.cost is not None and ev.cost >= self.cost):
            return False
        self.plan, self.cost, self.clean = plan.copy(), ev.cost, not ev.has_forbidden
        if own:
            self.report(self.plan, note)
        return True


def starting_plan(problem: Problem, warm_start: Optional[np.ndarray], best: "BestPlan",
                  report: Reporter) -> None:
    """Offer every cheap starting point: the warm start, the portfolio's best, the least-memory
    plan avoiding forbidden entries (plain numpy; it is the plain least-memory plan when that one
    alone fits or no forbidden-free plan exists). The last is this backend's own find, so it is
    reported."""
    best.offer(warm_start, "warm start", own=False)
    try:
        best.offer(report.best(), "portfolio best", own=False)
    except Exception:  # noqa: BLE001 -- the runner's sharing is best effort
        pass
    if (best.plan is None or not best.clean) and problem.num_nodes:
        best.offer(safe_plan(problem, 1.0), "least-memory plan avoiding forbidden entries",
                   own=True)


def solve_with_engine(engine: ExactEngine, problem: Problem, deadline: float, seed: int,
                      warm_start: Optional[np.ndarray], report: Reporter,
                      threads: Optional[int] = None, lns: bool = True,
                      lns_params: Optional[LnsParams] = None, polish: bool = True,
                      polish_full_model: bool = True) -> SolveResult:
    """Run an exact engine as a portfolio backend: full model when it fits (all the time for a
    small model, ``FULL_SHARE`` of it for a large one), LNS windows with the same engine on the
    rest of the time or when the model is too big. Returns the backend's :class:`SolveResult`.
    ``polish_full_model`` False: the kernel polish runs only before LNS windows, for an engine
    that needs no hint on a full model (``ExactBackend.polish_full_model``).

    In deterministic mode (``report.work`` set) :func:`solve_deterministic` runs instead: the
    same phases, limited by work units instead of seconds."""
    if report.work is not None:
        return solve_deterministic(engine, problem, deadline, seed, warm_start, report, lns=lns,
                                   lns_params=lns_params)
    from ..presolve.jitlock import compiled  # the presolve package imports numba: in the worker

    # Engines overrun their limits (an LP solve between two clock checks, a model build): aim a
    # little before the deadline so the result, with its bound, is sent before the runner kills.
    left = time_left(deadline)  # the one read of the wall clock: our own from here
    stop = time.monotonic() + left - min(RETURN_MARGIN_MAX, RETURN_MARGIN_SHARE * max(0.0, left))
    t0 = time.monotonic()
    threads = threads or allotted_cores()
    best = BestPlan(problem, report)
    starting_plan(problem, warm_start, best, report)
    bound: Optional[int] = None
    notes: list[str] = []
    timings: dict[str, float] = {}
    if problem.num_nodes == 0:
        plan = np.zeros(0, dtype=np.int64)
        best.offer(plan, "empty instance", own=True)
        ev = evaluate(problem, plan)
        if ev.feasible:
            return SolveResult(Status.OPTIMAL, plan, lower_bound=ev.cost, note="no nodes")
        return SolveResult(Status.NO_SOLUTION, note="the fixed usage alone exceeds the capacity")
    size = engine.estimate(problem)   # cheap (array sizes): decides the mode before the polish
    budget = engine.budget()
    if lns and not size.within(budget):
        # LNS windows (and the polish before them, the local search again) rarely beat the local
        # search the portfolio runs anyway (measured, see portfolio/runner/schedule.py): they get
        # the cores nobody else wants, from the start.
        report.demand(LOW, "LNS windows (full model too big)")
    cold = not compiled()
    if cold:
        # A cold cache: the kernel backends are compiling, one stage at a time on one core, and
        # their plans are what the portfolio needs first (measured on A at 60 s: an unhinted CP-SAT
        # run reached 2.4e10 where the greedy reaches 6.55e9). This backend takes the core they
        # leave, and skips its own polish (compiling would cost it most of a minute).
        report.demand(LOW, "kernels compiling elsewhere (cold cache)")
    wants_polish = (polish and int((problem.strategy_counts > 1).sum()) > POLISH_MIN_FREE
                    and (polish_full_model or not size.within(budget)))
    if wants_polish and cold:
        notes.append("polish skipped: kernels not compiled yet (`portfolio warmup`)")
    elif wants_polish:
        until = time.monotonic() + min(POLISH_SHARE * (stop - time.monotonic()), POLISH_MAX)
        try:
            best.offer(kernel_polish(problem, until, seed, best.plan), "local-search kernels",
                       own=True)
        except Exception as exc:  # noqa: BLE001 -- the hint is a help, never a requirement
            notes.append(f"polish skipped ({type(exc).__name__})")
        try:
            best.offer(report.best(), "portfolio best", own=False)
        except Exception:  # noqa: BLE001
            pass
    if size.within(budget):
        left = stop - time.monotonic()
        small = (size.terms <= SMALL_MODEL * budget.terms
                 and size.variables <= SMALL_MODEL * budget.variables)
        limit = left if (small or not lns) else left * FULL_SHARE
        if not cold:   # a proof search on a model that fits: the adaptive rule keeps its share
            report.demand(PROOF, "full model")
        out = engine.solve(problem, limit, best.plan, threads, seed,
                           lambda plan: best.offer(plan, engine.name, own=True))
        timings.update({k: float(v) for k, v in out.stats.items() if k.endswith("_s")})
        settled = _settled(out, best, engine.name, notes, timings)
        if settled is not None:
            return settled
        if out.bound is not None:
            bound = out.bound
    else:
        notes.append(f"full model too big (estimate {size.variables:,} variables, "
                     f"{size.terms:,} terms; budget {budget.terms:,} terms): LNS windows")
    if lns and best.plan is not None and best.clean and time.monotonic() < stop - 0.2:
        if size.within(budget):  # the full model ran out of its share without a proof
            report.demand(LOW, "LNS windows (full model unproven)")
        def window(sub: Problem, limit: float, hint: np.ndarray) -> ExactOutcome:
            return engine.solve(sub, limit, hint, threads, seed, lambda plan: None)

        def fetch() -> Optional[np.ndarray]:
            try:
                return report.best()
            except Exception:  # noqa: BLE001
                return None

        plan, _, stats = run_lns(problem, best.plan, stop, window,
                                 lambda p, c: best.offer(p, f"{engine.name} LNS", own=True),
                                 fetch, seed, lns_params)
        best.offer(plan, f"{engine.name} LNS", own=True)
        notes.append(stats.note())
    timings["total_s"] = round(time.monotonic() - t0, 3)
    return final_result(best, bound, notes, timings)


def final_result(best: BestPlan, bound: Optional[int], notes: list[str],
                 timings: dict[str, float], safety_net: bool = False) -> SolveResult:
    """The backend's result from its best plan and the bound it proved (optimal when they meet);
    ``safety_net``: deterministic mode stopped by the clock before its work was spent."""
    if best.plan is None:
        return SolveResult(Status.NO_SOLUTION, lower_bound=bound,
                           note="; ".join(notes) or "no feasible plan found", timings=timings,
                           safety_net=safety_net)
    if bound is not None and best.cost is not None and bound >= best.cost:
        return SolveResult(Status.OPTIMAL, best.plan, lower_bound=best.cost,
                           note="; ".join(notes), timings=timings, safety_net=safety_net)
    return SolveResult(Status.FEASIBLE, best.plan, lower_bound=bound, note="; ".join(notes),
                       timings=timings, safety_net=safety_net)


# ------------------------------------------------------------------------- deterministic mode
DET_THREADS = 1
"""Threads an engine gets in deterministic mode, on any machine (the engines' own fixed counts,
such as CP-SAT's ``DET_WORKERS``, apply inside)."""

SAFETY_NOTE = "wall-clock safety net reached first: not the deterministic answer"


def solve_deterministic(engine: ExactEngine, problem: Problem, deadline: float, seed: int,
                        warm_start: Optional[np.ndarray], report: Reporter, lns: bool = True,
                        lns_params: Optional[LnsParams] = None) -> SolveResult:
    """Run ``engine`` as a backend in deterministic mode (``report.work`` set,
    :mod:`portfolio.work`): the phases of :func:`solve_with_engine`, with every limit in work units
    and every choice made from counts:

    * the start: the warm start, else the least-memory plan avoiding forbidden entries (its repair
      passes without their time cap: bounded by their counts, they give the same plan). No kernel
      polish (its length would follow the clock, and whether the kernels are compiled is the
      machine's state): the portfolio's plans, the local search's among them, arrive at the exchange
      points instead (:meth:`portfolio.work.Meter.fresh_best`, read only once a point was passed);
    * full model or LNS by the engine's size estimate alone. A model that fits is solved in two
      slices: the first ends at the first exchange point (``work.exchange`` units), so that the
      second starts hinted with the portfolio's incumbent of that point; a small model gets all the
      work, a large one ``FULL_SHARE`` of it and LNS windows the rest;
    * LNS windows from the seed and the incumbent, each limited by ``LnsParams.window_units``
      (:class:`.lns.WorkPace`);
    * ``DET_THREADS`` engine threads, never ``allotted_cores()``.

    The wall-clock deadline stays the safety net: the engines stop at it and the result's note says
    so (the plan is then not the deterministic answer).
    """
    assert report.work is not None
    left = time_left(deadline)  # the safety net only: no decision below reads a clock
    stop = time.monotonic() + left - min(RETURN_MARGIN_MAX, RETURN_MARGIN_SHARE * max(0.0, left))
    meter = Meter(report.work, report, stop)
    t0 = time.monotonic()
    best = BestPlan(problem, report)
    best.offer(warm_start, "warm start", own=False)
    if (best.plan is None or not best.clean) and problem.num_nodes:
        # no time cap: its passes are bounded by counts alone (tens of ms on the contest instances)
        best.offer(safe_plan(problem, math.inf), "least-memory plan avoiding forbidden entries",
                   own=True)
    if problem.num_nodes == 0:
        plan = np.zeros(0, dtype=np.int64)
        best.offer(plan, "empty instance", own=True)
        if evaluate(problem, plan).feasible:
            return SolveResult(Status.OPTIMAL, plan, lower_bound=best.cost, note="no nodes")
        return SolveResult(Status.NO_SOLUTION, note="the fixed usage alone exceeds the capacity")
    bound: Optional[int] = None
    notes = ["deterministic mode (no polish: the portfolio's plans come at exchange points)"]
    timings: dict[str, float] = {}

    def adopt() -> None:
        best.offer(meter.fresh_best(), "portfolio best", own=False)

    size, budget = engine.estimate(problem), engine.budget()
    if lns and not size.within(budget):
        report.demand(LOW, "LNS windows (full model too big)")
    if size.within(budget):
        small = (size.terms <= SMALL_MODEL * budget.terms
                 and size.variables <= SMALL_MODEL * budget.variables)
        share = meter.left() * (1.0 if (small or not lns) else FULL_SHARE)
        report.demand(PROOF, "full model")
        first = min(share, float(report.work.exchange))
        for units in (first, share - first):
            if units < MIN_WINDOW_UNITS or meter.out or meter.seconds_left() <= 0.05:
                break
            adopt()
            out = engine.solve(problem, meter.seconds_left(), best.plan, DET_THREADS, seed,
                               lambda plan: best.offer(plan, engine.name, own=True),
                               work=WorkLimit(units, meter))
            for k, v in out.stats.items():
                if k.endswith("_s"):
                    timings[k] = round(timings.get(k, 0.0) + float(v), 3)
            settled = _settled(out, best, engine.name, notes, timings)
            if settled is not None:
                return settled
            if out.bound is not None:
                bound = out.bound if bound is None else max(bound, out.bound)
        adopt()
    else:
        notes.append(f"full model too big (estimate {size.variables:,} variables, "
                     f"{size.terms:,} terms; budget {budget.terms:,} terms): LNS windows")
    if lns and not meter.out and best.plan is not None and best.clean and meter.seconds_left() > 0.2:
        if size.within(budget):
            report.demand(LOW, "LNS windows (full model unproven)")
        params = lns_params or LnsParams()

        def window(sub: Problem, units: float, hint: np.ndarray):
            return engine.solve(sub, max(0.0, meter.seconds_left()), hint, DET_THREADS, seed,
                                lambda plan: None, work=WorkLimit(units, meter))

        plan, _, stats = run_lns(problem, best.plan, stop, window,
                                 lambda p, c: best.offer(p, f"{engine.name} LNS", own=True),
                                 meter.fresh_best, seed, params,
                                 pace=WorkPace(meter, params.window_units))
        best.offer(plan, f"{engine.name} LNS", own=True)
        notes.append(stats.note())
        adopt()
    clocked = meter.seconds_left() <= 0.1 and not meter.out
    if clocked:
        notes.append(SAFETY_NOTE)
    timings["total_s"] = round(time.monotonic() - t0, 3)
    return final_result(best, bound, notes, timings, safety_net=clocked)


class ExactBackend(Backend):
    """Base of the exact backends: name the engine class (``engine_type``) and the solver; the
    driver does the rest.

    ``capabilities`` are those of every exact engine (a backend whose engine uses several cores
    adds ``threads``). Its ``meta`` (:class:`portfolio.backend.BackendMeta`) names the solver's
    distribution in ``engines`` (with numba and numpy, which the driver's hint uses), its modules in
    ``requires`` and the pip requirement that installs them (a dependency of the plain install, so
    missing only in a broken or partial environment): the inherited ``available()`` checks them
    with ``find_spec``, without importing the solver (that runs in the runner's process before its
    first fork; the engine imports the solver in its worker).

    Its declared options (``meta.options``) are the engine's keyword arguments: each solve builds
    the engine with their values (:func:`portfolio.backend.options_of`)."""

    capabilities = Capabilities(exact=True, anytime=True, warm_start=True, reduced=True)
    meta = BackendMeta(engines=("numba", "numpy"))
    engine_type: Optional[type] = None   # an ExactEngine class; one engine per solve
    lns: bool = True
    polish_full_model: bool = True       # the kernel polish also before a full model

    def engine(self, options: Optional[Mapping[str, Any]] = None) -> ExactEngine:
        """The engine of one solve, built with the backend's option values."""
        if self.engine_type is None:
            raise NotImplementedError(f"{type(self).__name__} names no engine_type")
        return self.engine_type(**dict(options or {}))

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        return solve_with_engine(self.engine(options_of(self, report)), problem, deadline, seed,
                                 warm_start, report, lns=self.lns,
                                 polish_full_model=self.polish_full_model)


def _settled(out, best, name: str, notes: list[str], timings: dict) -> Optional[SolveResult]:
    """Offer a full-model solve's plan and keep its note; the result to return when that solve
    settled the run (optimal, or infeasible with no plan held), else None. Both modes share it."""
    best.offer(out.plan, name, own=True)
    if out.note:
        notes.append(out.note)
    if out.status == "optimal" and out.plan is not None:
        return SolveResult(Status.OPTIMAL, out.plan, lower_bound=out.bound,
                           note="; ".join(notes), timings=timings)
    if out.status == "infeasible" and best.plan is None:
        return SolveResult(Status.NO_SOLUTION, note=out.note, timings=timings)
    return None
