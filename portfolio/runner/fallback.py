"""The instant safety net: a plan from plain numpy (no JIT, nothing to compile), avoiding forbidden
entries whenever a cheap propagation can.

Per node, the least-memory strategy among those that survive arc consistency on forbidden entries
(a strategy is dropped when some two-node edge allows it with no remaining strategy of the other
node), assigned in breadth-first order over the graph of edges with forbidden entries, each node
taking its least-memory strategy allowed with every neighbour already assigned; then a few repair
passes for what that order leaves (edges closing a cycle). On a forest of such edges (K, M and S
among the contest instances) arc consistency plus that order is forbidden-free by construction. When
consistency empties a node's domain (no forbidden-free plan exists), the plain least-memory plan is
kept: a plan with forbidden entries is still a valid, if enormously expensive, answer.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ..evaluate import evaluate
from ..problem import FORBIDDEN, Problem

REPAIR_SECONDS = 3.0
"""Default time cap of the repair passes (the consistency itself is a few numpy passes)."""


class PairEdges:
    """Two-node edges with at least one forbidden entry: their *allowed* entries, flattened (only
    allowed entries can support a strategy, and on chain-like edges they are few)."""

    def __init__(self, problem: Problem) -> None:
        so, counts = problem.strategy_offsets, problem.strategy_counts
        off = problem.edge_cost_offsets
        forb_entries = problem.edge_costs == FORBIDDEN
        has_forb = np.zeros(problem.num_edges, dtype=bool)
        nonempty = np.diff(off) > 0
        if forb_entries.any():
            has_forb[nonempty] = np.logical_or.reduceat(forb_entries, off[:-1][nonempty])
        keep = np.flatnonzero(has_forb & (problem.edge_arity == 2))
        starts = problem.edge_node_offsets[:-1][keep]
        self.u, self.v = problem.edge_nodes[starts], problem.edge_nodes[starts + 1]
        self.kv = counts[self.v]
        self.first = off[:-1][keep]                      # each edge's first entry in edge_costs
        # the allowed entries of these edges, found through one boolean mask over all entries
        # (A: 5.9M entries, 0.2M of them wanted: no per-entry index array of the whole table)
        mark = np.zeros(len(forb_entries) + 1, dtype=np.int8)
        mark[self.first] = 1
        mark[off[1:][keep]] -= 1
        inside = np.cumsum(mark[:-1], dtype=np.int8).view(bool)
        idx = np.flatnonzero(inside & ~forb_entries)
        edge = np.searchsorted(self.first, idx, side="right") - 1
        pos = idx - self.first[edge]
        kv = self.kv[edge]
        self.entry_edge = edge
        self.su = so[self.u][edge] + pos // kv            # global strategy index of each side
        self.sv = so[self.v][edge] + pos % kv
        ku = counts[self.u]
        # (edge, strategy of u) and (edge, strategy of v) pairs: one id each, for support counts
        base_u, base_v = np.cumsum(ku) - ku, np.cumsum(self.kv) - self.kv
        self.pu = base_u[edge] + pos // kv
        self.pv = base_v[edge] + pos % kv
        self.nu, self.nv = int(ku.sum()), int(self.kv.sum())
        self.su_of_pair = np.repeat(so[self.u], ku) + (np.arange(self.nu) - np.repeat(base_u, ku))
        self.sv_of_pair = (np.repeat(so[self.v], self.kv) +
                           (np.arange(self.nv) - np.repeat(base_v, self.kv)))
        self.costs = problem.edge_costs

    def bad_edges(self, plan: np.ndarray) -> np.ndarray:
        """Mask of these edges whose chosen entry is forbidden."""
        return self.costs[self.first + plan[self.u] * self.kv + plan[self.v]] == FORBIDDEN


def consistent_strategies(problem: Problem, stop: float = float("inf"),
                          pe: Optional[PairEdges] = None) -> Optional[np.ndarray]:
    """Allowed-strategy mask after arc consistency on forbidden entries; None on a wipe-out.
    Past ``stop`` the passes end early: every strategy removed so far is still rightly removed."""
    alive = problem.node_costs != FORBIDDEN
    node_of = np.repeat(np.arange(problem.num_nodes), problem.strategy_counts)
    if not np.all(np.bincount(node_of, weights=alive, minlength=problem.num_nodes) > 0):
        return None
    pe = PairEdges(problem) if pe is None else pe
    if len(pe.u) == 0:
        return alive
    while True:
        ok = alive[pe.su] & alive[pe.sv]
        dead_u = pe.su_of_pair[np.bincount(pe.pu, weights=ok, minlength=pe.nu) == 0]
        dead_v = pe.sv_of_pair[np.bincount(pe.pv, weights=ok, minlength=pe.nv) == 0]
        dead = np.concatenate([dead_u, dead_v])
        dead = dead[alive[dead]]
        if len(dead) == 0 or time.monotonic() > stop:
            alive[dead] = False
            return alive if np.all(np.bincount(node_of, weights=alive, minlength=problem.num_nodes)
                                   > 0) else None
        alive[dead] = False
        if not np.all(np.bincount(node_of, weights=alive, minlength=problem.num_nodes) > 0):
            return None


def _pick(problem: Problem, alive: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Per node, the alive strategy of least usage (ties: cost, then index)."""
    n = problem.num_nodes
    seg = np.repeat(np.arange(n), problem.strategy_counts)
    order = np.lexsort((np.arange(len(rank)), problem.node_costs, rank, ~alive, seg))
    starts = problem.strategy_offsets[:-1]
    return order[starts] - starts


