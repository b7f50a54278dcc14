"""Instance features: a fixed, versioned list of numbers that describe a problem, for learning
which configuration suits which graph (issue 50) and for ASlib scenarios (``report --aslib``).

Two steps, because they cost very different amounts (docs/features.md has the timings):

* ``cheap``: from the loaded problem alone, in numpy (tens of milliseconds on the largest
  contest graph): sizes, strategies per node, degrees, time points and live sets, memory
  tightness (the least peak's floor from :mod:`portfolio.leastpeak` and the peak of the
  all-cheapest plan, both against the limit), forbidden shares and the spread of costs.
* ``presolved``: the same kind of figures on presolve's reduced problem. Presolve itself takes
  about half a second to a second on the large contest graphs (its kernels compiled), which the
  runner already spends in its child; the figures on top of it are cheap.

Names are stable: a new feature is appended and bumps :data:`FEATURES_VERSION`; a feature is
never renamed or given another meaning under the same version (a selector trained on them
checks the version). A value is a float or an int, or None where it is undefined (a presolve
that failed, a floor when some node has only forbidden strategies).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .evaluate import range_sum
from .leastpeak import least_usage_floor, least_usage_profile, plain_domains
from .problem import FORBIDDEN, Problem

FEATURES_VERSION = 1

CHEAP_FEATURES: dict[str, str] = {
    "nodes": "nodes of the problem",
    "edges": "edges of the problem",
    "free_nodes": "nodes with more than one strategy",
    "strategies": "strategies over all nodes",
    "strategies_mean": "strategies per node: mean",
    "strategies_q50": "strategies per node: median",
    "strategies_q90": "strategies per node: 90th percentile",
    "strategies_max": "strategies per node: maximum",
    "edges_per_node": "edges / nodes",
    "edge_density": "edges / (nodes * (nodes - 1) / 2)",
    "degree_q90": "edge ends per node: 90th percentile",
    "degree_max": "edge ends per node: maximum",
    "isolated_share": "share of nodes on no edge",
    "edge_entries_per_edge": "cost-table entries per edge: mean",
    "forbidden_node_share": "share of node strategies whose cost is 10**18",
    "forbidden_edge_share": "share of edge-table entries that are 10**18",
    "zero_edge_share": "share of edge-table entries that are 0",
    "time_points": "distinct times at which memory is checked (one per distinct live set start)",
    "live_mean": "intervals live at a time point: mean",
    "live_max": "intervals live at a time point: maximum",
    "live_max_share": "intervals live at the busiest time point / intervals",
    "has_limit": "1 when memory is limited, else 0",
    "least_peak_ratio": "the least peak's floor (leastpeak.least_usage_floor) / the limit "
                        "(0 without a limit; None when some node has only forbidden strategies)",
    "cheapest_peak_ratio": "peak of the all-cheapest plan (each node at its cheapest node cost) "
                           "/ the limit (0 without a limit)",
    "cheapest_over_share": "share of time points where the all-cheapest plan is over the limit",
    "usage_spread": "per interval that uses memory, (largest - least usage) / largest: mean",
    "node_cost_log_spread": "log10 of the largest finite node cost / their mean",
    "edge_cost_log_spread": "log10 of the largest finite edge entry / their mean",
    "edge_cost_share": "mean finite edge entry x edges / (that + mean finite node cost x nodes): "
                       "how much of the cost sits on edges",
    "cheapest_forbidden_share": "share of edges the all-cheapest plan meets at a forbidden entry",
}
"""The ``cheap`` step's features, in their stable order, with what each one is."""

PRESOLVED_FEATURES: dict[str, str] = {
    "presolved_nodes": "nodes after presolve",
    "presolved_edges": "edges after presolve",
    "presolved_free_nodes": "nodes with more than one strategy after presolve",
    "presolved_free_share": "presolved_free_nodes / nodes (how much of the graph is left to decide)",
    "presolved_strategies_mean": "strategies per node after presolve: mean",
    "presolved_strategies_max": "strategies per node after presolve: maximum",
    "presolved_edges_per_node": "edges / nodes after presolve",
    "presolved_degree_max": "edge ends per node after presolve: maximum",
    "presolved_edge_entries_log": "log10(1 + edge-table entries after presolve)",
    "presolved_time_points": "time points presolve kept (where memory can bind)",
    "presolved_tightness": "after presolve, the largest ratio over kept time points of the "
                           "least usage to the capacity there (0 when no point is kept)",
    "presolved_settled": "1 when presolve left nothing to decide (or proved infeasibility)",
    "presolved_infeasible": "1 when presolve proved that no feasible plan exists",
}
"""The ``presolved`` step's features, in their stable order."""

