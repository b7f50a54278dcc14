"""Exact, vectorised evaluation of a solution: cost, feasibility and memory diagnostics.

This is the judge every backend's answer passes through before it can win, so it follows the contest
reference semantics to the letter:

* cost = sum of chosen node costs + sum of chosen edge entries (+ the instance's ``cost_offset``),
  as an exact Python integer: int64 partial sums never wrap (a few 10**18 entries would);
* an edge that names a node twice, and repeated edges, are counted exactly as written;
* memory at integer time ``t`` sums the chosen usages of intervals with ``start <= t < end``;
  the solution is feasible iff that sum never exceeds the capacity at ``t``.
"""

from __future__ import annotations

import sys
import types
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from .errors import ProblemError
from .problem import FORBIDDEN, INT64_MAX, Problem

_SAFE_BOUND = 2**62


class SolutionError(ProblemError):
    """A solution that does not fit the instance (wrong length, strategy out of range)."""


def exact_sum(values: np.ndarray) -> int:
    """Exact integer sum of an int64 array, immune to overflow.

    Each value is split as ``hi * 2**32 + lo``; both halves sum safely in int64 for any array shorter
    than 2**31 elements, and Python ints recombine them.
    """
    values = np.asarray(values, dtype=np.int64)
    if values.size == 0:
        return 0
    hi = values >> 32
    lo = values & 0xFFFFFFFF
    return (int(hi.sum()) << 32) + int(lo.sum())


def as_solution(problem: Problem, solution: object) -> np.ndarray:
    """Check that ``solution`` fits ``problem`` and return it as an int64 array.

    Accepts an integer numpy array or a sequence of Python/numpy integers (booleans and floats are
    refused: a plan is a list of strategy indices). Raises :class:`SolutionError` naming the first
    offending index.
    """
    return as_plan(solution, problem.strategy_counts)


def as_plan(solution: object, counts: np.ndarray, holder: str = "the problem",
            label: Callable[[int], str] = str) -> np.ndarray:
    """:func:`as_solution` against ``counts`` strategies per node, so that a file whose nodes are
    not the problem's (an XLA request) checks a plan in its own numbering; ``holder`` names it in
    the length error, ``label(i)`` node ``i`` in the range error."""
    if isinstance(solution, np.ndarray) and solution.dtype.kind in "iu" and solution.ndim == 1:
        arr = solution
    else:
        if isinstance(solution, np.ndarray):
            if solution.ndim != 1:
                raise SolutionError(f"solution must be a flat list, got shape {solution.shape}")
            solution = solution.tolist()
        if not isinstance(solution, (list, tuple)):
            raise SolutionError(f"solution must be a list of integers, got {type(solution).__name__}")
        for i, v in enumerate(solution):
            if isinstance(v, (list, tuple, np.ndarray)):
                raise SolutionError(f"solution must be a flat list of integers; solution[{i}] is a list")
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise SolutionError(f"solution[{i}] = {v!r} is not an integer")
            if not -INT64_MAX - 1 <= v <= INT64_MAX:
                raise SolutionError(f"solution[{i}] = {v} is out of range")
        arr = np.array(solution, dtype=np.int64).reshape(-1)
    if len(arr) != len(counts):
        raise SolutionError(f"solution has {len(arr)} entries but {holder} has {len(counts)} nodes")
    if arr.dtype.kind == "u":
        over = np.flatnonzero(arr > INT64_MAX)
        if len(over):
            raise SolutionError(f"solution[{over[0]}] = {arr[over[0]]} is out of range")
    arr = arr.astype(np.int64, copy=False)
    bad = np.flatnonzero((arr < 0) | (arr >= counts))
    if len(bad):
        i = int(bad[0])
        raise SolutionError(
            f"solution[{i}] = {arr[i]} is out of range: node {label(i)} has "
            f"{counts[i]} strategies (0..{counts[i] - 1})"
        )
    return arr


def chosen_node_costs(problem: Problem, sol: np.ndarray) -> np.ndarray:
    """Cost of each node's chosen strategy."""
    return problem.node_costs[problem.strategy_offsets[:-1] + sol]