def _bfs_levels(num_nodes: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Breadth-first level of every node in the graph of edges (u, v); -1 for nodes on no edge.
    Each component's root is its lowest-numbered node."""
    adj: list[list[int]] = [[] for _ in range(num_nodes)]
    for a, b in zip(u.tolist(), v.tolist()):
        adj[a].append(b)
        adj[b].append(a)
    level = [-1] * num_nodes
    for root in np.unique(np.concatenate([u, v])).tolist():
        if level[root] >= 0:
            continue
        level[root], frontier = 0, [root]
        while frontier:
            nxt = []
            for a in frontier:
                for b in adj[a]:
                    if level[b] < 0:
                        level[b] = level[a] + 1
                        nxt.append(b)
            frontier = nxt
    return np.asarray(level, dtype=np.int64)


def _assign_in_order(problem: Problem, plan: np.ndarray, alive: np.ndarray, rank: np.ndarray,
                     pe: PairEdges, stop: float) -> np.ndarray:
    """Level by level of a breadth-first order over the forbidden-entry edges, each node takes the
    alive strategy allowed by the most of its edges to earlier levels (all of them whenever arc
    consistency leaves one, as it always does on a forest), least memory first. Edges inside a
    level are left to the repair."""
    if len(pe.u) == 0:
        return plan
    so = problem.strategy_offsets[:-1]
    level = _bfs_levels(problem.num_nodes, pe.u, pe.v)
    lu, lv = level[pe.u], level[pe.v]
    e = pe.entry_edge
    v_later = (lv > lu)[e]
    later_level = np.maximum(lu, lv)[e]
    keep = lu[e] != lv[e]
    early_node = np.where(v_later, pe.u[e], pe.v[e])[keep]
    early_s = np.where(v_later, pe.su, pe.sv)[keep]
    cand = np.where(v_later, pe.sv, pe.su)[keep]
    order = np.argsort(later_level[keep], kind="stable")
    early_node, early_s, cand = early_node[order], early_s[order], cand[order]
    ent_level = later_level[keep][order]
    node_of = np.repeat(np.arange(problem.num_nodes), problem.strategy_counts)
    by_level = np.argsort(level, kind="stable")
    node_bounds = np.searchsorted(level[by_level], np.arange(level.max() + 2))
    ent_bounds = np.searchsorted(ent_level, np.arange(level.max() + 2))
    gs = so + plan
    for lev in range(1, int(level.max()) + 1):
        if time.monotonic() > stop:
            break
        nodes = by_level[node_bounds[lev]:node_bounds[lev + 1]]
        sl = slice(ent_bounds[lev], ent_bounds[lev + 1])
        ok = gs[early_node[sl]] == early_s[sl]
        supported, support = np.unique(cand[sl][ok], return_counts=True)
        counts = problem.strategy_counts[nodes]
        strategies = np.repeat(so[nodes], counts) + (
            np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
        score = np.zeros(len(strategies), dtype=np.int64)
        hit = np.searchsorted(supported, strategies)
        found = hit < len(supported)
        found[found] = supported[hit[found]] == strategies[found]
        score[found] = support[hit[found]]
        owner = node_of[strategies]
        pick = np.lexsort((strategies, rank[strategies], -score, ~alive[strategies], owner))
        first = np.cumsum(counts) - counts          # nodes ascend, and so do their groups
        chosen = strategies[pick][first]
        plan[nodes] = chosen - so[nodes]
        gs[nodes] = chosen
    return plan


def repair_waves(problem: Problem, plan: np.ndarray, alive: np.ndarray, rank: np.ndarray,
                 pe: PairEdges, stop: float, waves: int = 200) -> np.ndarray:
    """Waves of vectorised repair: on each edge still picking a forbidden entry, the second node
    takes its least-memory alive strategy allowed with the first node's choice (or, when there is
    none, the first node one allowed with the second's). Changes propagate along chains of
    forbidden-entry edges, one step per wave."""
    so = problem.strategy_offsets[:-1]
    for _ in range(waves):
        if len(pe.u) == 0 or time.monotonic() > stop:
            break
        bad = pe.bad_edges(plan)
        if not bad.any():
            break
        gs = so + plan
        on_bad = bad[pe.entry_edge]
        fwd = on_bad & (pe.su == gs[pe.u[pe.entry_edge]]) & alive[pe.sv]
        moved = _take(plan, pe.v[pe.entry_edge[fwd]], pe.sv[fwd], rank, so)
        stuck = bad.copy()
        stuck[pe.entry_edge[fwd]] = False
        back = stuck[pe.entry_edge] & (pe.sv == gs[pe.v[pe.entry_edge]]) & alive[pe.su]
        moved |= _take(plan, pe.u[pe.entry_edge[back]], pe.su[back], rank, so)
        if not moved:
            break
    return plan


def _take(plan: np.ndarray, nodes: np.ndarray, strategies: np.ndarray, rank: np.ndarray,
          so: np.ndarray) -> bool:
    """Per node among ``nodes``, set its plan to the candidate strategy of least rank."""
    if len(nodes) == 0:
        return False
    order = np.lexsort((strategies, rank[strategies], nodes))
    first = np.unique(nodes[order], return_index=True)[1]
    pick_nodes, pick = nodes[order][first], strategies[order][first]
    new = pick - so[pick_nodes]
    changed = plan[pick_nodes] != new
    plan[pick_nodes] = new
    return bool(changed.any())


def min_conflicts(problem: Problem, plan: np.ndarray, alive: np.ndarray, rank: np.ndarray,
                  pe: PairEdges, stop: float, waves: int = 400) -> np.ndarray:
    """Vectorised min-conflicts for what the waves left: a random half of the nodes on forbidden
    entries each take the alive strategy allowed by the most of their edges (given the neighbours'
    current choices), least memory first; sideways moves now and then leave plateaus."""
    so = problem.strategy_offsets[:-1]
    rng = np.random.default_rng(0)
    node_of = np.repeat(np.arange(problem.num_nodes), problem.strategy_counts)
    e = pe.entry_edge
    for _ in range(waves):
        bad = pe.bad_edges(plan)
        if not bad.any() or time.monotonic() > stop:
            break
        touched = np.zeros(problem.num_nodes, dtype=bool)
        touched[pe.u[bad]] = touched[pe.v[bad]] = True
        touched &= rng.random(problem.num_nodes) < 0.5
        gs = so + plan
        ok_u = touched[pe.u[e]] & (pe.sv == gs[pe.v[e]])   # u may take su with v as it is
        ok_v = touched[pe.v[e]] & (pe.su == gs[pe.u[e]])
        count = np.bincount(np.concatenate([pe.su[ok_u], pe.sv[ok_v]]), minlength=len(rank))
        cand = touched[node_of] & alive
        order = np.lexsort((np.arange(len(rank)), rank, -count, ~cand, node_of))
        nodes = np.flatnonzero(touched)
        new = order[so[nodes]]
        now = gs[nodes]
        take = cand[new] & ((count[new] > count[now]) |
                            ((count[new] == count[now]) & (rng.random(len(nodes)) < 0.3)))
        plan[nodes[take]] = new[take] - so[nodes[take]]
    return plan


def safe_plan(problem: Problem, seconds: float = REPAIR_SECONDS) -> np.ndarray:
    """A memory-lean plan avoiding forbidden entries where propagation and repair can; falls back
    to the plain least-memory plan when that one fits in memory and this one does not."""
    stop = time.monotonic() + seconds
    plain = np.asarray(problem.min_usage_strategies, dtype=np.int64)
    pe = PairEdges(problem)
    alive = consistent_strategies(problem, time.monotonic() + seconds / 2, pe)
    if alive is None:
        return plain.copy()
    rank = problem.strategy_usage_rank
    plan = _assign_in_order(problem, _pick(problem, alive, rank).astype(np.int64), alive, rank,
                            pe, stop)
    plan = repair_waves(problem, plan, alive, rank, pe, min(stop, time.monotonic() + seconds / 3))
    plan = min_conflicts(problem, plan, alive, rank, pe, stop)
    if evaluate(problem, plan).feasible:
        return plan
    return plain.copy() if evaluate(problem, plain).feasible else plan
