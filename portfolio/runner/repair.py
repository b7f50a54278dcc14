"""Repair a given plan in plain numpy: forbidden choices out, memory under the limit, few moves.

Why here and why numpy: a warm start (a caller's plan, an XLA request's hint, a previous plan mapped
onto a changed problem) must count as an incumbent before any backend starts, so the runner repairs
it in its own process, where nothing is compiled (the fallback plan's rule, :mod:`.fallback`). The
repair keeps what it can of the plan, which is the point of a warm start: it moves only the nodes
that break something.

Three steps, each a few vectorised passes:

1. a node on a forbidden strategy takes its cheapest allowed one (arc consistency on forbidden edge
   entries first, when it does not wipe a node out); a node the caller left open (a negative entry,
   see :func:`fill_open`) the same;
2. an edge on a forbidden entry is mended by the fallback's waves (:func:`.fallback.repair_waves`,
   then its min-conflicts passes), cheapest node cost first;
3. while memory is over the capacity, the nodes live at an overloaded time point move to a strategy
   that uses less memory there (and no more anywhere), cheapest cost increase per unit of memory
   saved first, edges included, never onto a forbidden entry; two neighbours never move in the same
   round, so every increase is exact.

When memory cannot be made to fit, :func:`repair_plan` says so (``fits`` False): the caller keeps
the plan as a hint for the backends only.

**Why the kernels have a repair of their own** (:class:`portfolio.kernels.engine.Repairer`, numba,
which the toulbar2 engine and the local search use), and the two stay two:

- This one must answer before anything is compiled (a cold compile of the kernels' stages is about
  a minute of CPU), and whether the kernels happen to be compiled is the machine's state, which may
  not choose a deterministic run's plan: so it cannot call theirs, not even when it could.
- It repairs whatever a caller gives, on the problem as read: open nodes, forbidden strategies and
  forbidden edge entries, then memory. Theirs gets plans of the kernels' reduced view, whose
  forbidden strategies are pruned already: memory only, then their exact descent with block moves.
- It cannot serve their callers either: on the same overloading plans (every node on its cheapest
  strategy, A, K, N, S) it takes 1.1 to 34 times their CPU and ends 1.3 to 4.7 times dearer
  (``python benchmarks/repairs.py A K N S``; docs/architecture.md, "Two plan repairs").
- Either one in the other's place would change every plan that goes through it.

What they share is the rule (cheapest cost added per unit of memory saved where memory is over,
then a descent), not code: this one moves rounds of non-adjacent nodes at once with vectorised
passes over the problem's arrays; theirs relieves the worst time point at a time on the search's
incremental state, inside numba, which cannot call a numpy helper (and a shared numba helper would
make this one compile). What is shared is shared: the fallback's propagation (:mod:`.fallback`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..evaluate import chosen_edge_positions, evaluate, usage_profile
from ..problem import FORBIDDEN, Problem
from .fallback import PairEdges, consistent_strategies, min_conflicts, repair_waves, safe_plan


@dataclass
class Repair:
    """What :func:`repair_plan` did."""

    plan: np.ndarray
    forbidden_moves: int = 0
    """Nodes moved off forbidden node strategies or edge entries."""
    memory_moves: int = 0
    """Node moves made to bring memory under the capacity."""
    fits: bool = True
    """Memory is within the capacity at every time point."""
    forbidden_left: int = 0
    """Forbidden node choices and edge entries the repair could not remove."""
    polish_moves: int = 0
    """Cheaper single-node moves made once the plan fitted (a 1-opt descent)."""
    filled: int = 0
    """Nodes left open (negative entries) that took a strategy."""
    seconds: float = 0.0

    def text(self) -> str:
        parts = [f"{self.filled:,} open nodes filled"] if self.filled else []
        if self.forbidden_moves:
            parts.append(f"{self.forbidden_moves:,} nodes moved off forbidden choices")
        if self.memory_moves:
            parts.append(f"{self.memory_moves:,} moves to fit memory")
        if not self.fits:
            parts.append("memory still over the capacity")
        if self.polish_moves:
            parts.append(f"{self.polish_moves:,} cheaper moves after")
        if self.forbidden_left:
            parts.append(f"{self.forbidden_left:,} forbidden choices left")
        return ", ".join(parts) or "nothing to change"


def _allowed(problem: Problem, stop: float) -> np.ndarray:
    """Strategies that may be chosen: not forbidden, and supported on every two-node edge with
    forbidden entries (arc consistency) unless that empties some node's domain."""
    alive = consistent_strategies(problem, stop)
    return alive if alive is not None else problem.node_costs != FORBIDDEN


