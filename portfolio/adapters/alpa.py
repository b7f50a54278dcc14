"""A drop-in for Alpa's (and Colossal-AI's) ``_call_solver_serialized_args``, solved by the portfolio.

The arguments keep Alpa's flat layout: ``E`` and ``A`` are flattened node pairs; ``L`` holds ``N``
counts, then the live node lists of times ``0 .. N-1``; ``c``, ``d``, ``m`` concatenate one vector
per node, ``r`` and ``v`` one row-major table per pair. They become the same
:class:`~.request.SolverRequest` an XLA request does, so the semantics are shared: followers take
their leader's strategy, an alias entry whose value is above 0.5 (Alpa's test) is forbidden, node
``i`` holds ``m[i][s]`` at every time whose list names it. Costs are floats, so they are scaled by a
power of two to integers (the rounding error bound is kept in :data:`last_conversion`).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional

import numpy as np

from ..evaluate import evaluate
from ..io import ProblemFormatError
from ..problem import FORBIDDEN, Problem
from .request import Conversion, Rows, SolverRequest, to_problem

SOURCE = "<alpa arguments>"
LABELS = {"computation_costs": "c", "communication_costs": "d", "memory_costs": "m", "edges": "E",
          "resharding_costs": "r", "aliases": "A", "value_costs": "v", "live": "L"}
ALIAS_THRESHOLD = 0.5
SCALE_TARGET = 2.0**40
"""The largest cost magnitude maps to at most this: room to add 2**20 terms below 10**18."""

last_conversion: Optional[Conversion] = None
"""The conversion of the last call (problem, cost scale, rounding bound), for callers who ask."""


def _flat(x: Any, dtype: type) -> np.ndarray:
    return np.asarray(x if x is not None else [], dtype=dtype).reshape(-1)


def _split(name: str, values: np.ndarray, counts: np.ndarray) -> Rows:
    if int(counts.sum()) != len(values):
        raise ProblemFormatError(SOURCE, name, f"has {len(values)} values but its rows need "
                                               f"{int(counts.sum())}")
    return Rows(counts, values)


def auto_scale(*cost_arrays: np.ndarray) -> float:
    """A power of two that maps the largest finite cost magnitude to at most 2**40 (exact, and
    far from int64 limits); costs 10**18 or more after scaling count as forbidden."""
    finite = [np.abs(a[np.isfinite(a)]) for a in cost_arrays]
    top = max((float(a.max()) for a in finite if len(a)), default=0.0)
    if top == 0.0:
        return 1.0
    return 2.0 ** math.floor(math.log2(SCALE_TARGET / top))


def build_request(N: int, M: float, s_len_np: Any, s_follow_np: Any, E_np: Any, A_np: Any,
                  L_np: Any, c_np: Any, d_np: Any, m_np: Any, r_np: Any, v_np: Any) -> SolverRequest:
    """Alpa's flat arguments as a request (sizes checked; duplicate edges refused as Alpa does)."""
    s_len = _flat(s_len_np, np.int64)
    if len(s_len) != N:
        raise ProblemFormatError(SOURCE, "s_len", f"has {len(s_len)} entries but N is {N}")
    edges = _flat(E_np, np.int64)
    aliases = _flat(A_np, np.int64)
    for name, pairs in (("E", edges), ("A", aliases)):
        if len(pairs) % 2:
            raise ProblemFormatError(SOURCE, name, f"has {len(pairs)} values; pairs need an even number")
    edges, aliases = edges.reshape(-1, 2), aliases.reshape(-1, 2)
    seen: set[tuple[int, int]] = set()
    for i, j in edges.tolist():
        if (i, j) in seen:
            raise ValueError(f"duplicate edge ({i}, {j})")
        seen.add((i, j))
    for name, pairs in (("E", edges), ("A", aliases)):
        bad = np.flatnonzero((pairs < 0) | (pairs >= N))
        if len(bad):
            raise ProblemFormatError(SOURCE, f"{name}[{bad[0] // 2}]",
                                     f"node {pairs.reshape(-1)[bad[0]]} is out of range (N is {N})")
    live = _flat(L_np, np.int64)
    if len(live) < N:
        raise ProblemFormatError(SOURCE, "L", f"has {len(live)} values; its first N = {N} are counts")
    table = lambda pairs: s_len[pairs[:, 0]] * s_len[pairs[:, 1]]  # noqa: E731
    return SolverRequest(
        num_nodes=N, s_len=s_len, s_follow=_flat(s_follow_np, np.int64),
        computation_costs=_split("c", _flat(c_np, np.float64), s_len),
        communication_costs=_split("d", _flat(d_np, np.float64), s_len),
        memory_costs=_split("m", _flat(m_np, np.float64), s_len),
        edges=edges, resharding_costs=_split("r", _flat(r_np, np.float64), table(edges)),
        aliases=aliases, value_costs=_split("v", _flat(v_np, np.float64), table(aliases)),
        live=_split("L", live[N:], live[:N]),
        memory_budget=int(math.floor(M)) if M > 0 else 0, labels=LABELS,
    )


