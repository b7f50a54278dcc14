"""Load, evaluate and derived-structure timings on the shared contest instances.

Each instance is measured in a fresh Python process, so the peak RSS is that of a user running
``portfolio info`` on it (interpreter, numpy and numba included). Loading is timed from the gzip file
on disk to a validated :class:`portfolio.problem.Problem`; evaluation is the median of 20 full exact
evaluations of the min-usage plan.

    python benchmarks/core.py [--bench ../shared/benchmarks] [NAMES...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from instances import existing

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, statistics, sys, time
t = time.perf_counter()
import numpy, numba
import portfolio.io, portfolio.evaluate, portfolio.jsonscan
imports = time.perf_counter() - t
from portfolio.io import load_problem
from portfolio.evaluate import evaluate
t = time.perf_counter()
p = load_problem(sys.argv[1])
load = time.perf_counter() - t
rss_after_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
p.time_points; p.interval_point_range; p.incidence_offsets; p.adjacency_offsets
derived = time.perf_counter() - t
plan = p.min_usage_strategies
evaluate(p, plan)
times = []
for _ in range(20):
    t = time.perf_counter(); evaluate(p, plan); times.append(time.perf_counter() - t)
print(json.dumps({"nodes": p.num_nodes, "edges": p.num_edges, "imports": imports, "load": load,
                  "rss_load_mb": rss_after_load, "derived": derived,
                  "eval_ms": 1000 * statistics.median(times)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list("ABGKMNS"))
    ap.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "benchmarks")
    args = ap.parse_args()
    print("| instance | nodes | edges | imports s | load s | peak RSS after load MB | "
          "derived structures s | evaluate ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, path in existing(args.bench, args.names):
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                             text=True, check=True, cwd=REPO)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {r['imports']:.2f} | {r['load']:.2f} | "
              f"{r['rss_load_mb']:.0f} | {r['derived']:.2f} | {r['eval_ms']:.1f} |")


if __name__ == "__main__":
    main()