FEATURE_NAMES: tuple[str, ...] = (*CHEAP_FEATURES, *PRESOLVED_FEATURES)
STEPS: dict[str, tuple[str, ...]] = {"cheap": tuple(CHEAP_FEATURES),
                                     "presolved": tuple(PRESOLVED_FEATURES)}

Value = Optional[float]


@dataclass
class Features:
    """The features of one problem: ``values`` by name (every name of the computed steps),
    ``seconds`` per step (``load`` and ``presolve`` too when the caller measured them),
    ``error``: why the ``presolved`` step has no values (a failed presolve)."""

    values: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    version: int = FEATURES_VERSION
    error: Optional[str] = None

    def to_json(self) -> dict:
        out = {"version": self.version, "values": dict(self.values),
               "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}
        if self.error:
            out["error"] = self.error
        return out

    @staticmethod
    def from_json(doc: dict) -> "Features":
        return Features(dict(doc.get("values", {})), dict(doc.get("seconds", {})),
                        int(doc.get("version", 0)), doc.get("error"))


def _round(x: float) -> float:
    """Six significant digits: a stable, readable record (a feature needs no more)."""
    if not math.isfinite(x) or x == 0:
        return float(x)
    return float(f"{x:.6g}")


def _ratio(a: float, b: float) -> float:
    return _round(a / b) if b else 0.0


def _finite_stats(values: np.ndarray, finite: np.ndarray) -> tuple[int, float]:
    """(largest, mean) of the entries where ``finite``, (0, 0.0) when none; two passes in all,
    which matters on tables of millions of entries (an exact int64 sum when it cannot overflow)."""
    count = int(np.count_nonzero(finite))
    if not count:
        return 0, 0.0
    top = int(np.max(values, where=finite, initial=0))
    dtype = np.int64 if abs(top) * count < 2**62 else np.float64
    return top, float(np.sum(values, where=finite, dtype=dtype)) / count


def _log_spread(top: int, mean: float) -> float:
    """log10(largest / mean): how far the dearest entry lies above the typical one."""
    return _round(math.log10(top / mean)) if top > 0 and mean > 0 else 0.0


def _cheapest_plan(problem: Problem) -> np.ndarray:
    """Per node, the strategy of least node cost (the first such; forbidden ones last)."""
    counts = problem.strategy_counts
    starts = problem.strategy_offsets[:-1]
    has = counts > 0
    mins = np.zeros(problem.num_nodes, dtype=np.int64)
    if has.any():
        mins[has] = np.minimum.reduceat(problem.node_costs, starts[has])
    hits = np.flatnonzero(problem.node_costs == np.repeat(mins, counts))
    first = hits[np.minimum(np.searchsorted(hits, starts), max(len(hits) - 1, 0))] \
        if len(hits) else starts
    return np.where(has, first - starts, 0).astype(np.int64)


def _edge_entries(problem: Problem, plan: np.ndarray) -> np.ndarray:
    """Each edge's table entry under ``plan`` (mixed radix, first node most significant)."""
    offsets, nodes = problem.edge_node_offsets, problem.edge_nodes
    arity = problem.edge_arity
    index = np.zeros(problem.num_edges, dtype=np.int64)
    k = problem.strategy_counts
    for p in range(int(arity.max(initial=0))):
        on = arity > p
        v = nodes[offsets[:-1][on] + p]
        index[on] = index[on] * k[v] + plan[v]
    return problem.edge_costs[problem.edge_cost_offsets[:-1] + index] if problem.num_edges \
        else np.zeros(0, dtype=np.int64)


def _plan_usage(problem: Problem, plan: np.ndarray) -> np.ndarray:
    """Per interval, its usage under ``plan``."""
    return problem.interval_usages[problem.interval_usage_offsets[:-1]
                                   + plan[problem.interval_node]]


def _memory(problem: Problem, values: dict[str, Any], plan: np.ndarray) -> None:
    """Memory tightness: the least peak's floor and the all-cheapest plan's peak against the
    limit (the largest capacity when it varies over time, as in a presolved problem)."""
    limited = not problem.capacity.is_unlimited
    values["has_limit"] = int(limited)
    floor = least_usage_floor(problem)
    if not limited:
        values["least_peak_ratio"] = 0.0 if floor.value is not None else None
        values["cheapest_peak_ratio"] = values["cheapest_over_share"] = 0.0
        return
    points = len(problem.time_points)
    lo, hi = problem.interval_point_range
    cap = problem.point_capacity.astype(np.float64)
    cheap = range_sum(lo, hi, _plan_usage(problem, plan), points).astype(np.float64)
    limit = problem.usage_limit
    scale = float(limit) if limit is not None else float(cap.max(initial=1.0))
    values["least_peak_ratio"] = None if floor.value is None else _ratio(float(floor.value), scale)
    values["cheapest_peak_ratio"] = _ratio(float(cheap.max(initial=0.0)), scale)
    values["cheapest_over_share"] = _ratio(float(np.count_nonzero(cheap > cap)), points)


def _costs(problem: Problem, values: dict[str, Any], plan: np.ndarray) -> None:
    """Cost spread, the share of cost on edges and the forbidden shares (one pass per mask over
    the edge tables, their largest array)."""
    node_ok = problem.node_costs != FORBIDDEN
    edge_ok = problem.edge_costs != FORBIDDEN
    values["forbidden_node_share"] = _ratio(float(len(node_ok) - np.count_nonzero(node_ok)),
                                            len(node_ok))
    values["forbidden_edge_share"] = _ratio(float(len(edge_ok) - np.count_nonzero(edge_ok)),
                                            len(edge_ok))
    values["zero_edge_share"] = _ratio(float(np.count_nonzero(problem.edge_costs == 0)),
                                       len(edge_ok))
    node_top, node_mean = _finite_stats(problem.node_costs, node_ok)
    edge_top, edge_mean = _finite_stats(problem.edge_costs, edge_ok)
    values["node_cost_log_spread"] = _log_spread(node_top, node_mean)
    values["edge_cost_log_spread"] = _log_spread(edge_top, edge_mean)
    on_edges, on_nodes = edge_mean * problem.num_edges, node_mean * problem.num_nodes
    values["edge_cost_share"] = _ratio(on_edges, on_edges + on_nodes)
    entries = _edge_entries(problem, plan)
    values["cheapest_forbidden_share"] = _ratio(float(np.count_nonzero(entries == FORBIDDEN)),
                                                len(entries))


def _shape(problem: Problem, values: dict[str, Any]) -> None:
    n, m = problem.num_nodes, problem.num_edges
    counts = problem.strategy_counts
    values["nodes"], values["edges"] = n, m
    values["free_nodes"] = int(np.count_nonzero(counts > 1))
    values["strategies"] = int(counts.sum())
    if n:
        q50, q90 = np.quantile(counts, [0.5, 0.9])
        values["strategies_mean"] = _round(float(counts.mean()))
        values["strategies_q50"], values["strategies_q90"] = _round(q50), _round(q90)
    else:
        values["strategies_mean"] = values["strategies_q50"] = values["strategies_q90"] = 0.0
    values["strategies_max"] = int(counts.max(initial=0))
    values["edges_per_node"] = _ratio(m, n)
    values["edge_density"] = _ratio(m, n * (n - 1) / 2)
    degree = np.bincount(problem.edge_nodes, minlength=n) if n else np.zeros(0, dtype=np.int64)
    values["degree_q90"] = _round(float(np.quantile(degree, 0.9))) if n else 0.0
    values["degree_max"] = int(degree.max(initial=0))
    values["isolated_share"] = _ratio(float(np.count_nonzero(degree == 0)), n)
    values["edge_entries_per_edge"] = _ratio(len(problem.edge_costs), m)


def _time(problem: Problem, values: dict[str, Any]) -> None:
    points = len(problem.time_points)
    values["time_points"] = points
    if points:
        lo, hi = problem.interval_point_range
        live = range_sum(lo, hi, np.ones(problem.num_intervals, dtype=np.int64), points)
        values["live_mean"] = _round(float(live.mean()))
        values["live_max"] = int(live.max())
    else:
        values["live_mean"], values["live_max"] = 0.0, 0
    values["live_max_share"] = _ratio(values["live_max"], problem.num_intervals)
    iuo = problem.interval_usage_offsets
    has = np.diff(iuo) > 0
    if has.any():
        top = np.maximum.reduceat(problem.interval_usages, iuo[:-1][has]).astype(np.float64)
        low = np.minimum.reduceat(problem.interval_usages, iuo[:-1][has]).astype(np.float64)
        used = top > 0
        values["usage_spread"] = (_round(float(((top[used] - low[used]) / top[used]).mean()))
                                  if used.any() else 0.0)
    else:
        values["usage_spread"] = 0.0


def cheap_features(problem: Problem) -> dict[str, Any]:
    """The ``cheap`` step: every name of :data:`CHEAP_FEATURES`, from the loaded problem."""
    values: dict[str, Any] = {}
    _shape(problem, values)
    _time(problem, values)
    plan = _cheapest_plan(problem)
    _memory(problem, values, plan)
    _costs(problem, values, plan)
    return {name: values[name] for name in CHEAP_FEATURES}


def presolved_features(problem: Problem, presolved: Any) -> dict[str, Any]:
    """The ``presolved`` step: every name of :data:`PRESOLVED_FEATURES`, from ``presolved`` (a
    :class:`portfolio.presolve.Presolved` of ``problem``)."""
    n = max(problem.num_nodes, 1)
    red: Optional[Problem] = presolved.reduced
    if red is None:   # presolve proved the instance infeasible
        out: dict[str, Any] = {name: 0 for name in PRESOLVED_FEATURES}
        out.update(presolved_settled=1, presolved_infeasible=1)
        return out
    counts = red.strategy_counts
    free = int(np.count_nonzero(counts > 1))
    degree = np.bincount(red.edge_nodes, minlength=red.num_nodes) if red.num_nodes else np.zeros(1)
    points = len(red.time_points)
    tight = 0.0
    if points and not red.capacity.is_unlimited:
        plain = plain_domains(red)
        least = np.asarray(least_usage_profile(red, plain.alive), dtype=np.float64)
        cap = red.point_capacity.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cap > 0, least / np.where(cap > 0, cap, 1.0),
                             np.where(least > 0, np.inf, 0.0))
        tight = _round(float(ratio.max()))
    return {
        "presolved_nodes": red.num_nodes,
        "presolved_edges": red.num_edges,
        "presolved_free_nodes": free,
        "presolved_free_share": _ratio(free, n),
        "presolved_strategies_mean": _round(float(counts.mean())) if red.num_nodes else 0.0,
        "presolved_strategies_max": int(counts.max(initial=0)),
        "presolved_edges_per_node": _ratio(red.num_edges, red.num_nodes),
        "presolved_degree_max": int(degree.max(initial=0)),
        "presolved_edge_entries_log": _round(math.log10(1 + len(red.edge_costs))),
        "presolved_time_points": points,
        "presolved_tightness": tight,
        "presolved_settled": int(free == 0),
        "presolved_infeasible": 0,
    }


def instance_features(problem: Problem, presolve: bool = True,
                      presolved: Any = None) -> Features:
    """Both steps (``presolve=False``: the ``cheap`` step only, the others None), timed.

    ``presolved``: the problem's presolve when the caller already has it (its time is then the
    caller's to report); otherwise presolve runs here (compiling its kernels on a cold cache).
    """
    values: dict[str, Any] = {name: None for name in FEATURE_NAMES}
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    values.update(cheap_features(problem))
    seconds["cheap"] = time.perf_counter() - t0
    error = None
    if presolve or presolved is not None:
        if presolved is None:
            t1 = time.perf_counter()
            try:
                from .presolve import presolve as run_presolve, warm_up

                warm_up()
                presolved = run_presolve(problem)
            except Exception as exc:  # noqa: BLE001 -- a presolve bug leaves the step empty
                error = f"presolve failed: {type(exc).__name__}: {exc}"
            seconds["presolve"] = time.perf_counter() - t1
        if presolved is not None:
            t2 = time.perf_counter()
            values.update(presolved_features(problem, presolved))
            seconds["presolved"] = time.perf_counter() - t2
    return Features(values, seconds, FEATURES_VERSION, error)
