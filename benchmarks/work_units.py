"""Deterministic mode's work units against the CPU time they stand for: the kernel backends and the
toulbar2 engine. A unit is meant to be about one millisecond of one core of this machine kind
(portfolio/work.py); CPU seconds, not wall seconds, because the machine may be loaded. Figures:
docs/benchmarks/determinism.md (the exact backends' units: benchmarks/determinism_exact.py).

    python benchmarks/work_units.py kernels [--units 3000] [--seed 0] [--instances A,K,N,S] [--parts]
        minusage, greedy, localsearch and bound in-process in deterministic mode (a CountingWork of
        --units for the anytime ones; the one-shot ones spend what their size says) after a
        warm-up: CPU ms per unit per instance, then the mean per backend (the constants live in
        portfolio/kernels/units.py and plugins/minusage.py); --parts measures the counted steps
        one by one (the kernel view, a Lagrangian round, an ILS call, a bound step) and a round's
        milliseconds with the timed mode's BLAS dot products beside the deterministic ones
    python benchmarks/work_units.py toulbar2 [--instances A,B,G,K,N,S] [--backtracks 0,10,30]
        [--part solves|runs|both] [--units 15000]
        the engine's units (portfolio/toulbar2/pace.py) from toulbar2's counts and the network's
        size: ``solves`` posts the priced penalised network of each presolved instance at the
        engine's first weights and runs toulbar2 at a few backtrack limits, each in a forked child
        measured by getrusage(RUSAGE_CHILDREN); ``runs`` runs the whole backend with a
        CountingWork of --units and compares the units charged with the CPU time spent
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import platform
import resource
import time

import numpy as np

from common import BENCH, existing, instance_path, run_part


BACKENDS = ("minusage", "greedy", "localsearch", "bound")


def kernels_measure(backend, problem, seed: int, units: int) -> tuple[float, int]:
    """(CPU seconds, units spent) of one deterministic ``solve``."""
    from portfolio.backend import NullReporter
    from portfolio.work import CountingWork

    report = NullReporter()
    report.work = CountingWork(units)
    c0 = time.process_time()
    backend.solve(problem, time.time() + 3600, seed, None, report)
    return time.process_time() - c0, report.work.spent()


def kernels_parts(problem, seed: int, repeat: int = 8) -> dict[str, float]:
    """CPU ms per unit of each counted step on ``problem``, and ms per Lagrangian round with
    either dot product."""
    from portfolio.kernels import units
    from portfolio.kernels.bound import LagrangeBound, kernel_offset
    from portfolio.kernels.engine import Searcher, greedy_plan, prepare

    clock = time.process_time
    c0 = clock()
    prep = prepare(problem)
    out = {"prepare": 1000 * (clock() - c0) / units.prepare_units(problem)}
    m = prep.rm
    start, _, _ = greedy_plan(prep, 2, seed)
    for label, deterministic in (("round_blas_ms", False), ("round_sum_ms", True)):
        search = Searcher(prep, seed, deterministic=deterministic)
        search.offer(start)
        search.lagrange_round()
        cpu = spent = 0.0
        for _ in range(repeat):
            e0, c0 = int(search.sc.ints[1]), clock()
            cand = search.lagrange_round()
            cpu += clock() - c0
            spent += (units.sweep_units(m, search.p.trws_iters)
                      + units.eval_units(int(search.sc.ints[1]) - e0))
            if cand is not None:
                search.offer(cand)
        out[label] = 1000 * cpu / repeat
        if deterministic:
            out["round"] = 1000 * cpu / spent
            cpu = spent = 0.0
            for _ in range(repeat):
                e0, c0 = int(search.sc.ints[1]), clock()
                search.ils(1 << 30, max_evals=units.ILS_CHUNK_UNITS * units.EVALS_PER_UNIT)
                cpu += clock() - c0
                spent += units.eval_units(int(search.sc.ints[1]) - e0)
            out["ils"] = 1000 * cpu / spent
    lb = LagrangeBound(problem, m, None, seed, kernel_offset(prep), deterministic=True)
    lb.step(None)
    cpu = spent = 0.0
    for _ in range(repeat):
        e0, c0 = int(lb.sc.ints[1]), clock()
        lb.step(None)
        cpu += clock() - c0
        spent += (units.sweep_units(m, lb.p.trws_iters) + units.star_units(m, problem)
                  + units.eval_units(int(lb.sc.ints[1]) - e0))
    out["bound step"] = 1000 * cpu / spent
    return out


def kernels_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=3000, help="budget of localsearch and bound")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--instances", default="A,K,N,S")
    ap.add_argument("--parts", action="store_true", help="each counted step on its own")
    args = ap.parse_args()

    from portfolio.io import load_problem
    from portfolio.kernels.bound import warmup as bound_warmup
    from portfolio.kernels.engine import warmup
    from portfolio.registry import Registry

    warmup()
    bound_warmup()
    reg = Registry()
    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}; budget {args.units} units, seed {args.seed}\n")
    if args.parts:
        keys = ("prepare", "round", "ils", "bound step", "round_blas_ms", "round_sum_ms")
        print("| instance | " + " | ".join(keys) + " |")
        print("|---|" + "---|" * len(keys))
        for name, path in existing(BENCH, args.instances.split(",")):
            row = kernels_parts(load_problem(str(path)), args.seed)
            print(f"| {name} | " + " | ".join(f"{row[k]:.2f}" for k in keys) + " |")
        return
    print("| instance | backend | units spent | CPU s | CPU ms per unit |")
    print("|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for name, path in existing(BENCH, args.instances.split(",")):
        problem = load_problem(str(path))
        for b in BACKENDS:
            backend = reg.get(b)
            kernels_measure(backend, problem, args.seed, 1)   # first call: caches, page faults
            cpu, spent = kernels_measure(backend, problem, args.seed, args.units)
            ratio = 1000 * cpu / max(spent, 1)
            ratios[b].append(ratio)
            print(f"| {name} | {b} | {spent} | {cpu:.2f} | {ratio:.2f} |")
    print("\n| backend | mean CPU ms per unit |")
    print("|---|---|")
    for b, r in ratios.items():
        if r:
            print(f"| {b} | {sum(r) / len(r):.2f} |")




def toulbar2_load(name: str):
    from portfolio.io import load_problem
    from portfolio.presolve.pipeline import presolve

    path = instance_path(name)
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
        problem = toulbar2_load(name)
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
        problem = toulbar2_load(name)
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


def toulbar2_main() -> None:
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


MODES = {"kernels": (kernels_main, False), "toulbar2": (toulbar2_main, False)}
"""Each part's command: ``python benchmarks/work_units.py PART [its own options]``."""


def main() -> None:
    run_part(MODES, __doc__)


if __name__ == "__main__":
    main()