def _cheapest(problem: Problem, nodes: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Per node of ``nodes``, its cheapest allowed strategy (ties: least memory, then index)."""
    so, counts = problem.strategy_offsets, problem.strategy_counts
    owner = np.repeat(np.arange(len(nodes)), counts[nodes])
    within = np.arange(len(owner)) - np.repeat(np.cumsum(counts[nodes]) - counts[nodes], counts[nodes])
    g = so[nodes][owner] + within
    order = np.lexsort((within, problem.strategy_usage_rank[g], problem.node_costs[g], ~alive[g], owner))
    first = np.cumsum(counts[nodes]) - counts[nodes]
    return within[order][first]


def fill_open(problem: Problem, partial: np.ndarray, rounds: int = 3) -> np.ndarray:
    """A plan from a partial one: every negative entry (a node left open) takes its cheapest
    strategy that is not forbidden (ties: least memory), then, for a few rounds, the strategy that
    is cheapest with its neighbours' choices, edges included, landing on no forbidden entry (memory
    aside: the repair fits it after)."""
    plan = np.array(partial, dtype=np.int64)
    open_nodes = np.flatnonzero(plan < 0)
    if not len(open_nodes):
        return plan
    allowed = problem.node_costs != FORBIDDEN
    plan[open_nodes] = _cheapest(problem, open_nodes, allowed)
    moves = _Moves(problem)
    for _ in range(rounds):
        moves.current = chosen_edge_positions(problem, plan)
        pn, ps, delta, _, _ = moves.pairs(plan, allowed, open_nodes)
        nodes, strategies, gain = _best_per_node(pn, ps, delta)
        touched = np.zeros(problem.num_nodes, dtype=bool)
        moved = 0
        for v, s, d in zip(nodes.tolist(), strategies.tolist(), gain.tolist()):
            if d >= 0 or touched[v]:
                continue
            plan[v] = s
            touched[v] = True
            touched[problem.neighbours(v)] = True
            moved += 1
        if not moved:
            break
    return plan


def _fix_forbidden(problem: Problem, plan: np.ndarray, alive: np.ndarray, stop: float,
                   lean: bool = False) -> int:
    """Steps 1 and 2 in place, cheapest choices first (``lean``: least memory first); returns how
    many nodes changed."""
    before = plan.copy()
    so = problem.strategy_offsets[:-1]
    bad = np.flatnonzero(problem.node_costs[so + plan] == FORBIDDEN)
    if len(bad):
        plan[bad] = _cheapest(problem, bad, alive)
    pe = PairEdges(problem)
    if len(pe.u) and pe.bad_edges(plan).any():
        # cheapest first: a warm start is meant to be cheap (unless memory is what is short)
        rank = problem.strategy_usage_rank if lean else problem.node_costs
        repair_waves(problem, plan, alive, rank, pe, stop)
        if pe.bad_edges(plan).any():
            min_conflicts(problem, plan, alive, rank, pe, stop)
        bad = pe.bad_edges(plan)
        if bad.any():
            # What is left needs whole chains to move: every node joined through edges with
            # forbidden entries to a node still on one takes the fallback's forbidden-free choice.
            label = _components(problem.num_nodes, pe.u, pe.v)
            group = np.isin(label, label[np.concatenate([pe.u[bad], pe.v[bad]])])
            lean = safe_plan(problem, max(0.1, stop - time.monotonic()))
            if not pe.bad_edges(lean)[np.isin(label[pe.u], label[group])].any():
                plan[group] = lean[group]
    return int(np.count_nonzero(plan != before))


class _Moves:
    """Step 3's arrays, built once per plan: slots of edges by node, strides of each slot."""

    def __init__(self, problem: Problem) -> None:
        self.p = problem
        arity = problem.edge_arity
        starts = problem.edge_node_offsets[:-1]
        stride = np.ones(len(problem.edge_nodes), dtype=np.int64)
        for q in range(int(arity.max(initial=0)) - 2, -1, -1):   # positions from the last one down
            mask = arity > q + 1
            stride[starts[mask] + q] = (stride[starts[mask] + q + 1] *
                                        problem.strategy_counts[problem.edge_nodes[starts[mask] + q + 1]])
        self.slot_edge = np.repeat(np.arange(problem.num_edges, dtype=np.int64), arity)
        order = np.argsort(problem.edge_nodes, kind="stable")
        self.slot_order, self.slot_stride = order, stride
        self.slot_offsets = np.zeros(problem.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(problem.edge_nodes, minlength=problem.num_nodes), out=self.slot_offsets[1:])
        edge_of = self.slot_edge[order]
        node_of = problem.edge_nodes[order]
        self.current = np.zeros(0, dtype=np.int64)   # each edge's chosen entry, set per round
        self.repeats = bool(len(order) > 1 and np.any((edge_of[1:] == edge_of[:-1]) &
                                                      (node_of[1:] == node_of[:-1])))

    def rows(self, offsets: np.ndarray, order: np.ndarray, nodes: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """(owner, item) rows: for each k, the items ``order[offsets[nodes[k]]:offsets[nodes[k]+1]]``."""
        counts = offsets[nodes + 1] - offsets[nodes]
        owner = np.repeat(np.arange(len(nodes)), counts)
        within = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        return owner, order[offsets[nodes][owner] + within]

    def pairs(self, plan: np.ndarray, alive: np.ndarray, cand: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every move of a candidate node to another allowed strategy that lands on no forbidden
        entry: (nodes, strategies, cost change with the edges, and per (move, interval of its
        node) rows: the move's index and the interval)."""
        p = self.p
        so, counts = p.strategy_offsets, p.strategy_counts
        pn = np.repeat(cand, counts[cand])
        ps = np.arange(len(pn)) - np.repeat(np.cumsum(counts[cand]) - counts[cand], counts[cand])
        keep = alive[so[pn] + ps] & (ps != plan[pn])
        pn, ps = pn[keep], ps[keep]
        delta = (p.node_costs[so[pn] + ps] - p.node_costs[so[pn] + plan[pn]]).astype(np.float64)
        owner, slot = self.rows(self.slot_offsets, self.slot_order, pn)
        edge = self.slot_edge[slot]
        shift = (ps[owner] - plan[pn[owner]]) * self.slot_stride[slot]
        if self.repeats:   # an edge naming the node twice moves on both of its positions
            key = owner * max(1, p.num_edges) + edge
            uniq, inverse = np.unique(key, return_inverse=True)
            total = np.zeros(len(uniq), dtype=np.int64)
            np.add.at(total, inverse, shift)
            owner, edge, shift = uniq // max(1, p.num_edges), uniq % max(1, p.num_edges), total
        current = self.current[edge]
        old, new = p.edge_costs[current], p.edge_costs[current + shift]
        lands = np.bincount(owner, weights=(new == FORBIDDEN) & (old != FORBIDDEN),
                            minlength=len(pn)) > 0
        delta += np.bincount(owner, weights=(new - old).astype(np.float64), minlength=len(pn))
        pn, ps, delta = pn[~lands], ps[~lands], delta[~lands]
        owner, j = self.rows(p.node_interval_offsets, p.node_interval_order, pn)
        return pn, ps, delta, owner, j

    def usage_change(self, plan: np.ndarray, pn: np.ndarray, ps: np.ndarray, owner: np.ndarray,
                     j: np.ndarray) -> np.ndarray:
        """Per (move, interval) row: the memory the move adds on that interval (negative: saves)."""
        iuo, usages = self.p.interval_usage_offsets, self.p.interval_usages
        return usages[iuo[j] + ps[owner]] - usages[iuo[j] + plan[pn[owner]]]


def _best_per_node(pn: np.ndarray, ps: np.ndarray, score: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node, its move of least score; the moves by score (ties: node, strategy)."""
    best = np.lexsort((ps, score, pn))
    pick = best[np.unique(pn[best], return_index=True)[1]]
    pick = pick[np.lexsort((pn[pick], score[pick]))]
    return pn[pick], ps[pick], score[pick]


class _Memory:
    """The plan's usage profile against the capacity, updated move by move."""

    def __init__(self, problem: Problem, plan: np.ndarray) -> None:
        self.p, self.plan = problem, plan
        self.cap = problem.point_capacity
        self.lo, self.hi = problem.interval_point_range
        self.profile = np.array(usage_profile(problem, plan))
        self.exact = self.profile.dtype == np.int64   # usages near 2**63: no repair, exact sums only

    def slack_of(self, j: np.ndarray) -> np.ndarray:
        """Least ``capacity - usage`` over each interval's time points (INT64_MAX when none)."""
        slack = np.append(self.cap - self.profile, np.iinfo(np.int64).max)
        lo, hi = self.lo[j], self.hi[j]
        out = np.full(len(j), np.iinfo(np.int64).max, dtype=np.int64)
        some = hi > lo
        if some.any():
            idx = np.stack([lo[some], hi[some]], axis=1).reshape(-1)
            out[some] = np.minimum.reduceat(slack, idx)[::2]
        return out

    def fits_move(self, v: int, s: int) -> bool:
        iuo, usages = self.p.interval_usage_offsets, self.p.interval_usages
        for j in self.p.intervals_of(v).tolist():
            add = usages[iuo[j] + s] - usages[iuo[j] + self.plan[v]]
            lo, hi = self.lo[j], self.hi[j]
            if add > 0 and hi > lo and np.any(self.profile[lo:hi] + add > self.cap[lo:hi]):
                return False
        return True

    def over_on(self, v: int) -> bool:
        return any(np.any(self.profile[self.lo[j]:self.hi[j]] > self.cap[self.lo[j]:self.hi[j]])
                   for j in self.p.intervals_of(v).tolist())

    def move(self, v: int, s: int) -> None:
        iuo, usages = self.p.interval_usage_offsets, self.p.interval_usages
        for j in self.p.intervals_of(v).tolist():
            self.profile[self.lo[j]:self.hi[j]] += usages[iuo[j] + s] - usages[iuo[j] + self.plan[v]]
        self.plan[v] = s

    def fits(self) -> bool:
        return bool(np.all(self.profile <= self.cap))


def _fit_memory(problem: Problem, plan: np.ndarray, alive: np.ndarray, stop: float
                ) -> tuple[int, bool]:
    """Step 3 in place: (moves made, whether memory fits). A move saves memory on an interval
    covering an overloaded point, adds none anywhere, and is ranked by cost added per unit saved."""
    mem, moves = _Memory(problem, plan), _Moves(problem)
    if not mem.exact:
        return 0, mem.fits()
    made = 0
    while time.monotonic() < stop:
        over = mem.profile > mem.cap
        if not over.any():
            return made, True
        cum = np.concatenate([[0], np.cumsum(over)])
        covers = cum[mem.hi] > cum[mem.lo]
        cand = np.unique(problem.interval_node[covers])
        moves.current = chosen_edge_positions(problem, plan)
        pn, ps, delta, owner, j = moves.pairs(plan, alive, cand)
        added = moves.usage_change(plan, pn, ps, owner, j)
        worse = np.bincount(owner, weights=added > 0, minlength=len(pn)) > 0
        gain = np.bincount(owner, weights=np.where(covers[j], -added, 0).astype(np.float64),
                           minlength=len(pn))
        ok = ~worse & (gain > 0)
        nodes, strategies, _ = _best_per_node(pn[ok], ps[ok], delta[ok] / gain[ok])
        touched = np.zeros(problem.num_nodes, dtype=bool)
        moved = 0
        for v, s in zip(nodes.tolist(), strategies.tolist()):
            if touched[v] or not mem.over_on(v):
                continue
            mem.move(v, s)
            touched[v] = True
            touched[problem.neighbours(v)] = True
            moved += 1
            if moved % 64 == 0 and (mem.fits() or time.monotonic() >= stop):
                break
        made += moved
        if not moved:
            break
    return made, mem.fits()


def _polish(problem: Problem, plan: np.ndarray, alive: np.ndarray, stop: float,
            rounds: int = 50) -> int:
    """Cheaper single-node moves that keep memory within the capacity and land on no forbidden
    entry, best first, no two neighbours in one round, until none is left (a 1-opt descent).
    Recovers what the greedy steps gave away. In place; returns the moves made."""
    mem, moves = _Memory(problem, plan), _Moves(problem)
    if not mem.exact or not mem.fits():
        return 0
    made = 0
    cand = np.arange(problem.num_nodes, dtype=np.int64)
    for _ in range(rounds):
        if time.monotonic() >= stop or not len(cand):
            break
        moves.current = chosen_edge_positions(problem, plan)
        pn, ps, delta, owner, j = moves.pairs(plan, alive, cand)
        added = moves.usage_change(plan, pn, ps, owner, j)
        room = np.bincount(owner, weights=added > mem.slack_of(j), minlength=len(pn)) == 0
        ok = room & (delta < 0)
        nodes, strategies, _ = _best_per_node(pn[ok], ps[ok], delta[ok])
        touched = np.zeros(problem.num_nodes, dtype=bool)
        moved = []
        for v, s in zip(nodes.tolist(), strategies.tolist()):
            if touched[v] or not mem.fits_move(v, s):
                continue
            mem.move(v, s)
            touched[v] = True
            touched[problem.neighbours(v)] = True
            moved.append(v)
        made += len(moved)
        if not moved:
            break
        near = np.concatenate([np.asarray(moved, dtype=np.int64)] +
                              [problem.neighbours(v) for v in moved])
        cand = np.unique(np.concatenate([near, nodes[~np.isin(nodes, moved)]]))
    return made


def polish(problem: Problem, plan: object, seconds: float = 0.5) -> tuple[np.ndarray, int]:
    """``plan`` after the repair's 1-opt descent (cheaper single-node moves that keep memory within
    the capacity and land on no forbidden entry), within about ``seconds``; (plan, moves made).
    A plan over the memory capacity comes back as it is (the repair fits it first)."""
    work = np.array(plan, dtype=np.int64)
    stop = time.monotonic() + seconds
    moves = _polish(problem, work, _allowed(problem, stop), stop)
    return work, moves


def _components(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A label per node, equal within each connected component of the edges (u, v)."""
    label = np.arange(n, dtype=np.int64)
    while len(u):
        low = np.minimum(label[u], label[v])
        new = label.copy()
        np.minimum.at(new, u, low)
        np.minimum.at(new, v, low)
        new = new[new]                      # pointer jumping: long chains settle in few passes
        if np.array_equal(new, label):
            return label
        label = new
    return label


def repair_plan(problem: Problem, plan: object, seconds: float = 2.0) -> Repair:
    """``plan`` (negative entries: nodes left open) made free of forbidden choices where the
    fallback's propagation can, and fitted under the memory capacity with as few, as cheap moves as
    the greedy finds, within about ``seconds``. The input is not changed."""
    t0 = time.monotonic()
    stop = t0 + seconds
    work = fill_open(problem, np.asarray(plan, dtype=np.int64))
    opened = int(np.count_nonzero(np.asarray(plan) < 0))
    alive = _allowed(problem, t0 + seconds / 4)
    fixed = _fix_forbidden(problem, work, alive, t0 + seconds / 2)
    made, fits = _fit_memory(problem, work, alive, t0 + 0.6 * seconds)
    if not fits and time.monotonic() < t0 + 0.6 * seconds:
        # Stuck: what is left needs several neighbours to move at once. Every node joined through
        # edges with forbidden entries to a node live where memory is over takes the fallback's
        # memory-lean, forbidden-free choice (whole groups, so no forbidden entry appears at their
        # border), and memory is fitted again.
        mem = _Memory(problem, work)
        cum = np.concatenate([[0], np.cumsum(mem.profile > mem.cap)])
        region = np.unique(problem.interval_node[cum[mem.hi] > cum[mem.lo]])
        pe = PairEdges(problem)
        label = _components(problem.num_nodes, pe.u, pe.v)
        group = np.isin(label, label[region])
        lean = safe_plan(problem, seconds / 5)
        made += int(np.count_nonzero(work[group] != lean[group]))
        work[group] = lean[group]
        again, fits = _fit_memory(problem, work, alive, t0 + 0.8 * seconds)
        made += again
    polished = _polish(problem, work, alive, stop) if fits else 0
    ev = evaluate(problem, work)
    return Repair(work, fixed, made, ev.feasible,
                  ev.forbidden_node_choices + ev.forbidden_edge_entries, polished, opened,
                  time.monotonic() - t0)
