"""The MaxSAT engine (python-sat) that the ``maxsat`` backend (``plugins/maxsat.py``) runs: a weighted
partial MaxSAT model solved by core-guided RC2.

Why a second exact method next to CP-SAT: RC2 proves optimality by unsatisfiable cores rather than
by LP-guided branch and bound, so where both prove a value they check each other, and where one is
stuck the other may not be. The engine (:class:`MaxSatEngine`) only models and solves a
:class:`Problem` -- a presolved instance or an LNS window, the same thing to it; the driver in
:mod:`portfolio.exact.driver` chooses between the full model and windows by the engine's size estimate.

The encoding (:mod:`.encoding`): one variable per usable strategy of the shared exact model
(:func:`portfolio.exact.model.build_exact_model`), costs as soft clauses after min-sum diffusion,
memory rows as hard MDD clauses (added lazily by default); every weight an exact Python int, MaxSAT cost +
``constant`` == plan cost.

Solving: ``RC2Stratified`` (levels by weight, hardening from the hint's cost and from models that
are real solutions), interrupted by a timer; every level's model that is a real solution is
reported; the bound is the core cost reached before the interrupt, plus the constant. The hint (a
warm start, the incumbent, an LNS window's current plan) sets the oracle's phases and, when it is a
real solution, RC2's upper bound.

Deterministic mode (a :class:`~portfolio.exact.WorkLimit` given, :mod:`portfolio.work`): nothing
reads a clock. Every oracle call runs under a conflict and propagation budget (``solve_limited``
after ``conf_budget``/``prop_budget``), resumed in chunks of ``CHUNK_CONFLICTS`` (the solver keeps
what it learnt) while the call's work lasts; the work is spent as ``UNITS_PER_CONFLICT`` per
conflict plus ``UNITS_PER_KPROP`` per thousand propagations plus ``UNITS_PER_ORACLE_CALL`` per call
(RC2's own Python work between calls); a budget exhausted is the end of the call's work, handled
like the timer's interrupt (the cores so far are genuine: their cost is the bound). The encoding is
charged by size (``ENCODE_UNITS_PER_KLITERAL``), min-sum diffusion by sweeps, not seconds. The
timer stays, at the wall-clock safety net only.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from portfolio.evaluate import evaluate
from portfolio.exact import ExactOutcome, ModelSize, WorkLimit
from portfolio.problem import INT64_MAX, Problem

from .encoding import BUDGET, Infeasible, OutOfTime, OutOfWork, TooBig, encode

MARGIN = 0.15
"""Seconds kept back from the time limit for the interrupt to land and the answer to be decoded."""

UNITS_PER_CONFLICT = 0.02
"""Work units per conflict of the SAT oracle (deterministic mode). With ``UNITS_PER_KPROP`` and
``UNITS_PER_ORACLE_CALL`` and the encoding's constants below, fitted to ``time.process_time()``
over engine calls on presolved B and G (full models) and LNS windows of B, G, K, N and S
(``benchmarks/determinism_exact.py calibrate --engine maxsat``; docs/benchmarks/determinism.md,
"Exact backends"); a unit is about 1 ms of one core."""

UNITS_PER_KPROP = 0.045
"""Work units per thousand propagations of the SAT oracle (see ``UNITS_PER_CONFLICT``)."""

UNITS_PER_ORACLE_CALL = 0.2
"""Work units per oracle call: RC2's Python work around it (cores, totalizers, new clauses)."""

MINIMISE_CONFLICTS = 1000
"""The conflict budget pysat's RC2 gives each SAT call of its core minimisation (its constant:
in deterministic mode that budget is set per call here, in place of pysat's ``conf_budget``)."""

CHUNK_CONFLICTS = 20_000
"""Conflicts per resumed piece of one oracle call in deterministic mode: the work is spent (and an
exchange point passed) between pieces, so a long SAT call does not hold up the portfolio."""

ENCODE_UNITS_PER_KLITERAL = 1.0
"""Work units per thousand literals of the encoding (built in Python), the lazy memory rows'
clauses included (see ``UNITS_PER_CONFLICT``)."""

DIFFUSION_UNITS_PER_KEDGE = 30.0
"""Work units per thousand edges and sweep of min-sum diffusion (a few numpy steps per two-node
table and sweep)."""

MDD_UNITS_PER_KSTEP = 1.5
"""Work units per thousand steps (recursive calls) of the memory rows' MDD construction, which
may build and drop most of a row that turns out too big; the steps allowed follow from the work
left (``max_steps``), so that a row never outlasts the call's work."""

