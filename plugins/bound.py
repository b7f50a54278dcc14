"""Lower-bound backend: a certified Lagrangian bound of the optimum, no plans.

Why a backend of its own (rather than a by-product of ``localsearch``): the local search moves its
memory prices to find *plans* (jittering them when the steps collapse), which is not the path that
maximises the bound, and a bound taken only from its final state is weak. Here the prices follow
projected subgradient steps towards the portfolio's best verified cost (read through
``report.best()``, hence ``warm_start``), each step certified by
:func:`portfolio.kernels.bound.star_bound`; the best certified value is returned in
``SolveResult.lower_bound`` a little before the deadline, and the run returns at once when the
bound meets the best known cost (a zero gap: the plan is optimal). ``exact`` is declared because
the bound is a proof: the runner may stop the whole run when it meets a verified cost.

**toulbar2 phase** (issue 21): after ``TB2_SHARE`` of the time, when pytoulbar2 imports and at
least ``TB2_MIN_S`` seconds remain, toulbar2 bounds the priced problem at the subgradient's best
prices (:mod:`portfolio.toulbar2.bound`: reparametrised by the TRW-S messages, then best-first
search, in a child killed at its limit) for the rest of the time but a margin; the star bound
only bounds its local polytope, so this one is often higher, and it is reported the same way when
it is. ``toulbar2=False`` turns the phase off; without pytoulbar2 it is skipped silently.

**Shared prices** (timed runs): the best prices go to the run's price board
(:mod:`portfolio.prices`) when the certified bound improved, at most every ``PUBLISH_S``, and once
at the end; every ``REFRESH_S`` the board is read, and prices another backend certified higher
become this subgradient's current ones (its own best and its reported bound stay its own).

**Warm start**: its cost (when it is feasible and forbidden-free) is the Polyak step's target from
the first step, so no greedy plan is built for it, and the bound meeting it proves the warm start
optimal (the run then ends). A plan is an upper bound, not prices: the prices themselves start at
zero either way (a plan says which time points are tight, not what they are worth).

**Deterministic mode** (``report.work`` set, :mod:`portfolio.work`): the same subgradient steps,
counted instead of timed with the constants of :mod:`portfolio.kernels.units`: the kernel view
(``prepare_units``), the greedy plan when there is no warm start (``greedy_units``), and per step
its TRW-S passes and vector work (``sweep_units``), its certified star bound with its floor
(``star_units``) and the strategy evaluations of its priced descent (``eval_units``). The target
is refreshed from ``report.best()`` right after an exchange point only (never before the first:
the greedy plan gives the first target when there is no warm start), in the kernel objective (the
reduced view's offset taken off). The toulbar2 phase is left out of this mode: its switch is a
share of the time and its child a time limit, and a backtrack-limited version is not built yet.
The dot products are thread-count free; the deadline is the safety net only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from portfolio.backend import (Backend, BackendMeta, Capabilities, Reporter, SolveResult, Status,
                               no_nodes_result, options_of, time_left)
from portfolio.backend_options import Option
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl
from portfolio.problem import Problem

if TYPE_CHECKING:
    from portfolio.kernels.bound import BoundParams
    from portfolio.kernels.units import Meter

REFRESH_S = 0.5
"""Seconds between two reads of the portfolio's best plan (the step target)."""

SETTLE_ITERS = 10
"""TRW-S passes at the best prices before the toulbar2 phase: its messages reparametrise the
priced network so that toulbar2 starts from the star bound."""

TB2_SHARE, TB2_MIN_S, TB2_MARGIN_S = 0.55, 15.0, 1.5
"""The toulbar2 phase starts after this share of the backend's time, only with at least this many
seconds left, and ends this long before the deadline (the answer still has to go back)."""


OPTIONS = (
    Option("max_steps", "int", 0, low=0,
           help="subgradient steps, then stop (0: until the deadline or the work budget)"),
    Option("toulbar2", "bool", True,
           help="a late phase that raises the bound with toulbar2 on the priced problem (timed runs)"),
    Option("tb2_share", "float", TB2_SHARE, low=0.0, high=1.0,
           help="share of the backend's time before the toulbar2 phase starts"),
    Option("tb2_min_s", "float", TB2_MIN_S, low=0.0, unit="seconds",
           help="seconds the toulbar2 phase needs at least, else it is skipped"),
    Option("trws_iters", "int", 2, low=1, high=50,   # the kernels' BoundParams default
           help="TRW-S passes between two price steps"),
)


@dataclass(frozen=True)
class Settings:
    """The backend's options for one solve."""

    max_steps: Optional[int]
    toulbar2: bool
    tb2_share: float
    tb2_min_s: float
    trws_iters: int

    @classmethod
    def of(cls, values: dict) -> "Settings":
        return cls(values["max_steps"] or None, values["toulbar2"], values["tb2_share"],
                   values["tb2_min_s"], values["trws_iters"])

    @property
    def params(self) -> "BoundParams":
        """The kernels' parameters (numba: built in the worker, never when the plugin loads)."""
        from portfolio.kernels.bound import BoundParams

        return BoundParams(trws_iters=self.trws_iters)


