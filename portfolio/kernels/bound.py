"""Certified Lagrangian lower bounds: how far can a plan be from the optimum?

The bound (issue 13). Relax every memory constraint ``usage_t(x) <= cap_t`` with a price
``lambda_t >= 0``. For every plan ``x`` that meets the constraints the priced objective
``L(x, lambda) = cost(x) + sum_t lambda_t (usage_t(x) - cap_t)`` is at most ``cost(x)``, so
``min_x L(x, lambda)`` (over *all* plans) is at most the optimum. The inner problem has no memory
left: it is a pairwise min-sum problem whose unaries carry the prices. Any *reparametrisation* of
it (messages ``m`` added to a node's unary and subtracted from the edge term, the TRW-S messages
here) leaves every plan's value unchanged, and splitting the sum into node stars (each binary edge
given to its later node in the TRW-S order) gives

    min_x L(x, lambda) >= const + sum_i min_s [theta_i(s) + sum_{later o} m_{o->i}(s)
                                + sum_{earlier o} min_t (c_io(s, t) - m_{i->o}(t))]
                             + sum_{general edges} min entry,

because each star's part of ``L(x)`` is at least its minimum (every message appears once with
``+`` in one star and once with ``-`` in the other, so the reparametrisation is exact for *any*
message values; TRW-S only makes them good). ``const = sum_t lambda_t (base_t - cap_t)``.

Why the arithmetic is safe: everything is computed in float64 rounded toward -inf at every step.
Each sum or product is formed in round-to-nearest, its exact rounding error is computed (TwoSum,
Dekker's TwoProduct), and when the rounded result lies above the exact one it is moved one float
down (``nextafter(r, -inf)``); round-to-nearest never skips a float, so that float is below the
exact value. Exact results stay exact, so integer data with integer (floored) messages and zero
prices gives the exact integer star bound. All operations used (sum, minimum, product of
non-negative factors, product of the exact price with a down-rounded integer) are monotone in
their inputs, so by induction every computed quantity is at most its exact real counterpart, and
the result is floored to an integer at the end. Integers above 2**53 are converted downwards too.
Prices are any float64 values >= 0 (taken exactly as they are), so subgradient steps computed in
ordinary floating point cannot invalidate the bound; only the bound evaluation is certified.

Forbidden entries (``pen`` in the kernel view, i.e. cost exactly 10**18) and strategies that
arc consistency proved unusable without one are +inf: the star bound is a bound over plans
without forbidden choices. A plan *with* one costs at least ``10**18 + sum_terms min(0, term
minimum)`` (see :func:`forbidden_floor`); the final bound is the smaller of the two, so it is
valid also when no forbidden-free feasible plan exists (the star bound is then often +inf and the
floor takes over). On a presolved problem the runner maps plans through presolve, whose guarantee
covers forbidden-free plans; with the contest's non-negative costs the floor 10**18 covers the
rest. Adding the problem's ``cost_offset`` turns a bound of the (reduced) problem's objective into
a bound of the original optimum, since presolve moved exactly that much cost into the offset.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
from .jit import kernel

from ..problem import FORBIDDEN, Problem
from . import incremental as inc
from . import reparam
from . import search as se
from . import trws as tw
from .model import CAP_UNLIMITED, KModel
from .steps import StallHalving, blas_dot, piece_prices, sum_dot

INF = np.inf


# ------------------------------------------------------------------------------ directed rounding
@kernel
def two_sum(a, b):  # pragma: no cover - numba
    """(s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth's TwoSum, finite inputs)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@kernel
def add_dn(a, b):  # pragma: no cover - numba
    """A float <= a + b (exact reals); exactly a + b when that is a float (TwoSum tells)."""
    if a == INF or b == INF:
        return INF
    s, e = two_sum(a, b)
    if s == INF or s == -INF:
        return np.nextafter(s, -INF)
    if e >= 0.0:
        return s
    return np.nextafter(s, -INF)


@kernel
def add_up(a, b):  # pragma: no cover - numba
    """A float >= a + b (finite inputs)."""
    s, e = two_sum(a, b)
    if e <= 0.0 and s != -INF:
        return s
    return np.nextafter(s, INF)


@kernel
def _split(a):  # pragma: no cover - numba
    c = 134217729.0 * a   # 2**27 + 1 (Veltkamp)
    hi = c - (c - a)
    return hi, a - hi


@kernel
def mul_dn(a, b):  # pragma: no cover - numba
    """A float <= a * b (finite inputs below 2**990); exact when the product is a float
    (Dekker's TwoProduct gives the rounding error exactly)."""
    p = a * b
    if p == 0.0:
        return p
    if abs(p) < 1e-250:   # near underflow the error term is not exact: just step down
        return np.nextafter(p, -INF)
    ah, al = _split(a)
    bh, bl = _split(b)
    e = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    if e >= 0.0:
        return p
    return np.nextafter(p, -INF)


@kernel
def int_dn(x):  # pragma: no cover - numba
    """A float <= the int64 ``x`` (|x| < 2**62; exact up to 2**53)."""
    f = np.float64(x)
    if np.int64(f) > x:
        f = np.nextafter(f, -INF)
    return f


# ------------------------------------------------------------------------------ the bound kernel
@kernel
def piece_prices_dn(m, lam):  # pragma: no cover - numba
    """(per usage piece a float <= the sum of ``lam`` over its points, a float <= the constant
    ``sum_t lam_t (base_t - cap_t)``): the priced parts of ``L(x, lam)`` rounded down."""
    npts = len(m.base)
    # piece prices: sum of lam over [lo, hi), from a downward and an upward prefix sum
    cs_dn = np.zeros(npts + 1)
    cs_up = np.zeros(npts + 1)
    const = 0.0
    for t in range(npts):
        lt = lam[t]
        cs_dn[t + 1] = add_dn(cs_dn[t], lt)
        cs_up[t + 1] = add_up(cs_up[t], lt)
        if lt != 0.0:
            const = add_dn(const, mul_dn(lt, int_dn(m.base[t] - m.cap[t])))
    npc = len(m.pc_lo)
    wp = np.zeros(max(npc, 1))
    for p in range(npc):
        w = add_dn(cs_dn[m.pc_hi[p]], -cs_up[m.pc_lo[p]])
        wp[p] = w if w > 0.0 else 0.0
    return wp, const


@kernel
def priced_unaries_dn(m, lam):  # pragma: no cover - numba
    """(per strategy a float <= its priced unary ``ncost + sum_p price_p * use_p``, +inf for
    strategies that are dead or forbidden; the constant of :func:`piece_prices_dn`): the unary
    part of ``L(x, lam)`` rounded down, for solvers that take the priced problem whole."""
    wp, const = piece_prices_dn(m, lam)
    n = len(m.soff) - 1
    out = np.empty(len(m.ncost))
    for i in range(n):
        so = m.soff[i]
        for s in range(m.soff[i + 1] - so):
            if not m.alive[so + s] or m.ncost[so + s] >= m.pen:
                out[so + s] = INF
                continue
            v = np.float64(m.ncost[so + s])   # < pen <= 2**53: exact
            for p in range(m.pc_off[i], m.pc_off[i + 1]):
                if wp[p] != 0.0:
                    v = add_dn(v, mul_dn(wp[p], int_dn(m.pc_use[m.pc_uoff[p] + s])))
            out[so + s] = v
    return out, const


@kernel
def star_bound(m, lam, msg, pos, rev, moff):  # pragma: no cover - numba
    """Certified lower bound (float, rounded down) of ``min_x L(x, lam)`` over plans of the kernel
    model ``m`` without forbidden choices; +inf when such a plan cannot exist. ``msg`` are TRW-S
    messages (any finite values are valid; non-finite ones are read as 0)."""
    n = len(m.soff) - 1
    wp, const = piece_prices_dn(m, lam)
    clean = msg.copy()
    for j in range(len(clean)):
        if not np.isfinite(clean[j]):
            clean[j] = 0.0
        else:
            clean[j] = np.floor(clean[j])   # integer messages keep integer sums exact
    total = const
    pen = m.pen
    for i in range(n):
        so = m.soff[i]
        k = m.soff[i + 1] - so
        best = INF
        for s in range(k):
            if not m.alive[so + s] or m.ncost[so + s] >= pen:
                continue
            v = np.float64(m.ncost[so + s])   # < pen <= 2**53: exact
            for p in range(m.pc_off[i], m.pc_off[i + 1]):
                if wp[p] != 0.0:
                    v = add_dn(v, mul_dn(wp[p], int_dn(m.pc_use[m.pc_uoff[p] + s])))
            for q in range(m.inc_off[i], m.inc_off[i + 1]):
                o = m.inc_other[q]
                if pos[o] > pos[i]:
                    v = add_dn(v, clean[moff[q] + s])
                else:
                    oo = m.soff[o]
                    ko = m.soff[o + 1] - oo
                    b = m.eoff[m.inc_edge[q]] + s * m.inc_ms[q]
                    mo = m.inc_mo[q]
                    rq = rev[q]
                    mn = INF
                    for t in range(ko):
                        if not m.alive[oo + t]:
                            continue
                        c = m.ecost[b + t * mo]
                        if c >= pen:
                            continue
                        x = add_dn(np.float64(c), -clean[moff[rq] + t])
                        if x < mn:
                            mn = x
                    v = add_dn(v, mn)
                if v == INF:
                    break
            if v < best:
                best = v
        if best == INF:
            return INF
        total = add_dn(total, best)
    # general edges (self-loops, hyperedges): their least allowed entry
    ne = len(m.eoff) - 1
    is_bin = np.zeros(ne, np.bool_)
    for q in range(len(m.inc_edge)):
        is_bin[m.inc_edge[q]] = True
    for e in range(ne):
        if is_bin[e]:
            continue
        mn = INF
        for j in range(m.eoff[e], m.eoff[e + 1]):
            c = m.ecost[j]
            if c < pen and np.float64(c) < mn:
                mn = np.float64(c)
        if mn == INF:
            return INF
        total = add_dn(total, mn)
    return total


def undominated_points(m: KModel) -> np.ndarray:
    """Mask of the time points worth a price: limited and not dominated by another point.

    Point ``t`` is dominated by ``u`` when every piece live at ``t`` is live at ``u`` and
    ``base_t - cap_t <= base_u - cap_u`` (ties broken by index, so the relation has no cycles):
    pieces hold non-negative usage, so ``usage_t(x) - cap_t <= usage_u(x) - cap_u`` for every plan
    and moving ``t``'s price onto ``u`` never lowers ``L(x, lambda)``. The dual optimum is therefore
    reached with prices on the undominated points only, and the subgradient steps search a space
    a quarter to a half smaller (fewer zig-zags between neighbours that bind together). Validity
    does not depend on this mask: any prices >= 0 give a bound.

    The pieces live at ``t`` are live on the whole window ``[max lo, min hi)`` of those pieces, so
    ``t`` is undominated when its (slack, index) is the largest among limited points in its window
    (range maximum by a sparse table).
    """
    npts = len(m.base)
    limited = m.cap < CAP_UNLIMITED
    if npts == 0:
        return limited
    lo_w = np.zeros(npts, np.int64)
    hi_w = np.full(npts, npts - 1, np.int64)
    for lo, hi in zip(m.pc_lo.tolist(), m.pc_hi.tolist()):
        if hi > lo:
            np.maximum(lo_w[lo:hi], lo, out=lo_w[lo:hi])
            np.minimum(hi_w[lo:hi], hi - 1, out=hi_w[lo:hi])
    slack = m.base - m.cap            # int64: both below 2**61
    rank = np.empty(npts, np.int64)
    rank[np.lexsort((np.arange(npts), slack))] = np.arange(npts)
    rank[~limited] = -1
    table = [rank]
    while (1 << len(table)) <= npts:
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    length = hi_w - lo_w + 1
    level = np.floor(np.log2(length)).astype(np.int64)
    best = np.full(npts, -1, np.int64)
    for k in np.unique(level).tolist():
        sel = level == k
        a, b = lo_w[sel], hi_w[sel] - (1 << k) + 1
        best[sel] = np.maximum(table[k][a], table[k][b])
    return limited & (rank == best)


def _negative_minima(values: np.ndarray, offsets: np.ndarray) -> int:
    """Sum (exact integers) of the negative least entries of the non-empty segments of ``values``
    that ``offsets`` delimits."""
    if not len(values):
        return 0
    mins = np.minimum.reduceat(values, offsets[:-1][np.diff(offsets) > 0])
    return sum(int(x) for x in mins[mins < 0])


def forbidden_floor(problem: Problem) -> int:
    """A lower bound on the cost of every plan that makes a forbidden choice (exact integers):
    one term is exactly 10**18 and every other term is at least its least entry."""
    neg = (_negative_minima(problem.node_costs, problem.strategy_offsets)
           + _negative_minima(problem.edge_costs, problem.edge_cost_offsets))
    return FORBIDDEN + neg + int(problem.cost_offset)


def certify(problem: Problem, value: float, offset: Optional[int] = None) -> int:
    """The integer bound of ``problem``'s optimum from a (down-rounded) kernel bound ``value``;
    ``offset`` is the constant the kernel objective leaves out (default: the problem's)."""
    floor = forbidden_floor(problem)
    if not math.isfinite(value):
        return floor
    offset = int(problem.cost_offset) if offset is None else int(offset)
    return min(math.floor(value) + offset, floor)


def kernel_offset(prep) -> int:
    """The constant between ``prep.rm``'s objective and ``prep.problem``'s, for forbidden-free
    plans: the offset of the problem the reduced kernel view was built from (the kernels' own
    reduction may run presolve steps that move cost into its offset)."""
    pre = getattr(prep.red, "presolved", None)
    if pre is not None and getattr(pre, "reduced", None) is not None:
        return int(pre.reduced.cost_offset)
    return int(prep.problem.cost_offset)


# ------------------------------------------------------------------------------ subgradient driver
@dataclass
class BoundParams:
    trws_iters: int = 2       # TRW-S passes between two price steps
    beta: float = 0.5         # Polyak step factor, halved after ``stall`` steps without progress
    stall: int = 4
    min_beta: float = 1e-4    # below it the prices restart from the best ones with beta reset
    descend: bool = True      # improve TRW-S's labelling by priced descent before the subgradient
    momentum: float = 0.0     # deflected subgradient: direction = g + momentum * previous direction
    undominated: bool = True  # price only the undominated time points (see undominated_points)


class LagrangeBound:
    """Prices on time points improved by projected subgradient steps; the best certified bound is
    kept. Works on a kernel model (the functional-merged view of ``Prepared``)."""

    def __init__(self, problem: Problem, m: KModel, params: Optional[BoundParams] = None,
                 seed: int = 0, offset: Optional[int] = None, deterministic: bool = False) -> None:
        """``m`` is a kernel view of ``problem`` (possibly reduced: then ``offset`` is the
        constant its objective leaves out, see :func:`kernel_offset`). ``deterministic``: the
        subgradient's dot products do not depend on the machine's thread count (deterministic
        mode; BLAS splits long ones over every core)."""
        self.problem, self.m = problem, m
        self.dot = sum_dot if deterministic else blas_dot
        self.offset = int(problem.cost_offset) if offset is None else int(offset)
        self.p = params or BoundParams()
        n = len(m.soff) - 1
        self.n = n
        self.order = np.arange(n, dtype=np.int64)
        self.pos, self.rev, self.moff, self.gamma = tw.trws_setup(m, self.order)
        self.theta = np.zeros(len(m.ncost))
        self.msg = np.zeros(int(self.moff[-1]))
        self.lab = np.zeros(n, np.int64)
        self.hat = np.zeros(int(np.diff(m.soff).max(initial=1)))
        self.limited = m.cap < CAP_UNLIMITED
        self.priced = undominated_points(m) if self.p.undominated else self.limited
        self.lam = np.zeros(len(m.base))
        self.dir = np.zeros(len(m.base))
        self.best_lam = self.lam.copy()
        self.best_msg = self.msg.copy()   # the messages that certified ``best`` at ``best_lam``
        self.beta_rule = StallHalving(self.p.beta, self.p.stall)
        self.best = min(self.offset, forbidden_floor(problem)) if n == 0 else None
        self.steps = 0
        self.sc = inc.make_scratch(m, seed)
        self.zero = np.zeros(max(len(m.pc_lo), 1))
        self.history: list[tuple[float, int]] = []   # (seconds, best bound) when it improved
        self.t0 = time.monotonic()

    def _prices(self) -> np.ndarray:
        return piece_prices(self.m, self.lam, self.zero)

    def evaluate(self) -> float:
        """Certified bound (down-rounded float, kernel objective) at the current prices/messages."""
        return float(star_bound(self.m, self.lam, self.msg, self.pos, self.rev, self.moff))

    def step(self, ub: Optional[int]) -> Optional[int]:
        """TRW-S at the current prices, certify, then one projected subgradient step towards
        ``ub`` (a known plan's cost in the kernel objective). Returns the certified bound."""
        m, p = self.m, self.p
        if self.n == 0:   # nothing to choose: the cost is the offset (when memory allows)
            self.steps += 1
            return self.best
        wp = self._prices()
        tw.unaries(m, wp, self.theta)
        tw.trws_iterate(m, self.theta, self.order, self.pos, self.rev, self.moff, self.gamma,
                        self.msg, self.lab, p.trws_iters, self.hat)
        value = self.evaluate()
        bound = certify(self.problem, value, self.offset)
        if self.best is None or bound > self.best:
            self.best = bound
            self.best_lam = self.lam.copy()
            self.best_msg = self.msg.copy()
            self.history.append((time.monotonic() - self.t0, bound))
        self.beta_rule.observe(value)
        if self.beta_rule.beta < p.min_beta:
            self.lam = self.best_lam.copy()
            self.beta_rule.restart(p.beta * 0.5, forget_best=False)
        x = self.lab.copy()
        if p.descend:
            tx, dx = inc.build_tree(m, x)
            se.descend_all(m, x, tx, dx, wp, False, self.sc, self.order, 0, 0, 0)
        g = inc.slack_values(m, x).astype(np.float64)
        g[~self.priced] = 0.0
        if p.momentum > 0.0:
            g += p.momentum * self.dir
        g[(self.lam <= 0.0) & (g < 0.0)] = 0.0
        self.dir = g
        gg = self.dot(g, g)
        self.steps += 1
        if gg == 0.0 or not math.isfinite(value):
            return bound
        primal = float(inc.plan_cost(m, x)[0]) + self.dot(self.lam, g)
        target = float(ub) if ub is not None else primal
        gap = target - value
        if gap <= 0:
            gap = 1e-3 * abs(target) + 1.0
        step = self.beta_rule.beta * gap / gg
        np.maximum(self.lam + step * g, 0.0, out=self.lam)
        return bound

    def adopt(self, lam: np.ndarray, bound: Optional[int] = None) -> None:
        """Go on from prices ``lam`` found elsewhere (one per time point of this model, >= 0: any
        such prices are valid, every later step certifies its own bound). With ``bound`` (what
        they certified there, in the problem's objective) they also become the best prices when
        it beats ``best``: ``best`` then holds that bound and ``best_msg`` the current messages,
        which are valid but did not certify it. The step size is kept; the stall count restarts."""
        lam = np.asarray(lam, dtype=np.float64)
        if lam.shape != self.lam.shape:
            raise ValueError(f"{len(lam)} prices for a model of {len(self.lam)} time points")
        if not np.isfinite(lam).all():
            raise ValueError("prices must be finite")
        self.lam = np.maximum(lam, 0.0)
        self.dir = np.zeros_like(self.lam)
        self.beta_rule.restart(self.beta_rule.beta, forget_best=True)
        if bound is not None and (self.best is None or int(bound) > self.best):
            self.best = int(bound)
            self.best_lam = self.lam.copy()
            self.best_msg = self.msg.copy()
            self.history.append((time.monotonic() - self.t0, self.best))

    def settle(self, iters: int = 0) -> tuple[Optional[int], np.ndarray, np.ndarray]:
        """(best certified bound, a copy of the prices that gave it, the TRW-S messages
        that certified it, after ``iters`` more passes when those raise the star bound): what a stronger solver of the priced problem should
        start from (any prices >= 0 give a bound; these gave the best star bound, the current
        ones may be mid-zigzag, and the messages reparametrise the problem so that its unary and
        edge minima already sum to the best star bound). With ``iters`` the best prices and
        messages become the current ones again and the bound may rise."""
        lam, msg = self.best_lam.copy(), self.best_msg.copy()
        if iters <= 0 or self.n == 0:
            return self.best, lam, msg
        self.lam, self.msg = lam.copy(), msg.copy()
        before = self.evaluate()
        tw.unaries(self.m, self._prices(), self.theta)
        tw.trws_iterate(self.m, self.theta, self.order, self.pos, self.rev, self.moff, self.gamma,
                        self.msg, self.lab, iters, self.hat)
        after = self.evaluate()
        if after > before:   # TRW-S passes need not raise the star bound: keep the better
            msg = self.msg.copy()
            bound = certify(self.problem, after, self.offset)
            if self.best is None or bound > self.best:
                self.best = bound
        return self.best, lam, msg

    def best_unaries(self) -> np.ndarray:
        """Per strategy: its node cost plus its usage priced at the best prices so far (float, as
        TRW-S sees it): the priced problem's unaries for a caller outside the kernels."""
        theta = np.zeros(len(self.m.ncost))
        tw.unaries(self.m, piece_prices(self.m, self.best_lam, self.zero), theta)
        return theta

    def message_shifts(self, msg: np.ndarray) -> Optional[tuple[np.ndarray, dict]]:
        """Messages ``msg`` (from :meth:`settle`) as integer shifts of the unaries and binary edges
        (:func:`.reparam.message_shifts`, in this bound's TRW-S order): what a solver of the priced
        problem outside the kernels starts from."""
        return reparam.message_shifts(self.m, msg, self.pos, self.moff, self.rev)

    def run(self, stop: float, ub: Optional[int] = None, max_steps: Optional[int] = None,
            ub_fn=None) -> Optional[int]:
        """Steps until ``stop`` (a ``time.monotonic()`` value; or exactly ``max_steps`` steps);
        ``ub_fn()`` may refresh the target."""
        step_s = 0.0
        while True:
            if max_steps is not None and self.steps >= max_steps:
                break
            if max_steps is None and time.monotonic() + step_s > stop:
                break
            if ub_fn is not None:
                fresh = ub_fn()
                if fresh is not None and (ub is None or fresh < ub):
                    ub = fresh
            t = time.monotonic()
            self.step(ub)
            step_s = time.monotonic() - t
        return self.best


def warmup() -> float:
    """Compile (or load from numba's cache) the bound kernels on the bundled example; seconds."""
    from importlib import resources

    from ..io import load_problem
    from .engine import prepare

    t0 = time.perf_counter()
    problem = load_problem(str(resources.files("portfolio.data") / "example.json"))
    prep = prepare(problem)
    lb = LagrangeBound(problem, prep.rm, offset=kernel_offset(prep))
    lb.run(0.0, max_steps=2)
    priced_unaries_dn(prep.rm, lb.settle(1)[1])
    return time.perf_counter() - t0