def _fix(problem: Problem, fixed: dict[int, int]) -> Problem:
    """``problem`` with every strategy but the fixed one of each fixed node forbidden."""
    from dataclasses import replace

    costs = problem.node_costs.copy()
    for node, s in fixed.items():
        sl = problem.strategy_slice(node)
        keep = costs[sl.start + s]
        costs[sl] = FORBIDDEN
        costs[sl.start + s] = keep
    return replace(problem, node_costs=costs)


def solve_serialized_args(N: int, M: float, s_len_np: Any, s_follow_np: Any, E_np: Any, A_np: Any,
                          L_np: Any, c_np: Any, d_np: Any, m_np: Any, r_np: Any, v_np: Any,
                          s_init: Any = None, time_limit: float = 60.0,
                          backends: Optional[Iterable[str]] = None,
                          cost_scale: Optional[float] = None
                          ) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Solve Alpa's serialized ILP with the portfolio; returns ``(s_val, e_val, objective, status)``.

    ``s_val[i]`` is node ``i``'s strategy, ``e_val[k] = s_val[i] * s_len[j] + s_val[j]`` for edge
    ``k = (i, j)``, ``objective`` the plan's cost in the arguments' own units (floats summed),
    ``status`` 1 (pulp's code for a solved problem; as with pulp under a time limit, the plan is
    the best found, proven optimal or not). ``s_init`` holds ``(node, strategy, fix)`` triples: a
    fixed node keeps that strategy, the others start from it. A duplicate edge raises ``ValueError``,
    as malformed arguments do; no plan within the budget (and the aliases and fixed nodes) raises
    ``RuntimeError``.
    """
    global last_conversion
    from ..options import RunOptions
    from ..registry import Registry
    from ..runner import run_portfolio

    req = build_request(N, M, s_len_np, s_follow_np, E_np, A_np, L_np, c_np, d_np, m_np, r_np, v_np)
    scale = cost_scale if cost_scale is not None else auto_scale(
        req.computation_costs.values + req.communication_costs.values, req.resharding_costs.values)
    conv = to_problem(req, SOURCE, scale, ALIAS_THRESHOLD)
    last_conversion = conv
    problem = conv.problem
    triples = _flat(s_init, np.int64)
    if len(triples) % 3:
        raise ProblemFormatError(SOURCE, "s_init", "expected (node, strategy, fix) triples")
    fixed: dict[int, int] = {}
    hint = problem.min_usage_strategies.copy()
    for k, (node, s, fix) in enumerate(triples.reshape(-1, 3).tolist()):
        if not (0 <= node < N and 0 <= s < req.s_len[node]):
            raise ProblemFormatError(SOURCE, f"s_init[{k}]", f"node {node}, strategy {s} is out of range")
        target = int(conv.node_of[node])
        hint[target] = s
        if fix:
            if fixed.get(target, s) != s:  # two members of a follower group fixed apart
                raise RuntimeError(f"node {node} is fixed to strategy {s} but a node it follows or "
                                   f"that follows it is fixed to {fixed[target]}")
            fixed[target] = s
    if fixed:
        problem = _fix(problem, fixed)
    chosen = Registry().select(None if backends is None else list(backends))
    options = RunOptions(time_limit, warm_start=hint, presolve=True, fallback=True, exhaustive=True)
    result = run_portfolio(problem, chosen, options)
    ev = None if result.solution is None else evaluate(problem, result.solution)
    if ev is None or not ev.feasible or ev.has_forbidden:
        raise RuntimeError("no plan found that fits the memory budget while honouring the aliases "
                           "and fixed strategies; raise the budget")
    s_val = conv.expand(result.solution)
    edges = req.edges
    e_val = s_val[edges[:, 0]] * req.s_len[edges[:, 1]] + s_val[edges[:, 1]]
    node = (req.computation_costs.values + req.communication_costs.values)
    objective = float(node[req.computation_costs.offsets[:-1] + s_val].sum())
    objective += float(req.resharding_costs.values[req.resharding_costs.offsets[:-1] + e_val].sum())
    return s_val, e_val, objective, 1
