"""The toulbar2 engine's work units against the CPU time they stand for (issue 31).

Why: in deterministic mode the engine counts work units (``portfolio/toulbar2/pace.py``: one unit
is about 1 ms of one core of this machine kind) from toulbar2's counts and the network's size,
never the clock. This measures what the constants stand for, in CPU seconds (the loaded machine's
wall clock says nothing): ``solves`` posts the priced penalised network of each instance's
presolved problem at the engine's first weights and runs toulbar2 at a few backtrack limits, each in
a forked child measured by ``getrusage(RUSAGE_CHILDREN)``; ``runs`` runs the whole backend with a
:class:`portfolio.work.CountingWork` of ``--units`` and compares the units it charged with the CPU
time of the process and its children. Printed: markdown tables for docs/benchmarks/determinism.md.

    python benchmarks/toulbar2_work.py [--instances A,B,G,K,N,S] [--backtracks 0,10,30]
        [--part solves|runs|both] [--units 15000]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import resource
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def load(name: str):
    from portfolio.io import load_problem
    from portfolio.presolve.pipeline import presolve

    path = SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz"
    return presolve(load_problem(str(path))).reduced


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def first_network(problem):
    """The network of the engine's first round, middle vector (prices after 20 steps)."""
    from portfolio.toulbar2.network import build_network, build_tables
    from portfolio.toulbar2.rounds import PRICE_SPREAD, Polisher, price_model
    from portfolio.toulbar2.weights import spread

    tables, notes = build_tables(problem), []
    prices = price_model(problem, Polisher(problem, 0, notes), 0, notes)
    if prices is not None:
        prices.advance_steps(20)
        tables = dataclasses.replace(tables, excess=prices.penalty())
    w = spread(1.0, problem.num_nodes, 3, np.random.default_rng(0), PRICE_SPREAD)[1]
    return build_network(tables, np.where(tables.breakable, w, 0.0))


def solves(names: list[str], limits: list[int]) -> None:
    from portfolio.toulbar2.child import run_in_child
    from portfolio.toulbar2.pace import network_entries, node_weight, solve_units
    from portfolio.toulbar2.penalty import penalised_child

    print("| instance | variables | entries | msd | backtracks (limit) | nodes | child CPU s | "
          "units | CPU ms / unit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        problem = load(name)
        net = first_network(problem)
        entries, weight = network_entries(net), node_weight(problem.strategy_counts)
        for limit in limits:
            c0 = children_cpu()
            outcome, value = run_in_child(penalised_child, (net, 1, 0, None, None, limit), 900.0)
            cpu = children_cpu() - c0
            if outcome != "ok":
                print(f"| {name} | {problem.num_nodes} | {entries} | | {limit} | {outcome} | | | |")
                continue
            units = solve_units(entries, value["nodes"], weight)
            print(f"| {name} | {problem.num_nodes} | {entries:,} | {weight ** 0.5:.0f} | "
                  f"{value['backtracks']} ({limit}) | {value['nodes']:,} | {cpu:.2f} | "
                  f"{units:,.0f} | {1000 * cpu / units:.2f} |", flush=True)


def runs(names: list[str], units: int) -> None:
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.work import CountingWork
    from portfolio_plugins.toulbar2 import Toulbar2Backend

    print("| instance | units charged | process CPU s | children CPU s | CPU ms / unit | cost | "
          "plan hash | note |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        problem = load(name)
        report = NullReporter()
        report.work = CountingWork(units)
        p0, c0 = time.process_time(), children_cpu()
        result = Toulbar2Backend().solve(problem, time.time() + 600, 0, None, report)
        own, kids = time.process_time() - p0, children_cpu() - c0
        charged = result.timings.get("units", report.work.spent())
        digest = hashlib.sha1(np.asarray(result.solution).tobytes()).hexdigest()[:10]
        note = result.note.split("), ")[-1] if "), " in result.note else result.note
        print(f"| {name} | {charged:,.0f} | {own:.2f} | {kids:.2f} | "
              f"{1000 * (own + kids) / max(charged, 1):.2f} | "
              f"{evaluate(problem, result.solution).cost:,} | {digest} | {note} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", default="A,B,G,K,N,S")
    ap.add_argument("--backtracks", default="0,10,30")
    ap.add_argument("--part", choices=["solves", "runs", "both"], default="both")
    ap.add_argument("--units", type=int, default=15000)
    args = ap.parse_args()
    names = [n for n in args.instances.split(",") if n]
    if args.part in ("solves", "both"):
        solves(names, [int(b) for b in args.backtracks.split(",")])
    if args.part in ("runs", "both"):
        runs(names, args.units)


if __name__ == "__main__":
    main()