def chosen_edge_positions(problem: Problem, sol: np.ndarray) -> np.ndarray:
    """Position in ``edge_costs`` of each edge's chosen entry (mixed radix, first node most significant)."""
    starts = problem.edge_node_offsets[:-1]
    arity = problem.edge_arity
    index = np.zeros(problem.num_edges, dtype=np.int64)
    for p in range(int(arity.max(initial=0))):
        mask = arity > p
        nodes = problem.edge_nodes[starts[mask] + p]
        index[mask] = index[mask] * problem.strategy_counts[nodes] + sol[nodes]
    return problem.edge_cost_offsets[:-1] + index


def chosen_interval_usages(problem: Problem, sol: np.ndarray) -> np.ndarray:
    """Usage of each interval under the chosen strategy of its node."""
    return problem.interval_usages[problem.interval_usage_offsets[:-1] + sol[problem.interval_node]]


def usage_profile(problem: Problem, sol: np.ndarray) -> np.ndarray:
    """Memory in use at each of ``problem.time_points`` under solution ``sol``."""
    return profile_of(problem, chosen_interval_usages(problem, sol))


def profile_of(problem: Problem, usage: np.ndarray) -> np.ndarray:
    """Memory in use at each of ``problem.time_points`` when interval ``j`` uses ``usage[j]``.

    int64 when the sum of all usages cannot overflow (always, on real instances); otherwise an object
    array of exact Python ints.
    """
    lo, hi = problem.interval_point_range
    return range_sum(lo, hi, usage, len(problem.time_points))


def range_sum(lo: np.ndarray, hi: np.ndarray, vals: np.ndarray, nseg: int) -> np.ndarray:
    """Per segment k < nseg, the exact sum of vals[j] over the j with lo[j] <= k < hi[j].

    A difference array in int64 when the total magnitude cannot overflow; otherwise exact Python ints.
    """
    if exact_sum(np.abs(vals)) < _SAFE_BOUND:
        diff = np.zeros(nseg + 1, dtype=np.int64)
        np.add.at(diff, lo, vals)
        np.add.at(diff, hi, -vals)
        return np.cumsum(diff[:-1])
    diff_obj = np.zeros(nseg + 1, dtype=object)
    for a, b, x in zip(lo.tolist(), hi.tolist(), vals.tolist()):
        diff_obj[a] += x
        diff_obj[b] -= x
    return np.cumsum(diff_obj[:-1])


def min_usage_profile(problem: Problem) -> np.ndarray:
    """The profile when every interval uses its smallest usage: a lower bound on any solution's."""
    counts = np.diff(problem.interval_usage_offsets)
    mins = np.zeros(problem.num_intervals, dtype=np.int64)
    nonempty = counts > 0
    mins[nonempty] = np.minimum.reduceat(problem.interval_usages,
                                         problem.interval_usage_offsets[:-1][nonempty])
    return profile_of(problem, mins)


@dataclass(frozen=True)
class Evaluation:
    """Everything a user asks about one solution."""

    cost: int
    feasible: bool
    peak_usage: int
    peak_time: int | None
    usage_limit: int | None
    margin: int | None
    tightest_time: int | None
    first_violation_time: int | None
    violated_time_points: int
    forbidden_node_choices: int
    forbidden_edge_entries: int

    @property
    def has_forbidden(self) -> bool:
        return self.forbidden_node_choices + self.forbidden_edge_entries > 0

    def to_dict(self) -> dict:
        return asdict(self)


