"""The project's two plan repairs side by side, on the same plans that overload memory.

Why: ``portfolio/runner/repair.py`` (plain numpy, the runner's warm start) and the kernels'
``Repairer`` (numba, the toulbar2 engine's and the local search's) do the same job in words (a
plan over the memory limit made to fit, cheapest cost per unit of memory saved first, then a
descent); docs/architecture.md, "Two plan repairs", says why both stay. This prints what each costs
and gives on one plan per instance: every node on its cheapest strategy, which overloads memory on
every contest instance (the kind of plan a penalised toulbar2 solve returns). The kernels are
compiled (or loaded) first and that is not counted: the runner's repair must answer before that.

    python benchmarks/repairs.py A K N S

CPU seconds (``time.process_time``), so a busy machine changes them little.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"


def cheapest_plan(problem) -> np.ndarray:
    """Every node on its cheapest strategy (ties: the lowest index)."""
    so = problem.strategy_offsets
    return np.array([int(np.argmin(problem.node_costs[so[i]:so[i + 1]]))
                     for i in range(problem.num_nodes)], dtype=np.int64)


def main() -> None:
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


if __name__ == "__main__":
    main()
