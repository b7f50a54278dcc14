"""Exact presolve (``portfolio.presolve``) on the shared contest instances: sizes before -> after.
Figures: docs/benchmarks/presolve.md.

For each instance: nodes, free nodes (more than one strategy), strategies, edges, edge-table entries
and time points before -> after, the presolve time (numba kernels already compiled or loaded from
numba's cache by ``portfolio.presolve.warm_up()`` first), and a check that the reduced
min-usage-like plan expands to an original plan with the same cost and feasibility.

    python benchmarks/presolve.py [--bench DIR] [--json] [NAMES...] [--no-<reduction>...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import existing

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    from portfolio.evaluate import evaluate
    from portfolio.io import load_problem
    from portfolio.presolve import SWITCHES, presolve, warm_up

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list("ABGKMNS"))
    ap.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "benchmarks")
    ap.add_argument("--json", action="store_true", help="one JSON report per line instead of a table")
    for s in SWITCHES:
        ap.add_argument(f"--no-{s.replace('_', '-')}", dest=s, action="store_false")
    args = ap.parse_args()
    switches = {s: getattr(args, s) for s in SWITCHES}

    warm = warm_up()  # compile / load every numba kernel once, as a runner would at start-up
    if not args.json:
        print(f"numba kernels ready in {warm:.2f} s (warm-up on a built-in instance)\n")
    if not args.json:
        print("| instance | nodes | free nodes | strategies | edges | edge entries | time points | "
              "presolve s | min-usage plan round trip |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, path in existing(args.bench, args.names):
        problem = load_problem(path)
        t = time.perf_counter()
        pre = presolve(problem, **switches)
        seconds = time.perf_counter() - t
        check = "infeasible: " + str(pre.infeasible)
        if pre.reduced is not None:
            x = pre.reduced.min_usage_strategies
            a, b = evaluate(problem, pre.expand(x)), evaluate(pre.reduced, x)
            same = a.cost == b.cost and a.feasible == b.feasible and a.has_forbidden == b.has_forbidden
            check = ("ok" if same else "MISMATCH") + (", feasible" if a.feasible else ", infeasible")
        if args.json:
            print(json.dumps({"instance": name, "check": check, **pre.report}))
            continue
        before, after = pre.report["before"], pre.report["after"] or {}

        def cell(key: str) -> str:
            return f"{before[key]:,} → {after[key]:,}" if key in after else f"{before[key]:,} → -"

        print(f"| {name} | {cell('nodes')} | {cell('free_nodes')} | {cell('strategies')} | "
              f"{cell('edges')} | {cell('edge_entries')} | {cell('time_points')} | {seconds:.2f} | "
              f"{check} |", flush=True)


if __name__ == "__main__":
    main()