def evaluate(problem: Problem, solution: object) -> Evaluation:
    """Exact cost, feasibility and memory diagnostics of ``solution`` on ``problem``.

    ``margin`` is the smallest ``capacity - usage`` over the checked times (negative when infeasible,
    ``None`` when capacity is unlimited); ``usage_limit`` is the capacity in force at the peak.
    """
    sol = as_solution(problem, solution)
    node_part = chosen_node_costs(problem, sol)
    edge_part = problem.edge_costs[chosen_edge_positions(problem, sol)]
    cost = exact_sum(node_part) + exact_sum(edge_part) + problem.cost_offset

    profile = usage_profile(problem, sol)
    times = problem.time_points
    if len(profile):
        k_peak = int(np.argmax(profile))
        peak, peak_time = int(profile[k_peak]), int(times[k_peak])
    else:
        peak, peak_time = 0, None
    capacity, limited = problem.capacity.at(times)
    limit_at_peak = problem.capacity.uniform_limit
    if peak_time is not None and limited[k_peak]:
        limit_at_peak = int(capacity[k_peak])
    margin, tightest, first_violation, violated = limit_at_peak, None, None, 0
    if limited.any():
        used = profile[limited]
        if used.dtype == np.int64 and (len(used) == 0 or used.min() >= 0):
            slack = capacity[limited] - used  # both in [0, 2**63): the difference cannot wrap
        else:
            slack = capacity[limited].astype(object) - used.astype(object)
        k_tight = int(np.argmin(slack))
        margin, tightest = int(slack[k_tight]), int(times[limited][k_tight])
        over = np.flatnonzero(slack < 0)
        violated = len(over)
        if violated:
            first_violation = int(times[limited][over[0]])
    return Evaluation(
        cost=cost,
        feasible=violated == 0,
        peak_usage=peak,
        peak_time=peak_time,
        usage_limit=limit_at_peak,
        margin=margin,
        tightest_time=tightest,
        first_violation_time=first_violation,
        violated_time_points=violated,
        forbidden_node_choices=int(np.count_nonzero(node_part == FORBIDDEN)),
        forbidden_edge_entries=int(np.count_nonzero(edge_part == FORBIDDEN)),
    )


def forbidden_choices(problem: Problem, solution: object) -> tuple[np.ndarray, np.ndarray]:
    """The nodes whose chosen strategy, and the edges whose chosen entry, cost 10**18 (indices of
    ``problem``; the counts are :class:`Evaluation`'s), so that a report can name them."""
    sol = as_solution(problem, solution)
    nodes = np.flatnonzero(chosen_node_costs(problem, sol) == FORBIDDEN)
    edges = np.flatnonzero(problem.edge_costs[chosen_edge_positions(problem, sol)] == FORBIDDEN)
    return nodes, edges


def delta_cost(problem: Problem, sol: np.ndarray, node: int, strategy: int) -> int:
    """Exact change of the cost when ``node`` switches from ``sol[node]`` to ``strategy``.

    Touches only the node's own cost and its incident edges, so it is O(degree); an edge naming the
    node twice sees both of its positions change.
    """
    old = int(sol[node])
    if old == strategy:
        return 0
    base = int(problem.strategy_offsets[node])
    delta = int(problem.node_costs[base + strategy]) - int(problem.node_costs[base + old])
    for e in problem.incident_edges(node).tolist():
        nodes = problem.nodes_of_edge(e)
        counts = problem.strategy_counts[nodes]
        before = after = 0
        for v, k in zip(nodes.tolist(), counts.tolist()):
            s = int(sol[v])
            before = before * k + s
            after = after * k + (strategy if v == node else s)
        off = int(problem.edge_cost_offsets[e])
        delta += int(problem.edge_costs[off + after]) - int(problem.edge_costs[off + before])
    return delta


class _CallableModule(types.ModuleType):
    """This module, callable: ``portfolio.evaluate(problem, plan)``.

    The package exports ``evaluate`` as its API, but importing this submodule binds the name
    ``portfolio.evaluate`` to the module (Python's import system does so, overwriting any function
    of that name). Calling the module instead keeps both meanings: ``from portfolio.evaluate import
    evaluate`` as before, and ``portfolio.evaluate(problem, plan)`` for a host program.
    """

    def __call__(self, problem: Problem, plan: object) -> Evaluation:
        """Exact cost, feasibility and memory of ``plan`` on ``problem`` (see :func:`evaluate`);
        anything unusable raises :class:`~portfolio.errors.ProblemError`."""
        if not isinstance(problem, Problem):
            raise ProblemError(f"evaluate: expected a Problem (portfolio.load or portfolio.Problem), "
                               f"got {type(problem).__name__}")
        return evaluate(problem, plan)


sys.modules[__name__].__class__ = _CallableModule
