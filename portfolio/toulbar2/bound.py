"""A lower bound from toulbar2 on the Lagrangian-priced problem (issue 21, "Lower bound").

**Why it is a bound.** For prices ``lam >= 0`` on the time points, every plan ``x`` that fits in
memory has ``L(x, lam) = cost(x) + sum_t lam_t (usage_t(x) - cap_t) <= cost(x)``, so
``min_x L(x, lam)`` over *all* plans is at most the optimum (module docstring of
:mod:`portfolio.kernels.bound`). The inner problem has no memory left: a cost-function network
with unaries ``ncost(s) + sum_p price_p * use_p(s)``, the edge tables, and the constant
``sum_t lam_t (base_t - cap_t)``. The ``bound`` backend bounds it by TRW-S stars (the local
polytope); here the network is first reparametrised by the TRW-S messages
(:func:`portfolio.kernels.reparam.message_shifts`, so its constant already is the star bound) and
toulbar2's hybrid best-first search (HBFS, EDAC at every node) raises it: its global lower bound is valid whenever the search stops. At the
subgradient's best prices that is the same Lagrangian dual, bounded more tightly.

**Integers, rounded down.** toulbar2 wants integer costs. Each function is shifted by an integer at
most its least finite entry (the shifts go into an exact Python-int constant), then every entry is
divided by one integer ``scale`` and FLOORED: for every plan, ``scale * (toulbar2's cost) +
constant <= L(x, lam)``, so ``scale * D + constant`` for toulbar2's dual bound ``D`` bounds
``min L``. The unaries come from :func:`portfolio.kernels.bound.priced_unaries_dn`, each a float
at most the exact real priced unary (directed rounding), so nothing rounds upward anywhere. The
floor of a float quotient is computed in float64 (within 0.25 of the true quotient, which is at most
2**50) and then checked in exact int64 arithmetic against the entry (``u * scale + shift <=
floor(theta)``), one step down when it fails: the entry is exactly ``floor((theta - shift) /
scale)``. Edge entries are integers and are floored by integer division.

**Why nothing can wrap.** ``scale`` is the smallest power of 10 that brings the sum of all
functions' finite spans to at most ``TOTAL_LIMIT = 2**50`` (:func:`.scaling.choose_scale`):
every scaled entry and every complete assignment's cost stays below 2**51, exact in a double and far below toulbar2's top (~5.1e17). At the contest's magnitudes (node and edge costs
of 1e13 and more, 1e5 functions, priced usage of the same order) the spans sum to 1e17-1e19, so the
scale is 10**3-10**5 and each floor loses less than one scale unit per function: at most
``functions * scale`` in all (about 1e-4 of K's bound). The int64 check needs ``|theta| < 2**61``
(then ``u * scale <= theta - shift < 2**62``); a larger priced unary, a non-finite span, or a scale
above ``MAX_SCALE`` raises :class:`ScalingError`: the network is refused, never wrapped.

**Child process.** toulbar2 keeps global state, so each solve runs in a fresh forked child
(:func:`.child.run_in_child`), stopped by SIGVTALRM at its limit (toulbar2's handler
ends the search and the dual bound is read back) and killed soon after if it does not answer: a
killed child gives no bound, never a wrong one. Forbidden entries and strategies dead in the
kernel model are toulbar2's hard cost; the bound is then one over forbidden-free plans, and
:func:`portfolio.kernels.bound.certify` takes the smaller of it and the forbidden floor, adding
the kernel view's offset, as the star bound does.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from portfolio.problem import Problem

from .cfn import open_network, post_functions, preload, search_and_read
from .child import KILL_GRACE, run_in_child
from .pace import COSTS, node_weight, solve_units
from .scaling import MAX_SCALE, TOTAL_LIMIT, ScalingError, choose_scale

THETA_LIMIT = 2.0**61
"""Largest priced unary accepted: the exact int64 check of a floored entry stays below 2**63."""

VAC = 0
"""toulbar2's ``vac`` option. 0 (EDAC only): on K (5,167 nodes, costs 1e9, scale 1) VAC in
preprocessing (``vac=1``) had not finished after 25 s (0 search nodes), while HBFS with EDAC
searched 16,000 nodes; the reparametrisation gives the root the local polytope's bound instead."""


@dataclass
class PricedNetwork:
    """The priced network, scaled: ``scale * cost_tb2(x) + constant <= L(x, lam)`` for every plan
    ``x`` without hard entries."""

    counts: np.ndarray
    functions: list = field(default_factory=list)   # (scope tuple, float table, inf = hard)
    scale: int = 1
    constant: int = 0
    infeasible: bool = False   # some function forbids everything: no forbidden-free plan exists

    @property
    def entries(self) -> int:
        return int(sum(len(t) for _, t in self.functions) + len(self.counts))


