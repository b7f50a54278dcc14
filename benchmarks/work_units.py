"""Deterministic mode's work units of the kernel backends: CPU milliseconds per unit, per instance.

Each backend (``minusage``, ``greedy``, ``localsearch``, ``bound``) is called in-process in
deterministic mode (a ``CountingWork`` of ``--units`` for the anytime ones; the one-shot ones spend
what their size says) after a warm-up that loads the numba kernels; the CPU seconds of this process
(``time.process_time``, not the wall clock: the machine may be loaded) are divided by the units
spent. A unit is meant to be about one millisecond of one core, so the figures should be near 1;
the constants live in ``portfolio/kernels/units.py`` and ``plugins/minusage.py``. Prints a markdown
table, then the mean per backend.

``--parts`` measures the counted steps one by one instead (the kernel view, a Lagrangian round of
the local search, an ILS call, a bound step: CPU ms per unit each), and a round's milliseconds with
the timed mode's BLAS dot products beside the deterministic mode's thread-free ones.

    python benchmarks/work_units.py [--units 3000] [--seed 0] [--instances A,K,N,S] [--parts]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from instances import existing

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO.parent / "shared" / "benchmarks"
BACKENDS = ("minusage", "greedy", "localsearch", "bound")


def measure(backend, problem, seed: int, units: int) -> tuple[float, int]:
    """(CPU seconds, units spent) of one deterministic ``solve``."""
    from portfolio.backend import NullReporter
    from portfolio.work import CountingWork

    report = NullReporter()
    report.work = CountingWork(units)
    c0 = time.process_time()
    backend.solve(problem, time.time() + 3600, seed, None, report)
    return time.process_time() - c0, report.work.spent()


def parts(problem, seed: int, repeat: int = 8) -> dict[str, float]:
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


def main() -> None:
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
            row = parts(load_problem(str(path)), args.seed)
            print(f"| {name} | " + " | ".join(f"{row[k]:.2f}" for k in keys) + " |")
        return
    print("| instance | backend | units spent | CPU s | CPU ms per unit |")
    print("|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for name, path in existing(BENCH, args.instances.split(",")):
        problem = load_problem(str(path))
        for b in BACKENDS:
            backend = reg.get(b)
            measure(backend, problem, args.seed, 1)   # first call: caches, page faults
            cpu, spent = measure(backend, problem, args.seed, args.units)
            ratio = 1000 * cpu / max(spent, 1)
            ratios[b].append(ratio)
            print(f"| {name} | {b} | {spent} | {cpu:.2f} | {ratio:.2f} |")
    print("\n| backend | mean CPU ms per unit |")
    print("|---|---|")
    for b, r in ratios.items():
        if r:
            print(f"| {b} | {sum(r) / len(r):.2f} |")


if __name__ == "__main__":
    main()