MEMORY_UNITS_PER_KCELL = 0.18
"""Work units per thousand cells (time points x nodes) of the memory rows' analysis."""

CALL_UNITS = 20.0
"""Work units per engine call: the shared exact model, the WCNF and RC2's set-up."""

DIFFUSION_SWEEPS = 200
"""Most sweeps of min-sum diffusion in deterministic mode (the timed mode's cap as well)."""

DIFFUSION_SHARE = 0.1
"""Share of a call's work units that min-sum diffusion may take (deterministic mode), as the
timed mode gives it a share of the time."""


# ------------------------------------------------------------------------------------------ solving
class WorkSpent(Exception):
    """Deterministic mode: the engine call's work units are spent inside RC2."""


def _rc2_class():
    """RC2Stratified that hands every level's model to a callback and never blocks an interrupt."""
    from pysat.examples.rc2 import RC2Stratified

    class _RC2(RC2Stratified):
        on_model: Optional[Callable[[list[int]], None]] = None
        stopped = False
        work: Optional[WorkLimit] = None          # deterministic mode: count, never time
        on_out_of_work: Optional[Callable[[], None]] = None
        minimising = False                        # inside pysat's core minimisation (its budget)
        counts = (0, 0)                           # the oracle's conflicts, propagations so far
        calls = 0

        def _call_oracle(self, assumptions=[], expect_interrupt=False):  # noqa: B006 (pysat's API)
            # pysat clears an interrupt to finish the current core (minimisation, exhaustion: many
            # more SAT calls); once stopped, every call returns "unknown" at once instead.
            if self.stopped:
                return None
            self.calls += 1
            if self.work is not None:
                return self._counted_call(assumptions)
            return super()._call_oracle(assumptions=assumptions, expect_interrupt=True)

        def _counted_call(self, assumptions):
            """One oracle call under conflict and propagation budgets, resumed chunk by chunk
            while the call's work lasts; the work is spent after every chunk."""
            cap = MINIMISE_CONFLICTS if self.minimising else None   # pysat's own budget there
            used, first = 0, True
            while True:
                left = self.work.left()
                chunk = int(min(CHUNK_CONFLICTS, left / UNITS_PER_CONFLICT,
                                cap - used if cap is not None else CHUNK_CONFLICTS))
                if chunk < 1:
                    if cap is None or used < cap:   # the work is over, not pysat's budget
                        self._out_of_work()
                    return None   # pysat's minimisation budget: its own "unknown"
                self.oracle.conf_budget(chunk)
                self.oracle.prop_budget(max(1, int(1000 * left / UNITS_PER_KPROP)))
                result = self.oracle.solve_limited(assumptions=assumptions, expect_interrupt=True)
                stats = self.oracle.accum_stats()
                conflicts, props = int(stats["conflicts"]), int(stats["propagations"])
                c, p = conflicts - self.counts[0], props - self.counts[1]
                self.counts = (conflicts, props)
                used += c
                units = UNITS_PER_CONFLICT * c + UNITS_PER_KPROP * p / 1000
                ok = self.work.spend(units + (UNITS_PER_ORACLE_CALL if first else 0.0))
                first = False
                if result is not None or self.stopped:   # an answer, or the safety net fired
                    return result
                if not ok:
                    self._out_of_work()
                    return None
                if cap is not None and used >= cap:
                    return None

        def _out_of_work(self) -> None:
            """The call's work is spent: record the bound, then leave RC2 at once (returning
            "unknown" would let it read the last core again, which an earlier call left)."""
            if self.on_out_of_work is not None:
                self.on_out_of_work()
            self.stopped = True
            raise WorkSpent()

        def minimize_core(self):
            self.minimising = True
            try:
                super().minimize_core()
            finally:
                self.minimising = False

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
              threads: int, seed: int, on_solution: Callable[[np.ndarray], None],
              work: Optional[WorkLimit] = None) -> ExactOutcome:
        """Encode, then RC2 until optimal or ``time_limit`` (one thread: RC2 is sequential); with
        ``work``, until the call's work units are spent (see the module docstring)."""
        from pysat.formula import WCNF

        start = time.monotonic()
        end = start + max(0.0, time_limit - MARGIN)   # with ``work``: the safety net only
        sweeps = max_steps = None
        per_sweep = DIFFUSION_UNITS_PER_KEDGE * problem.num_edges / 1000
        cells = len(problem.time_points) * problem.num_nodes
        if work is not None:   # diffusion by sweeps, never seconds; memory rows by MDD steps
            sweeps = 0 if not self.diffusion else \
                int(min(DIFFUSION_SWEEPS, DIFFUSION_SHARE * work.left() / max(per_sweep, 1e-9)))
            max_steps = int(1000 * work.left() / MDD_UNITS_PER_KSTEP)
        try:
            enc = encode(problem, self.edge_form, self.limit, memory=self.memory,
                         diffusion=min(10.0, self.diffusion * time_limit), end=end,
                         sweeps=sweeps, max_steps=max_steps)
        except TooBig as exc:
            return ExactOutcome("too-big", note=f"maxsat model above budget: {exc}")
        except Infeasible as exc:
            return ExactOutcome("infeasible", note=str(exc))
        except OutOfWork:
            work.spend(work.left())   # the steps allowed were the work left
            return ExactOutcome("unknown", note="work limit while encoding memory rows")
        except OutOfTime:
            return ExactOutcome("unknown", note="time limit while encoding memory rows")
        stats = dict(enc.stats, encode_s=round(time.monotonic() - start, 3), memory_cells=cells)
        charged_steps = [enc.memory.steps if enc.memory is not None else 0]
        if work is not None:
            work.spend(CALL_UNITS + ENCODE_UNITS_PER_KLITERAL * enc.stats["literals"] / 1000
                       + abs(enc.stats["sweeps"]) * per_sweep
                       + MEMORY_UNITS_PER_KCELL * cells / 1000
                       + MDD_UNITS_PER_KSTEP * charged_steps[0] / 1000)
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
        if work is not None and work.left() <= 0:
            return self._outcome("feasible" if best["plan"] is not None else "unknown", best,
                                 enc.constant, stats, "no work left after encoding")
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
        def on_model(model: list[int]) -> bool:
            plan = enc.plan(model, problem)
            if "first_cost" not in stats:   # how far the solver's first plan is from the hint
                stats["first_cost"] = int(evaluate(problem, plan).cost)
            return offer(plan, report=True)

        rc2.on_model = on_model
        if phases:
            rc2.oracle.set_phases(phases)
        safe = {"cost": 0, "fired": False, "work": False}
        lock = threading.Lock()

        def stop() -> None:
            with lock:
                safe["cost"], safe["fired"] = rc2.cost, True   # every core so far is genuine
                rc2.stopped = True
                rc2.interrupt()

        def out_of_work() -> None:   # deterministic mode: like the timer, without the interrupt
            with lock:
                if not safe["fired"]:
                    safe["cost"], safe["fired"], safe["work"] = rc2.cost, True, True

        rc2.work, rc2.on_out_of_work = work, out_of_work

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
                if work is not None:
                    enc.memory.max_steps = enc.memory.steps + int(
                        1000 * work.left() / MDD_UNITS_PER_KSTEP)
                try:
                    enc.memory.add(broken, clauses, plan)   # lazy rows / cuts: the model broke these
                finally:
                    stats["lazy_literals"] = stats.get("lazy_literals", 0) + sum(map(len, clauses))
                    if work is not None:   # by size and steps; no work left stops the next call
                        steps, charged_steps[0] = enc.memory.steps - charged_steps[0], \
                            enc.memory.steps
                        work.spend(ENCODE_UNITS_PER_KLITERAL * sum(map(len, clauses)) / 1000
                                   + MDD_UNITS_PER_KSTEP * steps / 1000)
                for clause in clauses:
                    if safe["fired"]:   # adding thousands of MDD clauses outlasts the limit by
                        break           # up to 0.7 s; once stopped they are useless
                    rc2.add_clause(clause)
        except WorkSpent:   # the bound and the stop are recorded (out_of_work)
            pass
        except OutOfWork:   # a lazy row outgrew the work left
            out_of_work()
            stats["lazy_error"] = "OutOfWork"
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
                     mdd_nodes=enc.memory.nodes if enc.memory else 0,
                     mdd_steps=enc.memory.steps if enc.memory else 0)
        try:
            counts = rc2.oracle.accum_stats() if rc2.oracle else {}
        except Exception:  # noqa: BLE001 -- statistics only; not every pysat oracle keeps them
            counts = {}
        stats.update(oracle_calls=rc2.calls, conflicts=int(counts.get("conflicts", 0)),
                     propagations=int(counts.get("propagations", 0)))
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
        out = self._outcome(status, best, enc.constant, stats,
                            "work limit" if safe["work"] else "time limit")
        out.bound = enc.constant + bound
        return out

    @staticmethod
    def _outcome(status: str, best: dict, constant: int, stats: dict, note: str) -> ExactOutcome:
        cost = best["cost"]
        return ExactOutcome(status, best["plan"], cost, cost if status == "optimal" else constant,
                            note, stats)

