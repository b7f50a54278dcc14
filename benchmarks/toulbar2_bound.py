"""The ``bound`` backend with and without its toulbar2 phase on a shared instance (issue 21).

Why: the phase spends the last 45 % of the backend's time on one toulbar2 solve of the priced
problem instead of subgradient steps; this says whether the bound it certifies beats the steps it
replaces. Each variant gets the same budget, counted after presolve (as the runner hands the
backend the presolved instance), one after the other on the same machine. Printed: a markdown
table for ``docs/benchmarks/toulbar2.md`` with the bound, the best known cost and the published
lower bound from ``../shared/reference/best_known.csv``, and each run's note (steps; for the
phase: the star bound when it started, toulbar2's search, the priced cost of its best plan).

    python benchmarks/toulbar2_bound.py [--instance K] [--seconds 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def reference(key: str) -> dict:
    """The instance's row of the shared reference table (empty when absent)."""
    path = SHARED / "reference" / "best_known.csv"
    if not path.is_file():
        return {}
    with path.open() as fh:
        rows = {row["benchmark"].rsplit("-", 1)[-1]: row for row in csv.DictReader(fh)}
    return rows.get(key, {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instance", default="K")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from portfolio.backend import NullReporter
    from portfolio.io import load_problem
    from portfolio.kernels.bound import warmup
    from portfolio.presolve import presolve
    from portfolio_plugins.bound import BoundBackend

    warmup()
    path = SHARED / "benchmarks" / f"asplos-2025-iopddl-{args.instance}.json.gz"
    pre = presolve(load_problem(str(path)))
    problem = pre.reduced
    row = reference(args.instance)
    best = int(row["best_known_cost"]) if row else None
    published = float(row["lower_bound_3sig"]) if row else None
    print(f"{args.instance}: {problem.num_nodes} nodes after presolve, {args.seconds:.0f} s each, "
          f"seed {args.seed}; best known {best:,}, published lower bound {published:.3g}",
          flush=True)
    print("| variant | bound | gap to best known | >= published | note |")
    print("|---|---:|---:|:-:|---|")
    for label, tb2 in (("without toulbar2", False), ("with toulbar2", True)):
        t0 = time.time()
        res = BoundBackend().solve(problem, t0 + args.seconds, args.seed, None,
                                   NullReporter({"toulbar2": tb2}))
        value = res.lower_bound
        gap = "-" if value is None or best is None else f"{100 * (best - value) / best:.3f} %"
        ok = "-" if value is None or published is None else ("yes" if value >= published else "no")
        shown = "-" if value is None else f"{value:,}"
        print(f"| {label} | {shown} | {gap} | {ok} | {res.note} ({time.time() - t0:.0f} s) |",
              flush=True)


if __name__ == "__main__":
    main()
