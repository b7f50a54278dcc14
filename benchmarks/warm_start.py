"""Warm starts, re-solves and repairs: what `portfolio bench` cannot do (each run starts from a given
plan). Figures: docs/benchmarks/determinism.md ("Warm starts"), docs/benchmarks/resolve.md (re-solves),
docs/architecture.md ("Two plan repairs").

Which backends really start from a warm start: each default backend alone, cold and warm.

    python benchmarks/warm_start.py plans [--instances K,N,S] [--seconds 60]
        once: the default portfolio's plan for each instance, saved to runs/warm_start/NAME.json
        (`portfolio solve NAME -t 60`, in this process through portfolio.solve)
    python benchmarks/warm_start.py run [--instances K,N,S] [--seconds 10] [--backends ...]
        each backend of the default set (or --backends) alone on each instance for --seconds,
        cold and then warm-started from the saved plan: the first plan the backend reports (cost
        and seconds since the start) and its final cost, both ways

A row is the backend's own (the runner's fallback plan off, the warm start not counted as its
plan); presolve runs as in `portfolio solve`. "starts from it" is yes when the backend's first
warm plan costs no more than the plan it was given. Prints a markdown table; `run` makes the
plans it lacks at --seconds. The figures go to docs/benchmarks/determinism.md, "Warm starts".

    python benchmarks/warm_start.py resolve [--instances K,N,S] [--seconds 10,30] [--seeds 0,1,2]
        [--changes budget,costs,strategies] [--variants cold,warm:all,warm:toulbar2] [--out FILE]
        re-solves after the changes a compiler meets against cold solves, alternated (see
        resolve_main and CHANGES below)
    python benchmarks/warm_start.py repairs [...]
        the runner's numpy repair against the kernels' numba one on the same overloading plans
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from common import SHARED, fmt, header

REPO = Path(__file__).resolve().parents[1]
PLANS = REPO / "runs" / "warm_start"


def instance(name: str) -> Path:
    return SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz"


def plan_of(name: str, seconds: float) -> tuple[list[int], int]:
    """The saved plan of instance ``name`` (made now with the default portfolio when missing)."""
    import portfolio

    path = PLANS / f"{name}.json"
    if not path.exists():
        result = portfolio.solve(instance(name), time_limit=seconds)
        PLANS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"solution": result.plan, "cost": result.cost,
                                    "seconds": seconds}) + "\n")
    doc = json.loads(path.read_text())
    return doc["solution"], doc["cost"]


def one(problem, backend, seconds: float, warm) -> tuple[object, object, object]:
    """(first reported cost, its seconds, final cost) of ``backend`` alone."""
    from portfolio.options import RunOptions
    from portfolio.runner import run_portfolio

    options = RunOptions(seconds, presolve=True, fallback=False, extra_seeds=False, warm_start=warm)
    result = run_portfolio(problem, [backend], options)
    run = result.runs[backend.name]
    first = run.incumbents[0] if run.incumbents else None
    return (None if first is None else first.cost, None if first is None else first.time,
            run.best_cost)


def run(names: list[str], seconds: float, chosen: str | None) -> None:
    from portfolio.api import choose_backends
    from portfolio.io import load_problem

    backends = choose_backends(chosen.split(",") if chosen else None, seconds)
    header("inst | backend | given | cold first (s) | cold final | warm first (s) | warm final | "
           "starts from it")
    for name in names:
        plan, cost = plan_of(name, max(seconds, 5.0))
        problem = load_problem(instance(name))
        for backend in backends:
            c1, t1, cf = one(problem, backend, seconds, None)
            w1, s1, wf = one(problem, backend, seconds, plan)
            uses = "yes" if w1 is not None and w1 <= cost else "no"
            print(f"| {name} | {backend.name} | {fmt(cost)} | {fmt(c1)} ({fmt(t1)}) | {fmt(cf)} | "
                  f"{fmt(w1)} ({fmt(s1)}) | {fmt(wf)} | {uses} |", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in MODES:   # a part with its own options
        mode = sys.argv[1]
        sys.argv[0:2] = [f"{sys.argv[0]} {mode}"]
        MODES[mode]()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["plans", "run", *MODES])
    parser.add_argument("--instances", default="K,N,S")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--backends", default=None)
    args = parser.parse_args()
    names = args.instances.split(",")
    if args.what == "plans":
        seconds = args.seconds or 60.0
        for name in names:
            t0 = time.monotonic()
            _, cost = plan_of(name, seconds)
            print(f"{name}: cost {cost:,} ({time.monotonic() - t0:.0f} s)", flush=True)
    else:
        run(names, args.seconds or 10.0, args.backends)


# ------------------------------------------------------------------------ resolve
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
    from portfolio.runner.fallback import PairEdges

    rng = np.random.default_rng(seed)
    counts = problem.strategy_counts
    pairs = PairEdges(problem)
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


def resolve_main() -> None:
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


# ------------------------------------------------------------------------ repairs
BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"


def cheapest_plan(problem) -> np.ndarray:
    """Every node on its cheapest strategy (ties: the lowest index)."""
    so = problem.strategy_offsets
    return np.array([int(np.argmin(problem.node_costs[so[i]:so[i + 1]]))
                     for i in range(problem.num_nodes)], dtype=np.int64)


def repairs_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", help="contest instances (A, B, G, K, M, N, S)")
    parser.add_argument("--bench", type=Path, default=BENCH,
                        help="folder of asplos-2025-iopddl-NAME.json.gz (default: shared/benchmarks "
                             "beside the checkout)")
    args = parser.parse_args()

    from portfolio.evaluate import evaluate
    from portfolio.io import load_problem
    from portfolio.kernels.engine import Repairer, prepare
    from portfolio.runner.repair import repair_plan

    print("| instance | nodes | numba `Repairer` CPU ms | its cost | numpy `repair_plan` CPU ms "
          "| its cost |")
    print("|---|---|---|---|---|---|")
    for name in args.names:
        problem = load_problem(str(args.bench / f"asplos-2025-iopddl-{name}.json.gz"))
        plan = cheapest_plan(problem)
        prep = prepare(problem)
        repairer = Repairer(prep, 0)
        reduced = prep.contract(plan)
        reduced = prep.project(plan) if reduced is None else reduced
        repairer.repair_and_polish(reduced)   # compiled or loaded: not counted
        c0 = time.process_time()
        fixed = repairer.repair_and_polish(reduced)
        numba_ms = 1000 * (time.process_time() - c0)
        numba_cost = "does not fit" if fixed is None else f"{evaluate(problem, prep.expand(fixed)).cost:,}"
        c0 = time.process_time()
        out = repair_plan(problem, plan, seconds=600.0)
        numpy_ms = 1000 * (time.process_time() - c0)
        numpy_cost = f"{evaluate(problem, out.plan).cost:,}" if out.fits else "does not fit"
        print(f"| {name} | {problem.num_nodes:,} | {numba_ms:,.0f} | {numba_cost} | "
              f"{numpy_ms:,.0f} | {numpy_cost} |", flush=True)


MODES = {"resolve": resolve_main, "repairs": repairs_main}
"""The parts with options of their own: ``python benchmarks/warm_start.py PART ...``."""


if __name__ == "__main__":
    main()
