"""The cpsat backend on the shared contest instances: model sizes, proofs, LNS after local search.

    python benchmarks/cpsat.py sizes [--instances A,B,G,K,M,N,S]
        model size per presolved instance and memory encoding (variables, constraints, terms of
        the memory part, build seconds) and whether the full model fits the budget
    python benchmarks/cpsat.py prove [--instances B,G,A] [--threads 1] [--seconds S]
        the backend through the driver under the contest limit (B, A 60 s, G 120 s, ...):
        status, cost, bound, time to the proof (``benchmarks/exact.py prove --engine cpsat``)
    python benchmarks/cpsat.py lns [--instances ...] [--seconds 60] [--seeds 0]
        localsearch for --seconds, then cpsat warm-started from its plan for --seconds more
        (without the driver's local-search polish, so every gain is CP-SAT's): cost before and
        after, windows tried/improved (from the backend's note; "-" = the full model ran)

    python benchmarks/cpsat.py cli [--instances ...] [--seconds 60] [--backends cpsat,maxsat]
        the headline command `portfolio solve FILE --backends cpsat,maxsat -t 60` per instance
        (a subprocess each): cost, score, and each backend's status and lower bound

Except ``cli``, each run is in this process (one backend, ``--threads`` cores for CP-SAT). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np

from exact import SHARED, header, presolved, prove, reference


def sizes(names: list[str]) -> None:
    from portfolio.exact import build_exact_model
    from portfolio_plugins.cpsat import BUDGET, CpSatEngine

    header("inst | free nodes | factors | entry vars | memory points | encoding | variables | "
           "constraints | memory terms | build s | fits budget")
    for name, _, pre in presolved(names):
        red = pre.reduced
        engine = CpSatEngine()
        if len(red.time_points) == 0:
            continue
        fits = engine.estimate(red).within(BUDGET)
        md = build_exact_model(red)
        for memory in ("rows", "lazy", "sweep", "cumulative"):
            if memory == "rows" and md.memory.terms > 3_000_000 and fits:
                print(f"| {name} | {int((red.strategy_counts > 1).sum())} | {len(md.factors)} | "
                      f"{md.stats['factor_entries']:,} | {len(md.memory.rhs):,} | rows | - | - | "
                      f"{md.memory.terms:,} | (not built) | {fits} |")
                continue
            if not fits:
                if memory == "sweep":
                    est = engine.estimate(red)
                    print(f"| {name} | {int((red.strategy_counts > 1).sum())} | "
                          f"{len(md.factors)} | {md.stats['factor_entries']:,} | "
                          f"{len(md.memory.rhs):,} | (estimate) | {est.variables:,} | "
                          f"{est.constraints:,} | - | (LNS) | {fits} |")
                continue
            t0 = time.perf_counter()
            built = CpSatEngine(memory=memory).build(md)
            model, stats = built.model, built.stats
            built = time.perf_counter() - t0
            proto = model.proto
            print(f"| {name} | {int((red.strategy_counts > 1).sum())} | {len(md.factors)} | "
                  f"{md.stats['factor_entries']:,} | {len(md.memory.rhs):,} | {memory} | "
                  f"{len(proto.variables):,} | {len(proto.constraints):,} | "
                  f"{stats['memory_terms']:,} | {built:.1f} | {fits} |")


def lns(names: list[str], seconds: float, seeds: list[int]) -> None:
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.exact import solve_with_engine
    from portfolio.kernels.engine import warmup
    from portfolio_plugins.cpsat import CpSatEngine
    from portfolio_plugins.localsearch import LocalSearchBackend

    warmup()
    ref = reference()
    header("inst | seed | localsearch cost | + cpsat LNS cost | change | windows | improved | "
           "best known")
    for name, problem, pre in presolved(names):
        red = pre.reduced
        for seed in seeds:
            ls = LocalSearchBackend().solve(red, time.time() + seconds, seed, None,
                                            NullReporter())
            before = evaluate(red, ls.solution).cost
            result = solve_with_engine(CpSatEngine(), red, time.time() + seconds, seed,
                                       ls.solution, NullReporter(), threads=1, polish=False)
            after = evaluate(problem, pre.expand(result.solution)).cost
            m = re.search(r"LNS: (\d+) windows, (\d+) improved", result.note)
            tried, improved = (m.group(1), m.group(2)) if m else ("-", "-")
            print(f"| {name} | {seed} | {before:,} | {after:,} | {(after - before) / before:+.3%} | "
                  f"{tried} | {improved} | {int(ref[name]['best_known_cost']):,} |", flush=True)


def cli(names: list[str], seconds: float, backends: str) -> None:
    import json
    import subprocess
    import sys

    ref = reference()
    print(f"`portfolio solve FILE --backends {backends} -t {seconds:g}`\n")
    print("| inst | exit | elapsed s | cost | score | feasible | " +
          " | ".join(f"{b} status | {b} bound" for b in backends.split(",")) + " |")
    print("|---|---|---|---|---|---|" + "---|---|" * len(backends.split(",")))
    exe = Path(sys.executable).with_name("portfolio")
    for name in names:
        path = SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz"
        t0 = time.time()
        out = subprocess.run([str(exe), "solve", str(path), "--backends", backends, "-t",
                              str(seconds), "--json", "-q"], capture_output=True, text=True)
        spent = time.time() - t0
        try:
            doc = json.loads(out.stdout)
        except json.JSONDecodeError:
            print(f"| {name} | {out.returncode} | {spent:.1f} | (no JSON) | | | |")
            continue
        cost = doc.get("cost")
        best = int(ref[name]["best_known_cost"])
        rows = {b["backend"]: b for b in doc.get("backends", [])}
        cells = []
        for b in backends.split(","):
            row = rows.get(b, {})
            lb = row.get("lower_bound")
            cells += [str(row.get("status", "-")), "-" if lb is None else f"{lb:,}"]
        print(f"| {name} | {out.returncode} | {spent:.1f} | "
              f"{'-' if cost is None else f'{cost:,}'} | "
              f"{'-' if not cost else f'{best / cost:.4f}'} | {doc.get('feasible')} | "
              + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sizes", "prove", "lns", "cli"])
    parser.add_argument("--backends", default="cpsat,maxsat")
    parser.add_argument("--instances", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--seeds", default="0")
    args = parser.parse_args()
    if args.what == "sizes":
        sizes((args.instances or "A,B,G,K,M,N,S").split(","))
    elif args.what == "prove":
        prove("cpsat", (args.instances or "B,G,A").split(","), args.threads, args.seconds)
    elif args.what == "cli":
        cli((args.instances or "A,B,G,K,M,N,S").split(","), args.seconds or 60.0, args.backends)
    else:
        lns((args.instances or "A,B,G,K,M,N,S").split(","), args.seconds or 60.0,
            [int(s) for s in args.seeds.split(",")])


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