class BoundBackend(Backend):
    name = "bound"
    description = "Certified Lagrangian lower bound (memory prices, TRW-S star bound, subgradient)"
    capabilities = Capabilities(exact=True, warm_start=True, reduced=True)
    meta = BackendMeta(engines=("numba", "numpy", "pytoulbar2"), deterministic=True,
                       options=OPTIONS)

    @staticmethod
    def _tb2_ready(cfg: Settings) -> bool:
        """The phase is on and pytoulbar2 can be imported (checked without importing it)."""
        import importlib.util

        return cfg.toulbar2 and importlib.util.find_spec("pytoulbar2") is not None

    def _tb2_phase(self, problem: Problem, prep, lb, seed: int, stop: float,
                   report: Reporter) -> str:
        """The priced toulbar2 bound at ``lb``'s best prices until ``stop`` (monotonic) but a margin;
        reported (and kept in ``lb.best``) when it beats the star bound. Returns a note."""
        from portfolio.kernels import bound as kbound

        from portfolio.toulbar2.bound import priced_solve, priced_value

        star, lam, msg = lb.settle(SETTLE_ITERS)
        shifts = lb.message_shifts(msg)
        seconds = stop - time.monotonic() - TB2_MARGIN_S
        offset = kbound.kernel_offset(prep)
        out = priced_solve(problem, prep.rm, lam, seconds, offset, seed, shifts=shifts)
        if out.bound is None:
            return f"toulbar2: {out.note}"
        seen = f"star bound {star} at its start, {out.note}"
        if out.plan is not None:   # an upper estimate of L(lam): how far the bound could go
            seen += f", its plan priced at {priced_value(prep.rm, lam, out.plan) + offset:.0f}"
        if lb.best is None or out.bound > lb.best:
            lb.best = out.bound
            report.bound(out.bound, "toulbar2 on the priced problem")
            return f"toulbar2 raised the bound to {out.bound} ({seen})"
        return f"toulbar2 {out.bound}, not above ({seen})"

    # The kernels (numba) are imported in prepare/solve, in the worker: importing this module (the
    # registry does, in the runner's process, before the first fork) stays cheap.
    def prepare(self) -> None:
        from portfolio.kernels import bound as kbound
        from portfolio.kernels.engine import warmup

        warmup("trws")         # the shared search kernels, up to the relaxation's stage
        kbound.warmup()        # and the bound's own

    def solve(self, problem: Problem, deadline: float, seed: int,
              warm_start: Optional[np.ndarray], report: Reporter) -> SolveResult:
        from portfolio.kernels import bound as kbound
        from portfolio.kernels.bound import LagrangeBound
        from portfolio.kernels.engine import greedy_plan, prepare
        from portfolio.kernels.units import meter_of

        t0, begin = time.perf_counter(), time.monotonic()
        stop = begin + time_left(deadline)
        cfg = Settings.of(options_of(self, report))
        if (empty := no_nodes_result(problem.num_nodes)) is not None:
            return empty
        try:
            prep = prepare(problem)
        except ValueError as exc:   # usages beyond the int64 kernels' range
            return SolveResult(Status.UNSUPPORTED, note=f"bound: {exc}")
        if (meter := meter_of(report)) is not None:
            return self._solve_counted(problem, prep, stop, seed, warm_start, report, t0, meter,
                                       cfg)
        lb = LagrangeBound(problem, prep.rm, cfg.params, seed, kbound.kernel_offset(prep))
        offset = int(problem.cost_offset)
        known = [None, -1.0]   # best verified cost (problem objective), last read time

        if warm_start is not None:
            known[0] = _clean_cost(problem, warm_start)
        if known[0] is None and report.best() is None:
            # alone (or first): a greedy plan's cost keeps the first steps' target honest
            sol, ok, _ = greedy_plan(prep, 2, seed)
            known[0] = _clean_cost(problem, prep.expand(sol)) if ok else None

        def target() -> Optional[int]:
            now = time.monotonic()
            if now - known[1] >= REFRESH_S:
                known[1] = now
                c = _clean_cost(problem, report.best())
                if c is not None and (known[0] is None or c < known[0]):
                    known[0] = c
            return None if known[0] is None else known[0] - offset

        link = _price_link(problem, prep, lb, report, begin)
        step_s, closed, looked = 0.0, False, -1.0
        tb2, tb2_note = self._tb2_ready(cfg), ""
        while True:
            if tb2 and time.monotonic() >= begin + cfg.tb2_share * (stop - begin):
                tb2 = False   # once
                if stop - time.monotonic() >= cfg.tb2_min_s:
                    tb2_note = "; " + self._tb2_phase(problem, prep, lb, seed, stop, report)
            if cfg.max_steps is not None and lb.steps >= cfg.max_steps:
                break
            if cfg.max_steps is None and time.monotonic() + max(2 * step_s, 0.05) > stop:
                break
            t = time.monotonic()
            lb.step(target())
            report.bound(lb.best)   # each step; the runner keeps the improvements
            link.publish()          # throttled
            if t - looked >= REFRESH_S:
                looked = t
                link.adopt()
            step_s = time.monotonic() - t
            if known[0] is not None and lb.best is not None and lb.best >= known[0]:
                closed = True
                break
        link.publish(force=True)
        timings = {**prep.timings, "total_s": time.perf_counter() - t0}
        note = (f"{lb.steps} steps" + tb2_note
                + ("; gap closed: the best plan is optimal" if closed else "")
                + f"; shared prices: {link.summary()}")
        return SolveResult(Status.NO_SOLUTION, lower_bound=lb.best, note=note, timings=timings)

    def _solve_counted(self, problem: Problem, prep, stop: float, seed: int,
                       warm_start: Optional[np.ndarray], report: Reporter, t0: float,
                       meter: Meter, cfg: Settings) -> SolveResult:
        """Deterministic mode: the steps counted in work units (see the module's docstring)."""
        from portfolio.kernels import bound as kbound
        from portfolio.kernels import units
        from portfolio.kernels.bound import LagrangeBound
        from portfolio.kernels.engine import greedy_plan

        offset = kbound.kernel_offset(prep)
        lb = LagrangeBound(problem, prep.rm, cfg.params, seed, offset, deterministic=True)
        known = None if warm_start is None else _clean_cost(problem, warm_start)
        first = units.prepare_units(problem)
        if known is None:   # a greedy plan's cost keeps the first steps' target honest
            sol, ok, _ = greedy_plan(prep, 2, seed)
            known = _clean_cost(problem, prep.expand(sol)) if ok else None
            first += units.greedy_units(prep.rm)

        def refresh() -> None:
            nonlocal known
            if meter.exchanged:
                c = _clean_cost(problem, report.best())
                if c is not None and (known is None or c < known):
                    known = c

        go_on = meter.spend(first)
        refresh()
        iters = lb.p.trws_iters
        fixed = units.sweep_units(prep.rm, iters) + units.star_units(prep.rm, problem)
        step_s, closed, safety = 0.0, False, False
        while go_on and (cfg.max_steps is None or lb.steps < cfg.max_steps):
            if time.monotonic() + max(2 * step_s, 0.05) > stop:   # the safety net only
                safety = True
                break
            t, e0 = time.monotonic(), int(lb.sc.ints[1])
            lb.step(None if known is None else known - offset)
            report.bound(lb.best)
            step_s = time.monotonic() - t
            if known is not None and lb.best is not None and lb.best >= known:
                closed = True
                break
            used = fixed + units.eval_units(int(lb.sc.ints[1]) - e0)
            go_on = meter.spend(max(used, units.MIN_STEP_UNITS))
            refresh()
        timings = {**prep.timings, "total_s": time.perf_counter() - t0}
        note = (f"{lb.steps} steps (deterministic mode: no toulbar2 phase)"
                + ("; gap closed: the best plan is optimal" if closed else "")
                + ("; stopped by the wall-clock safety net before its work was spent"
                   if safety else ""))
        return SolveResult(Status.NO_SOLUTION, lower_bound=lb.best, note=note, timings=timings,
                           safety_net=safety)


