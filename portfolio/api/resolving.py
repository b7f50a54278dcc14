"""``portfolio.resolve``: solve a changed problem from the plan of the previous one.

A compiler re-solves the same graph after a small change (a tighter memory budget, a few costs, a
few strategies gone). The previous plan is mapped onto the new problem node by node, every choice
checked, and the solve starts from it: the runner repairs what the change broke (forbidden choices,
memory over the new budget; :mod:`portfolio.runner.repair`) and the answer is never worse than the
repaired plan.

How nodes correspond: a ``node_map`` when the caller gives one; else by instruction name when both
problems are XLA requests that carry one distinct name per node (``instruction_names``); else by
index when both have the same number of nodes. Another size without names or a map is refused.

How a choice carries over: kept when it is in range and the node's strategy list kept its length;
when the length changed and the previous problem is given, the previous choice is found again by its
signature (node cost, and memory on each of the node's intervals) when exactly one strategy has it,
or, when several have it and the new list is the old one with entries removed, by aligning the two
lists; else the node is left open and takes its cheapest strategy given its neighbours. Then single-node
moves that make the plan cheaper while it fits in memory (the repair's polish), before the run's
repair mends what is still broken. Nodes, choices and moves are counted in the result's
``warm_start["mapping"]``.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..errors import ProblemError
from .inputs import ProblemLike, as_conversion
from .warm import PlanLike, Remapper, WarmChoice, _integers, _source, read_plan

if TYPE_CHECKING:
    from ..adapters.conversion import Conversion
    from ..problem import Problem
    from .solving import SolveResult


def resolve(new_problem: ProblemLike, previous_plan: PlanLike,
            previous_problem: Optional[ProblemLike] = None, *,
            node_map: Optional[PlanLike] = None, **solve_kwargs: Any) -> SolveResult:
    """Solve ``new_problem`` starting from ``previous_plan`` (a plan of ``previous_problem``, or a
    file holding one), mapped onto it as the module says, repaired where the change broke it; the
    answer is never worse than the mapped and repaired plan. ``previous_problem`` (a path, a
    Problem or a dict) lets a choice be found again in a changed strategy list, and XLA requests be
    mapped by instruction name; ``node_map`` gives, per node of the new problem (its file's order),
    the index of its node in the previous one (-1 for a new node). Every other keyword is
    :func:`portfolio.solve`'s (``time_limit``, ``backends``, ``seed``, ...). What was mapped, left
    open and repaired is in ``SolveResult.warm_start``. Bad input raises :class:`ProblemError`.
    ``portfolio solve NEW --warm-start PLAN --previous OLD`` is the same from the command line."""
    from .solving import solve

    if "warm_start" in solve_kwargs:
        raise ProblemError("resolve: the previous plan is the warm start; warm_start is not taken")
    scale = solve_kwargs.get("cost_scale", 1.0)
    deterministic = bool(solve_kwargs.get("deterministic") or solve_kwargs.get("work"))
    return solve(new_problem, warm_start=Remap(previous_plan, previous_problem, node_map, scale,
                                               deterministic=deterministic), **solve_kwargs)


@dataclass
class Remap(Remapper):
    """The previous plan mapped onto the problem once it is loaded (inside the solve's time)."""

    plan: PlanLike
    previous: Optional[ProblemLike] = None
    node_map: Optional[PlanLike] = None
    cost_scale: float = 1.0
    what: str = "previous plan"
    deterministic: bool = False
    """Deterministic mode: the polish runs to its own end (at most its rounds), never cut by a clock."""

    def __call__(self, conversion: Conversion) -> WarmChoice:
        from ..runner.repair import fill_open, polish

        plan, label = read_plan(self.plan, self.what)
        old = None if self.previous is None else as_conversion(self.previous, float(self.cost_scale))
        given = None
        if self.node_map is not None:
            given, _ = read_plan(self.node_map, "node map")
        partial, report = map_plan(conversion, plan, old, given, label)
        # a choice found again among equal signatures, or a node left open, may not suit its
        # neighbours: single-node moves that make the plan cheaper (memory kept) settle that
        filled = fill_open(conversion.problem, partial)
        mapped, report["polish_moves"] = polish(conversion.problem, filled,
                                                math.inf if self.deterministic else 0.5)
        return WarmChoice(mapped,
                          f"re-solve from {_source(self.plan, 'the previous plan')}", report)


def _correspondence(new: Conversion, plan_len: int, old: Optional[Conversion],
                    node_map: Any, label: str) -> tuple[np.ndarray, str]:
    """Per node of the new file, the index of its node in the previous one (-1: new), and how."""
    n = len(new.node_of)
    if node_map is not None:
        try:
            src = _integers(node_map)
        except ProblemError as exc:
            raise ProblemError(f"node map: {exc}") from None
        if len(src) != n:
            raise ProblemError(f"node map: has {len(src)} entries but the new problem has {n} nodes")
        bad = np.flatnonzero((src < -1) | (src >= plan_len))
        if len(bad):
            i = int(bad[0])
            raise ProblemError(f"node map: entry [{i}] = {src[i]} names no node of the previous "
                               f"plan (0..{plan_len - 1}, or -1 for a new node)")
        return src, "node map"
    if old is not None and new.names is not None and old.names is not None:
        where = {name: i for i, name in enumerate(old.names)}
        return np.array([where.get(name, -1) for name in new.names], dtype=np.int64), "instruction name"
    if plan_len != n:
        raise ProblemError(f"{label}: has {plan_len} entries but the new problem has {n} nodes; a "
                           f"plan of another size is mapped by instruction name (XLA requests that "
                           f"carry them, with the previous problem) or by a node map")
    return np.arange(n, dtype=np.int64), "index"


def _signatures(problem: Problem, node: int) -> list[tuple]:
    """Per strategy of ``node``: (cost, memory on each of its intervals)."""
    lo = int(problem.strategy_offsets[node])
    js = problem.intervals_of(node).tolist()
    iuo, usages = problem.interval_usage_offsets, problem.interval_usages
    return [(int(problem.node_costs[lo + s]), tuple(int(usages[iuo[j] + s]) for j in js))
            for s in range(int(problem.strategy_counts[node]))]


def _find_again(before: list[tuple], after: list[tuple], c: int) -> int:
    """The new index of old strategy ``c`` of a node whose list changed, or -1: the one strategy
    with its signature; else, when the new list is the old one with entries removed, where the
    alignment of the two lists puts it (equal signatures side by side: they cannot be told apart,
    so the order decides); else -1."""
    same = [s for s, sig in enumerate(after) if sig == before[c]]
    if len(same) == 1:
        return same[0]
    if not same or len(after) > len(before):
        return -1
    at, j = {}, 0
    for i, sig in enumerate(before):
        if j < len(after) and sig == after[j]:
            at[i], j = j, j + 1
    if j < len(after):        # not a subsequence: something else changed too
        return -1
    return at.get(c, -1)


def map_plan(new: Conversion, plan: Any, old: Optional[Conversion], node_map: Any = None,
             label: str = "previous plan") -> tuple[np.ndarray, dict]:
    """The previous ``plan`` (in its file's node order) as a partial plan of ``new.problem``: -1
    where a node is left open (new, its choice gone, or its followers disagreeing), and the counts
    of what happened."""
    try:
        arr = _integers(plan)
    except ProblemError as exc:
        raise ProblemError(f"{label}: {exc}") from None
    if old is not None and len(arr) != len(old.node_of):
        raise ProblemError(f"{label}: has {len(arr)} entries but the previous problem has "
                           f"{len(old.node_of)} nodes")
    src, by = _correspondence(new, len(arr), old, node_map, label)
    choice = np.where(src >= 0, arr[np.maximum(src, 0)], -1) if len(arr) else np.full(len(src), -1)
    node = new.node_of
    counts = new.problem.strategy_counts[node]
    mapped = src >= 0
    gone = np.zeros(len(src), dtype=bool)         # out of the previous node's range
    changed = np.zeros(len(src), dtype=bool)      # the node's strategy list changed length
    if old is not None:
        old_counts = old.problem.strategy_counts[old.node_of[np.maximum(src, 0)]]
        gone = mapped & ((choice < 0) | (choice >= old_counts))
        changed = mapped & ~gone & (old_counts != counts)
    found = 0
    for i in np.flatnonzero(changed).tolist():
        before = _signatures(old.problem, int(old.node_of[src[i]]))
        after = _signatures(new.problem, int(node[i]))
        choice[i] = _find_again(before, after, int(choice[i]))
        found += int(choice[i] >= 0)
    plain = mapped & ~gone & ~changed
    out = plain & ((choice < 0) | (choice >= counts))
    choice[gone | out] = -1
    kept = int(np.count_nonzero(plain & ~out))
    lost = int(np.count_nonzero(gone | out)) + int(np.count_nonzero(changed)) - found
    partial, disagree = _to_problem(new, choice)
    report = {"by": by, "nodes": len(src), "kept": kept, "found_by_signature": found,
              "choice_lost": lost, "new_nodes": int(np.count_nonzero(src < 0)),
              "followers_disagreeing": disagree, "open": int(np.count_nonzero(partial < 0)),
              "previous_cost": _previous_cost(old, arr)}
    return partial, report


def _previous_cost(old: Optional[Conversion], plan: np.ndarray) -> Optional[int]:
    """What the previous plan cost on the previous problem (None: no previous problem given, or
    the plan is not a valid, feasible plan of it): the yardstick of a re-solve's answer."""
    if old is None:
        return None
    from ..evaluate import SolutionError, evaluate

    try:
        ev = evaluate(old.problem, old.restrict(plan))
    except (SolutionError, ValueError):
        return None
    return int(ev.cost) if ev.feasible else None


def _to_problem(new: Conversion, choice: np.ndarray) -> tuple[np.ndarray, int]:
    """File choices as problem choices: a node whose file nodes (a leader and its followers) agree
    takes their choice, open ones aside; one whose file nodes disagree is left open."""
    n = new.problem.num_nodes
    known = choice >= 0
    low = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.full(n, -1, dtype=np.int64)
    np.minimum.at(low, new.node_of[known], choice[known])
    np.maximum.at(high, new.node_of[known], choice[known])
    agree = (high >= 0) & (low == high)
    disagree = int(np.count_nonzero((high >= 0) & (low != high)))
    return np.where(agree, high, -1), disagree
