"""MaxSAT backend (python-sat): a weighted partial MaxSAT model solved by core-guided RC2.

Why a second exact method next to CP-SAT: RC2 proves optimality by unsatisfiable cores rather than
by LP-guided branch and bound, so where both prove a value they check each other, and where one is
stuck the other may not be. The engine (:class:`MaxSatEngine`) only models and solves a
:class:`Problem` -- a presolved instance or an LNS window, the same thing to it; the driver in
:mod:`portfolio.exact.driver` chooses between the full model and windows by the engine's size estimate.

The encoding (:mod:`.maxsat_encoding`): one variable per usable strategy of the shared exact model
(:func:`portfolio.exact.model.build_exact_model`), costs as soft clauses after min-sum diffusion,
memory rows as hard MDD clauses (added lazily by default); every weight an exact Python int, MaxSAT cost +
``constant`` == plan cost.

Solving: ``RC2Stratified`` (levels by weight, hardening from the hint's cost and from models that
are real solutions), interrupted by a timer; every level's model that is a real solution is
reported; the bound is the core cost reached before the interrupt, plus the constant.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from portfolio.backend import BackendMeta
from portfolio.evaluate import evaluate
from portfolio.exact import ExactBackend, ExactOutcome, ModelSize
from portfolio.hookspecs import backends_hook
from portfolio.problem import INT64_MAX, Problem

from .maxsat_encoding import BUDGET, Infeasible, OutOfTime, TooBig, encode

MARGIN = 0.15
"""Seconds kept back from the time limit for the interrupt to land and the answer to be decoded."""


# ------------------------------------------------------------------------------------------ solving
def _rc2_class():
    """RC2Stratified that hands every level's model to a callback and never blocks an interrupt."""
    from pysat.examples.rc2 import RC2Stratified

    class _RC2(RC2Stratified):
        on_model: Optional[Callable[[list[int]], None]] = None
        stopped = False

        def _call_oracle(self, assumptions=[], expect_interrupt=False):  # noqa: B006 (pysat's API)
            # pysat clears an interrupt to finish the current core (minimisation, exhaustion: many
            # more SAT calls); once stopped, every call returns "unknown" at once instead.
            if self.stopped:
                return None
            return super()._call_oracle(assumptions=assumptions, expect_interrupt=True)

        def next_level(self):
            """pysat's level choice (BLO + diversity) with suffix sums: the original recomputes
            them per candidate level, quadratic in the distinct weights (tens of thousands here
            after diffusion, minutes of pure Python that no interrupt can stop)."""
            if self.levl >= len(self.blop):
                self.levl = None
                return
            blop, wstr, last = self.blop, self.wstr, len(self.blop) - 1
            count = [0] * (last + 2)
            total = [0] * (last + 2)
            for k in range(last, -1, -1):
                count[k] = count[k + 1] + len(wstr[blop[k]])
                total[k] = total[k + 1] + blop[k] * len(wstr[blop[k]])
            diversity = (self.bstr >> 1) & 1
            while self.levl < last:
                numr, sumr = count[self.levl + 1], total[self.levl + 1]
                if blop[self.levl] > sumr and sumr != 0:
                    break
                if diversity and numr / float(last - self.levl) > self.sdiv:
                    break
                self.levl += 1

        def finish_level(self):
            """pysat's end of a level, except that the level's model lowers the upper bound (and
            so hardens clauses) only when ``on_model`` says its plan is a real solution: with lazy
            memory rows a model may break memory, and its cost bounds nothing."""
            self.garbage = set()
            model = self.oracle.get_model()
            if self.on_model is None or self.on_model(model):
                rest = sum(w * len(self.wstr[w]) for w in self.blop[self.levl + 1:])
                cost = sum(w for s, w in self.owgt.items()
                           if abs(s) > len(model) or model[abs(s) - 1] != s)
                self.ubnd = min(self.ubnd, cost)
                for s in self.sels + self.sums:
                    if self.wght[s] > min(rest, self.ubnd - self.cost):
                        self.oracle.add_clause([s])
                        self.garbage.add(s)
            self.filter_assumps()

    return _RC2