def _price_link(problem: Problem, prep, lb, report: Reporter, t0: float):
    """The engine's link to the run's price board (:class:`portfolio.prices.PriceLink`). The board's
    coordinates are ``problem``'s time points; the engine's are its kernel view's, mapped by
    :class:`portfolio.kernels.pricemap.PointMap` (the identity on the runner's presolved problem,
    where the kernels' reduction has nothing left to do). No map: nothing is shared."""
    from portfolio.kernels.pricemap import PointMap
    from portfolio.prices import PriceLink, price_key

    pm = PointMap.of(prep)
    if pm is None:
        return PriceLink(report, None, lb, take_bound=False, t0=t0)
    return PriceLink(report, price_key(problem), lb, take_bound=False, t0=t0,
                     to_board=pm.to_problem, from_board=pm.from_problem)


def _clean_cost(problem: Problem, plan: Optional[np.ndarray]) -> Optional[int]:
    """``plan``'s cost when it is feasible and forbidden-free (a target the bound may meet), or
    None."""
    if plan is None:
        return None
    ev = evaluate(problem, np.asarray(plan, np.int64))
    return int(ev.cost) if ev.feasible and not ev.has_forbidden else None


@hookimpl
def portfolio_backends() -> list[Backend]:
    return [BoundBackend()]