def _floor_div(theta: np.ndarray, shift: np.ndarray, scale: int) -> np.ndarray:
    """Exactly ``floor((theta - shift) / scale)`` (as int64) for finite float ``theta``, integer
    ``shift <= theta`` and ``|theta| < THETA_LIMIT`` (see the module docstring)."""
    u = np.floor((theta - shift.astype(np.float64)) / scale).astype(np.int64)
    over = u * scale + shift > np.floor(theta).astype(np.int64)
    u[over] -= 1
    return np.maximum(u, 0)


def _add_dn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A float <= a + b elementwise (TwoSum gives the rounding error; one float down when the
    rounded sum is above the exact one); +inf stays +inf."""
    s = a + b
    with np.errstate(invalid="ignore"):
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return np.where(np.isfinite(s) & (e < 0), np.nextafter(s, -np.inf), s)


def build_priced(m: Any, lam: np.ndarray, max_scale: int = MAX_SCALE,
                 limit: int = TOTAL_LIMIT, shifts: Optional[tuple] = None) -> PricedNetwork:
    """The priced network of kernel model ``m`` at prices ``lam`` (one per time point, >= 0),
    scaled and floored as the module says; :class:`ScalingError` when it cannot be held.
    ``shifts``: a reparametrisation from :meth:`portfolio.kernels.bound.LagrangeBound.message_shifts`
    (none by default)."""
    from portfolio.kernels.bound import priced_unaries_dn
    from portfolio.kernels.model import edge_function, num_edges

    lam = np.require(np.maximum(np.asarray(lam, np.float64), 0.0), np.float64, ["C", "W"])
    if lam.shape != (len(m.base),) or not np.all(np.isfinite(lam)):
        raise ScalingError("prices must be finite, one per time point")
    theta, const_dn = priced_unaries_dn(m, lam)
    add, sub = shifts if shifts is not None else (None, {})
    if add is not None:
        theta = _add_dn(theta, add.astype(np.float64))   # |add| < 2**52: exact as a float
    if not math.isfinite(const_dn):
        raise ScalingError(f"priced constant {const_dn} is not finite")
    soff = np.asarray(m.soff, np.int64)
    counts = np.diff(soff)
    net = PricedNetwork(counts, constant=math.floor(const_dn))
    raw: list[tuple[tuple[int, ...], np.ndarray, bool]] = []   # scope, shifted values, is unary
    span = 0.0
    finite = np.isfinite(theta)
    if finite.any() and float(np.abs(theta[finite]).max()) >= THETA_LIMIT:
        raise ScalingError("a priced unary is beyond 2**61: refused")
    for i in range(len(counts)):
        row = theta[soff[i]:soff[i + 1]]
        ok = np.isfinite(row)
        if not ok.any():
            net.infeasible = True
            continue
        shift = math.floor(float(row[ok].min()))
        net.constant += shift
        high = float(row[ok].max())
        if ok.all() and high == float(row.min()):
            continue   # constant: its floor is in the constant, nothing to post
        raw.append(((i,), row, True))
        span += high - shift
    pen = int(m.pen)
    for e in range(num_edges(m)):
        scope, table = edge_function(m, e)
        hard = table >= pen
        if e in sub:   # a binary edge: its table is in the incidences' order (scope (u, v))
            table = np.where(hard, table, table - sub[e])
        if hard.all():
            net.infeasible = True
            continue
        low = int(table[~hard].min())
        net.constant += low
        rel = np.where(hard, -1, table - low)
        top = int(rel.max())
        if len(scope) == 0 or (top == 0 and not hard.any()):
            continue   # a constant
        raw.append((scope, rel, False))
        span += float(top)
    net.scale = scale = choose_scale(span, limit, max_scale)
    for scope, values, unary in raw:
        out = np.full(len(values), np.inf)
        if unary:
            ok = np.isfinite(values)
            shift = np.full(int(ok.sum()), math.floor(float(values[ok].min())), np.int64)
            out[ok] = _floor_div(values[ok], shift, scale)
        else:
            ok = values >= 0
            out[ok] = values[ok] // scale
        net.functions.append((scope, out))
    return net


def priced_child(net: PricedNetwork, seconds: float, seed: int, vac: int,
                 backtracks: Optional[int] = None) -> dict:
    """Post ``net`` and run toulbar2 (HBFS; VAC when ``vac``) in a forked child for ``seconds``
    (or ``backtracks``: deterministic mode); its dual bound is read back whether or not the search
    finished."""
    preload()
    t0 = time.monotonic()
    cfn = open_network(net.counts, seed, vac=vac, hbfs=1)
    answer: dict = {"dual": None, "plan": None, "cost": None, "limited": True, "nodes": 0,
                    "backtracks": 0}
    try:
        post_functions(cfn, ((scope, table.tolist()) for scope, table in net.functions))
    except cfn.Contradiction:   # the hard entries alone leave no assignment
        return {**answer, "dual": math.inf, "limited": False, "build_s": time.monotonic() - t0,
                "solve_s": 0.0}
    return search_and_read(cfn, seconds, answer, t0, backtracks)


@dataclass
class PricedOutcome:
    """What one priced solve gave: ``bound`` (certified, original problem's units) or None."""

    bound: Optional[int]
    note: str
    dual: Optional[int] = None        # toulbar2's dual bound, unscaled, kernel objective
    plan: Optional[np.ndarray] = None  # toulbar2's best plan of the priced problem (kernel view)
    complete: bool = False
    timings: dict = field(default_factory=dict)
    work: dict = field(default_factory=dict)   # deterministic mode: counts and their work units


def priced_solve(problem: Problem, m: Any, lam: np.ndarray, seconds: float,
                 offset: Optional[int] = None, seed: int = 0, vac: int = VAC,
                 max_scale: int = MAX_SCALE, shifts: Optional[tuple] = None,
                 backtracks: Optional[int] = None) -> PricedOutcome:
    """toulbar2's bound of ``min_x L(x, lam)`` on kernel model ``m`` of ``problem`` within about
    ``seconds`` of wall clock, certified as a bound of ``problem``'s optimum (``offset``: the
    constant ``m``'s objective leaves out, :func:`portfolio.kernels.bound.kernel_offset`).

    With ``backtracks`` (deterministic mode) toulbar2 stops after that many backtracks and
    ``seconds`` is only the wall-clock safety net; ``work`` of the outcome then holds the counts
    (``entries``, ``nodes``, ``backtracks``) and their ``units`` (:mod:`.pace`, as the exact mode's
    best-first search) for the caller's ``report.work.spend``."""
    from portfolio.kernels.bound import certify

    t0 = time.monotonic()
    try:
        net = build_priced(m, lam, max_scale, shifts=shifts)
    except ScalingError as exc:
        return PricedOutcome(None, f"refused: {exc}")
    build_s = time.monotonic() - t0
    if net.infeasible:   # no forbidden-free plan at all: the forbidden floor is the bound
        return PricedOutcome(certify(problem, math.inf, offset), "no forbidden-free plan",
                             timings={"build_s": build_s})
    if backtracks is None:
        post = 0.5 + 2e-6 * net.entries
        search = seconds - build_s - post - KILL_GRACE
        if search < 1.0:
            return PricedOutcome(None, f"no time ({seconds:.1f} s, posting ~{post:.1f} s)")
        outcome, value = run_in_child(priced_child, (net, search, seed, vac),
                                      search + post + KILL_GRACE, search=search,
                                      cap=t0 + seconds)
    else:   # the backtracks decide; the clock only stops a run that outlives ``seconds``
        safety = max(0.0, seconds - build_s)
        outcome, value = run_in_child(priced_child, (net, safety, seed, vac, backtracks),
                                      safety, search=safety, cap=time.monotonic() + safety)
    work = {} if backtracks is None else _work(net, value if outcome == "ok" else None)
    if outcome != "ok":
        why = "no answer before its limit" if value is None else value
        return PricedOutcome(None, f"toulbar2 child {outcome}: {why}",
                             timings={"build_s": build_s}, work=work)
    times = {"build_s": build_s, "post_s": value["build_s"], "search_s": value["solve_s"]}
    dual = value["dual"]
    complete = not value["limited"]
    if complete:   # a finished search (no upper bound given): its plan is the minimum, and
        # no plan means every assignment takes a hard entry (no forbidden-free plan exists)
        found = math.inf if value["cost"] is None else value["cost"]
        dual = max(dual if dual is not None else -math.inf, found)
    if dual is None or math.isnan(dual):
        return PricedOutcome(None, "toulbar2 gave no dual bound", timings=times)
    units = math.inf if math.isinf(dual) else net.scale * math.floor(dual) + net.constant
    plan = None if value["plan"] is None else np.asarray(value["plan"], np.int64)
    note = (f"{'complete' if complete else 'limited'}, {value['nodes']} nodes, "
            f"scale {net.scale}, posted in {value['build_s']:.1f} s, searched "
            f"{value['solve_s']:.1f} s")
    return PricedOutcome(certify(problem, units, offset), note,
                         None if math.isinf(units) else int(units), plan, complete, times, work)


def _work(net: PricedNetwork, value: Optional[dict]) -> dict:
    """A deterministic priced solve's counts and work units (a child without an answer: its
    posting only)."""
    nodes = 0 if value is None else int(value["nodes"])
    backtracks = 0 if value is None else int(value["backtracks"])
    units = solve_units(net.entries, nodes, node_weight(net.counts), COSTS.exact_node)
    return {"entries": net.entries, "nodes": nodes, "backtracks": backtracks, "units": units}


def priced_value(m: Any, lam: np.ndarray, plan: np.ndarray) -> float:
    """``L(plan, lam)`` in the kernel objective (float, for reports: an upper estimate of the
    priced minimum, never a bound)."""
    from portfolio.kernels import incremental as inc

    x = np.require(plan, np.int64, ["C", "W"])
    cost = float(inc.plan_cost(m, x)[0])
    return cost + float(np.asarray(lam, np.float64) @ inc.slack_values(m, x).astype(np.float64))
