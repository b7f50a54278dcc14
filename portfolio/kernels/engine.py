"""Python-level drivers shared by the greedy and local-search backends.

Everything hot runs in the numba kernels; this module owns state and schedules:

* :func:`prepare` builds the kernel view and the functional-merge reduction (the search works on the
  reduced model and expands plans back);
* :func:`greedy_plan` builds a first feasible plan (two designs, see the function);
* :class:`Searcher` is the anytime search: rounds of (memory-priced TRW-S -> relaxed descent ->
  greedy memory repair -> exact polish), with Lagrangian prices on the time points updated by a
  Polyak subgradient step, interleaved with iterated local search on the best plan. ``run`` keeps
  time (or a fixed number of rounds); ``run_work`` counts work units instead, for deterministic
  mode (:mod:`.units` converts its counts; the ILS share of a round and the chunk sizes then come
  from those counts, never from a clock).

Why this split: the relaxation is good at global structure (which region takes which "sharding")
and the ILS at local memory-constrained trade-offs; both only ever hand over feasible plans.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..presolve.jitlock import STAGES as JIT_STAGES
from ..presolve.jitlock import compile_lock, compile_stages, mark_compiled, trace
from ..problem import Problem
from ..work import Meter
from . import incremental as inc
from . import search as se
from . import trws as tw
from . import units
from .model import KModel, build_model
from .reduce import Reduction, contract, expand, identity, reduce_problem
from .steps import StallHalving, blas_dot, piece_prices, sum_dot


def _plan(a) -> np.ndarray:
    """A plan as the kernels' one argument type: writable, C-contiguous int64 (a read-only or
    strided plan, e.g. from shared memory, would compile every kernel once more)."""
    return np.require(a, np.int64, ["C", "W"])


@dataclass
class Prepared:
    """An instance ready for the kernels: raw view, reduction, reduced view, timings."""

    problem: Problem
    model: KModel
    red: Reduction
    timings: dict = field(default_factory=dict)

    @property
    def rm(self) -> KModel:
        return self.red.model

    def expand(self, rsol: np.ndarray) -> np.ndarray:
        return expand(self.red, rsol)

    def contract(self, plan: np.ndarray) -> Optional[np.ndarray]:
        plan = np.asarray(plan, np.int64)
        if len(plan) != len(self.model.soff) - 1:
            return None
        r = contract(self.red, plan)
        return None if r is None else _plan(r)

    def project(self, plan: np.ndarray) -> Optional[np.ndarray]:
        """A reduced plan close to ``plan`` (its exact counterpart when :meth:`contract` finds
        one; else each merged node keeps its representative's choice where that survived): a
        start for a search, which may cost more or pick what the reduction ruled out. None when
        ``plan`` has the wrong length."""
        plan = np.asarray(plan, np.int64)
        if len(plan) != len(self.model.soff) - 1:
            return None
        pre = self.red.presolved
        return _plan(plan if pre is None else pre.project(plan))


def prepare(problem: Problem, reduce: bool = True) -> Prepared:
    t0 = time.perf_counter()
    model = build_model(problem)
    t1 = time.perf_counter()
    red = reduce_problem(problem, model) if reduce else identity(model)
    t2 = time.perf_counter()
    return Prepared(problem, model, red, {"model_s": t1 - t0, "reduce_s": t2 - t1})


# ------------------------------------------------------------------------------------------ limits
BLOCK_NODES = 10
"""Polish: trees of up to this many nodes move as one block (tree DP), besides single moves."""

BLOCK_WORK = 1_000_000
"""Polish: the work cap of one block move's DP (table entries visited)."""


def repair_rounds(n: int) -> int:
    """Rounds of the greedy memory repair allowed on ``n`` nodes: each round relieves the worst time
    point, so ten per node (plus a hundred for tiny instances) is ample; it stops sooner when
    memory fits or nothing live there can use less."""
    return 10 * n + 100


# ------------------------------------------------------------------------------------------ greedy
def min_volume_plan(m: KModel) -> np.ndarray:
    """Per node the alive strategy with the least usage summed over its pieces (x length)."""
    n = len(m.soff) - 1
    counts = np.diff(m.soff)
    vol = np.zeros(len(m.ncost), np.float64)
    pk = counts[np.repeat(np.arange(n), np.diff(m.pc_off))]
    if len(pk):
        within = np.arange(int(pk.sum())) - np.repeat(np.cumsum(pk) - pk, pk)
        pnode = np.repeat(np.repeat(np.arange(n), np.diff(m.pc_off)), pk)
        length = np.repeat((m.pc_hi - m.pc_lo).astype(np.float64), pk)
        use = m.pc_use[np.repeat(m.pc_uoff, pk) + within]
        np.add.at(vol, m.soff[pnode] + within, use * length)
    return _segment_argmin(np.where(m.alive, vol, np.inf), m.ncost, m.soff)


def cheapest_plan(m: KModel) -> np.ndarray:
    """Per node the alive strategy with the least node cost (edges and memory ignored)."""
    return _segment_argmin(np.where(m.alive, m.ncost.astype(np.float64), np.inf),
                           np.zeros(len(m.ncost)), m.soff)


def _segment_argmin(primary: np.ndarray, secondary: np.ndarray, soff: np.ndarray) -> np.ndarray:
    n = len(soff) - 1
    if n == 0:
        return np.zeros(0, np.int64)
    seg = np.repeat(np.arange(n), np.diff(soff))
    order = np.lexsort((np.arange(len(primary)), secondary, primary, seg))
    return (order[soff[:-1]] - soff[:-1]).astype(np.int64)


def greedy_plan(prep: Prepared, design: int = 1, seed: int = 0,
                blocks: bool = True) -> tuple[np.ndarray, bool, dict]:
    """A first plan on the reduced model: (reduced plan, feasible, stats).

    Design 1 starts from the least-memory plan (feasible on contest instances) and buys cost
    reductions whose extra usage fits, best ratio first. Design 2 starts from the cheapest choice
    per node, lets neighbours agree (descent without memory), then repairs overloaded time points
    switching live nodes to lower usage at the least cost per unit saved, then polishes. Both end
    with an exact descent that keeps memory feasible, so forbidden entries are removed wherever a
    feasible move can; with ``blocks`` it also moves trees of up to 10 nodes (needs the block
    kernels: without, the greedy compiles in a third of the time; see :func:`polish`).
    """
    m = prep.rm
    n = len(m.soff) - 1
    sc = inc.make_scratch(m, seed)
    zero = np.zeros(max(len(m.pc_lo), 1))
    order = np.arange(n, dtype=np.int64)
    stats: dict = {}
    if design == 1:
        sol = min_volume_plan(m)
        t, d = inc.build_tree(m, sol)
        if t[1] > 0:
            boff, bitems, owner = se.stab_index(m, len(m.base))
            se.repair(m, sol, t, d, sc, boff, bitems, owner, repair_rounds(n))
        if t[1] <= 0:
            stats["bought"] = int(se.buy_by_ratio(m, sol, t, d, sc, 50))
    else:
        sol = cheapest_plan(m)
        t, d = inc.build_tree(m, sol)
        se.descend_all(m, sol, t, d, zero, False, sc, order, 0, 0, 0)
        boff, bitems, owner = se.stab_index(m, len(m.base))
        se.repair(m, sol, t, d, sc, boff, bitems, owner, repair_rounds(n))
    feasible = bool(t[1] <= 0)
    if feasible:
        se.descend_all(m, sol, t, d, zero, True, sc, order, BLOCK_NODES if blocks else 0,
                       BLOCK_WORK, 0)
    stats["feasible"] = feasible
    return sol, feasible, stats


def polish(prep: Prepared, rsol: np.ndarray, seed: int = 0) -> np.ndarray:
    """A feasible reduced plan improved by single and block moves (memory kept feasible)."""
    m = prep.rm
    sol = _plan(rsol).copy()
    t, d = inc.build_tree(m, sol)
    se.descend_all(m, sol, t, d, np.zeros(max(len(m.pc_lo), 1)), True, inc.make_scratch(m, seed),
                   np.arange(len(sol), dtype=np.int64), BLOCK_NODES, BLOCK_WORK, 0)
    return sol


class Repairer:
    """Many plans of one prepared instance, each repaired and polished (:meth:`repair_and_polish`);
    the seeded scratch and the index of pieces per time point are built once and reused, so a
    caller with a stream of candidates (the ``toulbar2`` engine) pays for them once.

    Not the runner's repair (:mod:`portfolio.runner.repair`, plain numpy): that one answers before
    anything is compiled and repairs forbidden choices and open nodes of any given plan; this one
    repairs memory only, on the reduced view, at a fraction of the CPU and to far cheaper plans
    (its module docstring and docs/architecture.md, "Two plan repairs", say why both stay)."""

    def __init__(self, prep: Prepared, seed: int = 0) -> None:
        self.prep = prep
        m = prep.rm
        self.scratch = inc.make_scratch(m, seed)
        self.stab = se.stab_index(m, len(m.base))
        self.zero = np.zeros(max(len(m.pc_lo), 1))

    def repair_and_polish(self, rsol: np.ndarray) -> Optional[np.ndarray]:
        """Reduced plan ``rsol`` (feasible or not; not modified) made to fit memory by the greedy
        repair (cheapest cost per unit of memory saved at the worst time point, at most
        :func:`repair_rounds` rounds), then improved by the exact polish (single and block moves
        of up to ``BLOCK_NODES`` nodes, memory kept feasible); None when the repair cannot make
        it fit."""
        m = self.prep.rm
        sol = np.asarray(rsol, dtype=np.int64).copy()
        t, d = inc.build_tree(m, sol)
        if t[1] > 0:
            boff, bitems, owner = self.stab
            _, ok = se.repair(m, sol, t, d, self.scratch, boff, bitems, owner,
                              repair_rounds(len(sol)))
            if not ok:
                return None
        se.descend_all(m, sol, t, d, self.zero, True, self.scratch,
                       np.arange(len(sol), dtype=np.int64), BLOCK_NODES, BLOCK_WORK, 0)
        return sol


# ------------------------------------------------------------------------------------------ search
@dataclass
class SearchParams:
    trws_iters: int = 3          # TRW-S passes per Lagrangian round
    beta: float = 1.0            # Polyak step factor (halved after ``stall`` rounds without a
    stall: int = 5               # better Lagrangian value, reset when it collapses)
    block_nodes: int = 10        # block (tree DP) size in the ILS descents
    polish_blocks: int = 0       # ... and when polishing a repaired candidate (0: none; the
    #                              DP at every node costs more rounds than it gains on N)
    block_work: int = 1_000_000
    kick_min: int = 2
    kick_max: int = 12
    kicks_per_round: int = 100   # ILS kicks after each round in deterministic mode ...
    ils_share: float = 1.0       # ... else ILS time as a multiple of the round's time


class Searcher:
    """Anytime search on ``prep.rm``; the best plan is kept in reduced form.

    ``deterministic``: sums that do not depend on the machine's thread count (:func:`sum_dot`)."""

    def __init__(self, prep: Prepared, seed: int = 0, params: Optional[SearchParams] = None,
                 deterministic: bool = False):
        self.prep = prep
        self.dot = sum_dot if deterministic else blas_dot
        self.m = m = prep.rm
        self.p = params or SearchParams()
        self.n = n = len(m.soff) - 1
        self.sc = inc.make_scratch(m, seed)
        self.rng = np.random.default_rng(seed)
        self.zero = np.zeros(max(len(m.pc_lo), 1))
        self.order = np.arange(n, dtype=np.int64)
        self.pos, self.rev, self.moff, self.gamma = tw.trws_setup(m, self.order)
        self.boff, self.bitems, self.owner = se.stab_index(m, len(m.base))
        self.theta = np.zeros(len(m.ncost))
        self.msg = np.zeros(int(self.moff[-1]))
        self.lab = np.zeros(n, np.int64)
        self.hat = np.zeros(int(np.diff(m.soff).max(initial=1)))
        self.lam = np.zeros(len(m.base))
        self.beta_rule = StallHalving(self.p.beta, self.p.stall)
        self.best: Optional[np.ndarray] = None
        self.best_cost = 0
        self.cur: Optional[np.ndarray] = None
        self.rounds = 0
        self._walk = None
        self._walk_cost = 0
        self.stats = {"rounds": 0, "kicks": 0, "candidates": 0, "adopted": 0}
        self.safety_net = False   # run_work: the wall clock stopped it before its work was spent
        self._evals_per_s = 2e6   # ils_until: strategy evaluations a second, measured as it goes

    # -------------------------------------------------------------- state
    def cost_of(self, rsol: np.ndarray) -> int:
        return int(inc.plan_cost(self.m, _plan(rsol))[0])

    def feasible(self, rsol: np.ndarray) -> bool:
        t, _ = inc.build_tree(self.m, _plan(rsol))
        return bool(t[1] <= 0)

    def offer(self, rsol: np.ndarray) -> bool:
        """Take ``rsol`` as the best plan when feasible and cheaper; returns whether it was."""
        c = self.cost_of(rsol)
        if self.best is not None and c >= self.best_cost:
            return False
        if not self.feasible(rsol):
            return False
        self.best = _plan(rsol).copy()
        self.best_cost = c
        return True

    def _prices(self) -> np.ndarray:
        return piece_prices(self.m, self.lam, self.zero)

    # -------------------------------------------------------------- one Lagrangian round
    def lagrange_round(self) -> Optional[np.ndarray]:
        """Relaxed solve at the current prices, repair + polish, price update.

        Returns the polished feasible candidate (or None when the repair failed).
        """
        m, p = self.m, self.p
        wp = self._prices()
        tw.unaries(m, wp, self.theta)
        tw.trws_iterate(m, self.theta, self.order, self.pos, self.rev, self.moff, self.gamma,
                        self.msg, self.lab, p.trws_iters, self.hat)
        x = self.lab.copy()
        tx, dx = inc.build_tree(m, x)
        se.descend_all(m, x, tx, dx, wp, False, self.sc, self.order, 0, 0, 0)
        g = inc.slack_values(m, x).astype(np.float64)
        cx = float(inc.plan_cost(m, x)[0])
        # the price update needs only x; the candidate is a repaired copy
        y = x
        dc, ok = se.repair(m, y, tx, dx, self.sc, self.boff, self.bitems, self.owner,
                           repair_rounds(self.n))
        cand = None
        if ok:
            se.descend_all(m, y, tx, dx, wp, True, self.sc, self.order, p.polish_blocks,
                           p.block_work, 0)
            se.descend_all(m, y, tx, dx, self.zero, True, self.sc, self.order, p.polish_blocks,
                           p.block_work, 0)
            cand = y
            self.stats["candidates"] += 1
        # Polyak step towards the best known cost
        lval = cx + self.dot(self.lam, g)
        self.beta_rule.observe(lval)
        if self.beta_rule.beta < 1e-3:
            # the step collapsed: jitter the prices and start stepping again (diversification)
            self.lam *= self.rng.uniform(0.75, 1.25, len(self.lam))
            self.beta_rule.restart(0.25, forget_best=True)
        ub = float(self.best_cost) if self.best is not None else abs(cx) * 2 + 1
        gg = self.dot(g, g)
        if gg > 0:
            step = self.beta_rule.beta * max(ub - lval, 1e-3 * abs(ub)) / gg
            np.maximum(self.lam + step * g, 0.0, out=self.lam)
        self.rounds += 1
        self.stats["rounds"] += 1
        return cand

    # -------------------------------------------------------------- ILS on the incumbent
    def ils(self, kicks: int, temperature: float = 0.0, max_evals: int = -1) -> bool:
        """Kick-and-descend from the best plan (continuing the walk while the best is unchanged);
        returns whether the best improved."""
        if self.best is None or kicks <= 0:
            return False
        m, p = self.m, self.p
        if self._walk is None or self._walk_cost != self.best_cost:
            sol = self.best.copy()
            t, d = inc.build_tree(m, sol)
            self._walk = (sol, t, d)
            self._walk_cost = self.best_cost
        sol, t, d = self._walk
        keep = sol.copy()
        k0 = self.sc.ints[4]
        _, best_c, _, improved = se.ils(m, sol, t, d, self.zero, True, self.sc, kicks,
                                        p.kick_min, p.kick_max, p.block_nodes, p.block_work, 0,
                                        temperature, keep, max_evals)
        self.stats["kicks"] += int(self.sc.ints[4] - k0)
        if improved and best_c < 0 and self.offer(keep):
            self._walk_cost = self.best_cost
            return True
        return False

    def ils_until(self, until: float,
                  after_chunk: Optional[Callable[[bool], None]] = None) -> bool:
        """ILS on the best plan until ``until`` (a ``time.monotonic()`` value), in calls sized to
        about 0.1 s of strategy evaluations at the rate measured so far (kept between calls), so
        ``until`` is never overrun by more than a chunk; ``after_chunk(improved)`` after each call.
        Returns whether the best improved."""
        improved = False
        while time.monotonic() < until:
            budget = int(self._evals_per_s * min(0.1, max(until - time.monotonic(), 0.005)))
            k0, e0 = time.monotonic(), self.sc.ints[1]
            better = self.ils(1 << 30, max_evals=budget)
            improved |= better
            spent = time.monotonic() - k0
            if spent > 1e-3:
                self._evals_per_s = max((self.sc.ints[1] - e0) / spent, 1e4)
            if after_chunk is not None:
                after_chunk(better)
        return improved

    # -------------------------------------------------------------- the anytime loop
    def run(self, stop: float, max_rounds: Optional[int] = None,
            on_improve: Optional[Callable[[np.ndarray], None]] = None,
            fetch: Optional[Callable[[], Optional[np.ndarray]]] = None) -> None:
        """Search until ``stop``, a ``time.monotonic()`` value (or exactly ``max_rounds`` rounds,
        deterministic).

        Each round: one Lagrangian round, then ILS on the best plan, for ``kicks_per_round`` kicks
        (deterministic mode) or for ``ils_share`` times the round's duration in chunks sized to
        about 0.1 s, so ``stop`` is never overrun by more than a chunk.
        """
        round_s = 0.0
        while True:
            if max_rounds is not None and self.rounds >= max_rounds:
                break
            if max_rounds is None and time.monotonic() + max(round_s, 0.02) > stop:
                break
            if fetch is not None:
                other = fetch()
                if other is not None and self.offer(other):
                    self.stats["adopted"] += 1
            t0 = time.monotonic()
            cand = self.lagrange_round()
            improved = cand is not None and self.offer(cand)
            round_s = time.monotonic() - t0
            if max_rounds is not None:
                improved |= self.ils(self.p.kicks_per_round)
            else:
                ils_stop = min(time.monotonic() + round_s * self.p.ils_share, stop - 0.05)
                improved |= self.ils_until(ils_stop)
            if improved and on_improve is not None:
                on_improve(self.best)

    def run_work(self, meter: Meter, stop: float,
                 on_improve: Optional[Callable[[np.ndarray], None]] = None,
                 fetch: Optional[Callable[[], Optional[np.ndarray]]] = None) -> None:
        """Deterministic mode's loop: search until ``meter`` says the work is spent.

        Each round: one Lagrangian round, counted as its TRW-S passes over the edge tables, its
        vector work on the prices and its strategy evaluations (:mod:`.units`); then ILS on the best
        plan for ``ils_share`` times those units, in calls capped at ``ILS_CHUNK_UNITS`` worth of
        evaluations and counted by the evaluations they made. ``fetch()`` (the portfolio's plan) is
        offered right after each exchange point and at no other time. ``stop`` (a
        ``time.monotonic()`` value) is the safety net only: reaching it ends the loop with
        ``safety_net`` set, and nothing else here reads a clock.
        """
        sweep = units.sweep_units(self.m, self.p.trws_iters)

        def spend(amount: float) -> bool:
            go_on = meter.spend(amount)
            if meter.exchanged and fetch is not None:
                other = fetch()
                if other is not None and self.offer(other):
                    self.stats["adopted"] += 1
            return go_on

        while True:
            if time.monotonic() >= stop:
                self.safety_net = True
                return
            e0 = int(self.sc.ints[1])
            cand = self.lagrange_round()
            if cand is not None and self.offer(cand) and on_improve is not None:
                on_improve(self.best)
            used = max(sweep + units.eval_units(int(self.sc.ints[1]) - e0), units.MIN_STEP_UNITS)
            if not spend(used):
                return
            left = used * self.p.ils_share
            while left > 0 and self.best is not None:
                if time.monotonic() >= stop:
                    self.safety_net = True
                    return
                e0 = int(self.sc.ints[1])
                cap = int(min(units.ILS_CHUNK_UNITS, left) * units.EVALS_PER_UNIT)
                if self.ils(1 << 30, max_evals=cap) and on_improve is not None:
                    on_improve(self.best)
                spent = units.eval_units(int(self.sc.ints[1]) - e0)
                if spent <= 0:   # nothing left to evaluate (a model without choices)
                    break
                left -= spent
                if not spend(spent):
                    return


STAGES = JIT_STAGES[1:]
"""Compile stages, in dependency order: each compiles (or loads from numba's cache) the kernels the
later ones call, so a backend compiles only the stages it needs (``greedy`` stops after its own)."""


def _example() -> Problem:
    from importlib import resources

    from ..io import load_problem

    return load_problem(str(resources.files("portfolio.data") / "example.json"))


def warmup(upto: str = "search") -> float:
    """Compile (or load from numba's on-disk cache) the kernels of every stage up to ``upto``
    (see ``STAGES``) on the bundled example; returns the seconds spent.

    ``greedy``: the model, the reduction and the greedy's single-move descent (the ``greedy``
    backend's first plan); ``moves``: block and cascade moves (its polish, the search's descents);
    ``trws``: the memory-priced relaxation (also the bound's); ``search``: the iterated local search.
    The benchmark-only kernels (``count_evals``, ``sweep``) and greedy design 1 compile on first use.
    On the benchmark machine a cold cache takes about half a minute for everything (see
    ``benchmarks/compile.py``); a warm one loads in about a second.
    """
    from ..presolve import warm_up as presolve_warm_up

    t0 = time.perf_counter()
    presolve_warm_up()  # prepare() merges with the presolve's kernels (own lock)
    with compile_lock("prepare"):
        trace("prepare stage")
        prep = prepare(_example())
    mark_compiled("prepare")
    start = min_volume_plan(prep.rm)   # feasible on the example: every stage starts from it

    def search() -> None:
        s = Searcher(prep, 0, SearchParams(kicks_per_round=5))
        s.offer(start)
        s.run(time.monotonic() + 60, max_rounds=2)

    calls = {"greedy": lambda: (greedy_plan(prep, 2, blocks=False), inc.plan_cost(prep.rm, start)),
             "moves": lambda: polish(prep, start),
             "trws": lambda: Searcher(prep, 0, SearchParams(kicks_per_round=5)).lagrange_round(),
             "search": search}
    compile_stages({s: calls[s] for s in STAGES[1:STAGES.index(upto) + 1]},
                   after={"search": ("moves", "trws")})
    return time.perf_counter() - t0


def warmup_greedy() -> float:
    """:func:`warmup` of what the greedy backend runs."""
    return warmup("greedy")