@dataclass
class MaxSatEngine:
    """The MaxSAT model of a :class:`Problem`, solved by RC2 (stratified, hardening on).

    ``edge_form``: ``"pairs"`` (marginal linking) or ``"direct"`` (binary soft clauses);
    ``exhaust``/``minz``: RC2's core exhaustion and core minimisation; ``solver``: pysat's SAT oracle.
    """

    name: str = "maxsat"
    edge_form: str = "direct"
    exhaust: bool = False
    minz: bool = True
    blo: str = "div"          # "basic" or "div" (cluster stratification is not offered)
    solver: str = "g3"
    diffusion: float = 0.1    # share of the time limit for min-sum diffusion (at most 10 s)
    memory: str = "lazy"      # "lazy" (rows added as models break them) or "eager"
    limit: ModelSize = field(default_factory=lambda: BUDGET)

    def estimate(self, problem: Problem) -> ModelSize:
        """Cheap size from array lengths: clauses per strategy and per edge entry, plus memory.

        Memory, eager: each interval's strategies times the time points it covers (an upper
        estimate of the MDD inputs). Lazy: the row analysis's points x nodes id matrix (a quarter
        of a term per cell); the rows themselves are built during the solve, under the budget.
        """
        strategies = len(problem.node_costs)
        entries = len(problem.edge_costs)
        pairs = entries if self.edge_form == "pairs" else 0
        memory = 0
        if len(problem.time_points) and (problem.point_capacity < INT64_MAX).any():
            if self.memory == "eager":
                lo, hi = problem.interval_point_range
                k = problem.strategy_counts[problem.interval_node]
                memory = int(((hi - lo) * k).sum())
            else:
                memory = len(problem.time_points) * problem.num_nodes // 4
        return ModelSize(variables=strategies + pairs + memory // 4,
                         constraints=2 * strategies + entries + 2 * pairs + memory // 4,
                         terms=4 * strategies + 2 * entries + 4 * pairs + memory)

    def budget(self) -> ModelSize:
        return self.limit

    def solve(self, problem: Problem, time_limit: float, hint: Optional[np.ndarray],
              threads: int, seed: int,
              on_solution: Callable[[np.ndarray], None]) -> ExactOutcome:
        """Encode, then RC2 until optimal or ``time_limit`` (one thread: RC2 is sequential)."""
        from pysat.formula import WCNF

        start = time.monotonic()
        end = start + max(0.0, time_limit - MARGIN)
        try:
            enc = encode(problem, self.edge_form, self.limit, memory=self.memory,
                         diffusion=min(10.0, self.diffusion * time_limit), end=end)
        except TooBig as exc:
            return ExactOutcome("too-big", note=f"maxsat model above budget: {exc}")
        except Infeasible as exc:
            return ExactOutcome("infeasible", note=str(exc))
        except OutOfTime:
            return ExactOutcome("unknown", note="time limit while encoding memory rows")
        stats = dict(enc.stats, encode_s=round(time.monotonic() - start, 3))
        best: dict = {"plan": None, "cost": None}

        def offer(plan: np.ndarray, report: bool) -> bool:
            """Keep (and report) an improving plan; True when the plan is a real solution."""
            ev = evaluate(problem, plan)
            if not ev.feasible or ev.has_forbidden:
                return False
            if best["cost"] is None or ev.cost < best["cost"]:
                best["plan"], best["cost"] = plan.copy(), ev.cost
                if report:
                    on_solution(plan.copy())
            return True

        upper = enc.objective()
        phases: list[int] = []
        if hint is not None:
            plan = np.asarray(hint, dtype=np.int64)
            if offer(plan, report=False):
                upper = min(upper, best["cost"] - enc.constant)
            gvars = enc.var_of[problem.strategy_offsets[:-1] + plan]
            chosen = set(gvars[gvars > 0].tolist())
            phases = [v if v in chosen else -v for v in enc.var_of[enc.var_of > 0].tolist()]
        if time.monotonic() >= end:
            return self._outcome("unknown", best, enc.constant, stats, "no time left after encoding")
        wcnf = WCNF()
        wcnf.nv = enc.top
        wcnf.extend(enc.hard)
        for clause, weight in enc.soft:
            wcnf.append(clause, weight=weight)
        if not enc.soft:   # RC2Stratified never calls its oracle without a soft clause
            wcnf.append([enc.new()], weight=1)
            wcnf.nv = enc.top
        rc2 = _rc2_class()(wcnf, solver=self.solver, blo=self.blo, exhaust=self.exhaust,
                           minz=self.minz)
        rc2.ubnd = min(rc2.ubnd, upper)   # hardening may use the hint's cost (sound: optimum <= it)
        rc2.on_model = lambda model: offer(enc.plan(model, problem), report=True)
        if phases:
            rc2.oracle.set_phases(phases)
        safe = {"cost": 0, "fired": False}
        lock = threading.Lock()

        def stop() -> None:
            with lock:
                safe["cost"], safe["fired"] = rc2.cost, True   # every core so far is genuine
                rc2.stopped = True
                rc2.interrupt()

        timer = threading.Timer(max(0.0, end - time.monotonic()), stop)
        timer.daemon = True
        timer.start()
        rounds, proven, infeasible = 0, False, False
        try:
            while True:
                rounds += 1
                model = rc2.compute(expect_interrupt=True)
                if model is not None and safe["fired"]:
                    offer(enc.plan(model, problem), report=True)
                if model is None or safe["fired"]:
                    infeasible = model is None and not safe["fired"]
                    break
                plan = enc.plan(model, problem)
                broken = enc.memory.violated(plan) if enc.memory is not None else []
                if not broken:
                    offer(plan, report=True)
                    proven = True
                    break
                clauses: list[list[int]] = []
                enc.memory.add(broken, clauses, plan)     # lazy rows / cuts: the model broke these
                for clause in clauses:
                    if safe["fired"]:   # adding thousands of MDD clauses outlasts the limit by
                        break           # up to 0.7 s; once stopped they are useless
                    rc2.add_clause(clause)
        except (TooBig, Infeasible, OutOfTime) as exc:  # a lazy row: budget, cannot fit, time
            infeasible = isinstance(exc, Infeasible)
            if not infeasible:
                stop()
            stats["lazy_error"] = type(exc).__name__
        finally:
            timer.cancel()
            with lock:
                fired = safe["fired"]
        bound = safe["cost"] if fired else rc2.cost
        stats.update(solve_s=round(time.monotonic() - start - stats["encode_s"], 3), rounds=rounds,
                     lazy_rows=len(enc.memory.done) if enc.memory else 0,
                     relaxed_rows=len(enc.memory.relaxed) if enc.memory else 0,
                     cover_cuts=enc.memory.cuts if enc.memory else 0,
                     mdd_nodes=enc.memory.nodes if enc.memory else 0)
        rc2.delete()
        if proven and not fired:
            out = self._outcome("optimal", best, enc.constant, stats, "")
            if out.cost is None or out.cost != enc.constant + bound:
                # the model and the proof disagree: a bug, never a silent wrong claim
                out.status, out.note, out.bound = "feasible", f"rc2 cost {bound} != plan cost", None
            return out
        if infeasible:
            return ExactOutcome("infeasible", stats=stats,
                                note="no plan without forbidden choices fits in memory")
        status = "feasible" if best["plan"] is not None else "unknown"
        out = self._outcome(status, best, enc.constant, stats, "time limit")
        out.bound = enc.constant + bound
        return out

    @staticmethod
    def _outcome(status: str, best: dict, constant: int, stats: dict, note: str) -> ExactOutcome:
        cost = best["cost"]
        return ExactOutcome(status, best["plan"], cost, cost if status == "optimal" else constant,
                            note, stats)


# ------------------------------------------------------------------------------------------ backend
class MaxSatBackend(ExactBackend):
    name = "maxsat"
    description = "python-sat RC2 (core-guided MaxSAT): exact on presolved instances, LNS windows above"
    meta = BackendMeta(engines=("python-sat", "numba", "numpy"), requirement="python-sat>=1.8.dev13",
                       requires=("pysat", "pysat.examples", "pysat.examples.rc2"))
    engine_type = MaxSatEngine


portfolio_backends = backends_hook(MaxSatBackend)
