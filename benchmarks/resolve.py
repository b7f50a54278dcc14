"""Re-solves after the changes a compiler meets, warm from the previous plan against cold runs
(what `portfolio bench` cannot do: each run starts from a plan mapped from another problem).
Figures: docs/benchmarks/determinism.md ("Re-solves after a change").

    python benchmarks/resolve.py [--instances K,N,S] [--seconds 10,30] [--seeds 0,1,2]
        [--base 60] [--changes budget,costs,strategies] [--variants cold,warm:all,warm:toulbar2]
        [--out runs/NAME.jsonl]

Per instance, the previous plan is the default portfolio's at --base seconds (saved in
runs/warm_start/, shared with benchmarks/warm_start.py). Each change makes a new problem:

- ``budget``: the memory capacity 3 % tighter;
- ``costs``: 1 % of the node cost entries and 1 % of the edge cost entries (forbidden ones aside)
  each multiplied by a factor drawn in [0.9, 1.1] (seed 0);
- ``strategies``: 1 % of the nodes with two or more allowed strategies lose one allowed strategy,
  drawn at random (seed 0), really removed from the lists (later indices shift): the previous plan
  must be mapped by signature, and repaired where its choice is gone. Nodes on edges with
  forbidden entries are left alone: on K and S a removal there can leave no forbidden-free plan at
  all (an alias chain whose every member needed the removed strategy), which no compiler change
  would do.

Then, for each budget and seed, every variant in turn (alternated): ``cold``, a solve of the new
problem without the previous plan, and re-solves (``portfolio.resolve(new, plan, old, ...)``) with
the backends named after ``warm:`` starting cold (``warm:all``: none; ``warm``: the runner's
default). Per run: the plan it started from (mapped and repaired), its answer, against that start
and against the cold run of the same seed, and when it first reached the cold run's cost. Prints
a markdown table; ``--out`` keeps the rows.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from common import fmt, header
from warm_start import instance, plan_of

TIGHTER = 0.97
SHARE, SPREAD = 0.01, 0.10


def tighter(problem, frac: float = TIGHTER):
    """The same problem with every capacity value ``frac`` of what it was (rounded down)."""
    from portfolio.problem import Capacity

    cap = problem.capacity
    values = np.floor(cap.values.astype(np.float64) * frac).astype(np.int64)
    return dataclasses.replace(problem, capacity=Capacity(cap.times, values))


def perturbed(problem, seed: int = 0):
    """``SHARE`` of the allowed node and edge cost entries times a factor in [1 - SPREAD, 1 + SPREAD]."""
    from portfolio.problem import FORBIDDEN

    rng = np.random.default_rng(seed)

    def change(costs: np.ndarray) -> np.ndarray:
        out = costs.copy()
        pick = (rng.random(len(out)) < SHARE) & (out != FORBIDDEN)
        factor = rng.uniform(1 - SPREAD, 1 + SPREAD, int(pick.sum()))
        out[pick] = np.maximum(0, np.round(out[pick] * factor)).astype(np.int64)
        return out

    return dataclasses.replace(problem, node_costs=change(problem.node_costs),
                               edge_costs=change(problem.edge_costs))


def fewer_strategies(problem, seed: int = 0):
    """``SHARE`` of the nodes with two or more allowed strategies and no edge with forbidden
    entries lose one allowed strategy (drawn), from every list that holds it: the node's costs, its
    intervals' usages, its edges' tables."""
    from portfolio.problem import Problem, _edge_table_sizes, offsets_from_counts

    from portfolio.problem import FORBIDDEN
    from portfolio.runner.fallback import _PairEdges

    rng = np.random.default_rng(seed)
    counts = problem.strategy_counts
    pairs = _PairEdges(problem)
    bound = np.zeros(problem.num_nodes, dtype=bool)     # on an edge with forbidden entries
    bound[pairs.u] = bound[pairs.v] = True
    allowed = np.add.reduceat((problem.node_costs != FORBIDDEN).astype(np.int64),
                              problem.strategy_offsets[:-1])
    able = np.flatnonzero((allowed >= 2) & ~bound)
    nodes = np.sort(rng.choice(able, max(1, int(round(SHARE * len(able)))), replace=False))
    gone = np.full(problem.num_nodes, -1, dtype=np.int64)
    gone[nodes] = rng.integers(0, counts[nodes])
    so = problem.strategy_offsets
    for v in nodes[problem.node_costs[so[nodes] + gone[nodes]] == FORBIDDEN].tolist():
        gone[v] = int(np.flatnonzero(problem.costs_of(v) != FORBIDDEN)[0])   # an allowed one
    keep_s = np.ones(len(problem.node_costs), dtype=bool)
    keep_s[problem.strategy_offsets[nodes] + gone[nodes]] = False
    hit = gone[problem.interval_node] >= 0
    keep_u = np.ones(len(problem.interval_usages), dtype=bool)
    keep_u[problem.interval_usage_offsets[:-1][hit] + gone[problem.interval_node[hit]]] = False
    keep_e = np.ones(len(problem.edge_costs), dtype=bool)
    for e in np.flatnonzero(np.isin(np.arange(problem.num_edges), problem.incidence_edges[
            np.concatenate([np.arange(problem.incidence_offsets[v], problem.incidence_offsets[v + 1])
                            for v in nodes.tolist()])])).tolist():
        ends = problem.nodes_of_edge(e)
        grid = np.indices(tuple(int(counts[v]) for v in ends)).reshape(len(ends), -1)
        drop = np.zeros(grid.shape[1], dtype=bool)
        for p, v in enumerate(ends.tolist()):
            if gone[v] >= 0:
                drop |= grid[p] == gone[v]
        keep_e[problem.edge_cost_offsets[e]:problem.edge_cost_offsets[e + 1]] = ~drop
    new_counts = counts - (gone >= 0)
    return Problem(
        name=problem.name, strategy_offsets=offsets_from_counts(new_counts),
        node_costs=problem.node_costs[keep_s], interval_node=problem.interval_node,
        interval_start=problem.interval_start, interval_end=problem.interval_end,
        interval_usage_offsets=offsets_from_counts(new_counts[problem.interval_node]),
        interval_usages=problem.interval_usages[keep_u],
        edge_node_offsets=problem.edge_node_offsets, edge_nodes=problem.edge_nodes,
        edge_cost_offsets=offsets_from_counts(_edge_table_sizes(
            problem.edge_node_offsets, problem.edge_nodes, new_counts)),
        edge_costs=problem.edge_costs[keep_e], capacity=problem.capacity,
        cost_offset=problem.cost_offset)


CHANGES = {"budget": tighter, "costs": perturbed, "strategies": fewer_strategies}


def reached(result, target: float):
    """Seconds from the call to the first verified plan at or below ``target`` (0: the start)."""
    start = result.warm_start["start_cost"]
    if start is not None and start <= target:
        return 0.0
    times = [i.time for i in result.run.incumbents if i.cost <= target]
    return min(times) if times else None


def variant(text: str) -> tuple[str, object]:
    """``cold`` (a solve without the previous plan), ``warm`` (the re-solve as the runner does it
    by default), ``warm:all`` (every backend starts from the previous plan) or
    ``warm:NAME+NAME`` (those backends start cold)."""
    if text == "cold":
        return text, None
    if text == "warm":
        return text, "default"
    if text == "warm:all":
        return text, ()
    if text.startswith("warm:"):
        return text, tuple(text[5:].split("+"))
    raise SystemExit(f"unknown variant {text!r}: cold, warm, warm:all or warm:NAME+NAME")


def main() -> None:
    import json

    import portfolio
    from portfolio.io import load_problem

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", default="K,N,S")
    parser.add_argument("--seconds", default="10,30", help="budgets of every variant")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--base", type=float, default=60.0)
    parser.add_argument("--changes", default=",".join(CHANGES))
    parser.add_argument("--variants", default="cold,warm:all,warm:toulbar2",
                        help="cold, warm (the default), warm:all, warm:NAME+NAME (cold ones)")
    parser.add_argument("--out", help="JSON Lines file: one row per run (appended; rerun skips)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = [variant(v) for v in args.variants.split(",")]
    done = set()
    if args.out:
        try:
            with open(args.out) as fh:
                done = {(r["instance"], r["change"], r["seconds"], r["seed"], r["variant"])
                        for r in map(json.loads, fh)}
        except FileNotFoundError:
            pass
    header("inst | change | seconds | seed | variant | start (repaired) | cost | vs start | "
           "vs cold | reached cold at s")
    for name in args.instances.split(","):
        plan, _ = plan_of(name, args.base)
        old = load_problem(instance(name))
        for change in args.changes.split(","):
            new = CHANGES[change](old)
            for seconds in [float(t) for t in args.seconds.split(",")]:
                for seed in seeds:   # every variant of a seed in turn: alternated
                    cold_cost = None
                    for label, cold in variants:
                        key = (name, change, seconds, seed, label)
                        if key in done:
                            continue
                        if cold is None:
                            result = portfolio.solve(new, time_limit=seconds, seed=seed)
                            start = None
                        else:
                            kw = {} if cold == "default" else {"cold": cold}
                            result = portfolio.resolve(new, plan, old, time_limit=seconds,
                                                       seed=seed, **kw)
                            start = result.warm_start["start_cost"]
                        if label == "cold":
                            cold_cost = result.cost
                        row = {"instance": name, "change": change, "seconds": seconds,
                               "seed": seed, "variant": label, "cost": result.cost,
                               "start_cost": start, "elapsed": round(result.elapsed, 3),
                               "winner": result.winner}
                        vs_start = (None if start is None or result.cost is None
                                    else f"{100 * (result.cost - start) / start:+.2f} %")
                        vs_cold = (None if cold_cost is None or result.cost is None
                                   else f"{100 * (result.cost - cold_cost) / cold_cost:+.2f} %")
                        at = (None if cold_cost is None or start is None
                              else reached(result, cold_cost))
                        print(f"| {name} | {change} | {seconds:g} | {seed} | {label} | "
                              f"{fmt(start)} | {fmt(result.cost)} | {fmt(vs_start)} | "
                              f"{fmt(vs_cold)} | {'-' if at is None else f'{at:.1f}'} |",
                              flush=True)
                        if args.out:
                            with open(args.out, "a") as fh:
                                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
