"""How fast the search kernels are on their own: single-node move evaluations per second, the greedy
plan's time, the kernels' compile time, and old/new pairs of source trees side by side.
Figures: docs/benchmarks/backends.md (move rate, greedy, compile) and docs/benchmarks/renovation.md
(pairs). (Costs and scores of `greedy` and `localsearch` alone are `portfolio bench FILES -b
greedy,localsearch`.)

    python benchmarks/kernel_speed.py speed [--instance A] [--compile]
        on the instance (kernels compiled first): move evaluations per second on the raw and the
        reduced model (every strategy of every node, memory checked, 2 s, one core), then the
        greedy plan's prepare and solve times; --compile first measures the kernels' compile time
        in a fresh numba cache (a subprocess) and the warm start from it
    python benchmarks/kernel_speed.py pairs /path/to/old/tree
    python benchmarks/kernel_speed.py pairs .
        presolve time (median of 5 on A) and the move rate of the code in one source tree; run it
        alternately on two checkouts so that both codes see the same machine state (the first run
        of a tree compiles its kernels: discard it). One JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import instance_path


def compile_times() -> None:
    code = "import time; t=time.perf_counter(); from portfolio.kernels.engine import warmup; " \
           "w=warmup(); print(f'{time.perf_counter()-t:.1f} {w:.1f}')"
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold (compile)", "warm (cache)"):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            print(f"kernels {label}: import+warmup {out[0]} s (warmup {out[1]} s)")


def move_speed(problem, seconds: float = 2.0) -> tuple[float, float]:
    """Single-node move evaluations per second (every strategy of every node, memory checked),
    on the raw model and on the reduced one, from the greedy plan."""
    from portfolio.kernels import incremental as inc
    from portfolio.kernels import moves as mv
    from portfolio.kernels.engine import greedy_plan, prepare

    prep = prepare(problem)
    rsol, _, _ = greedy_plan(prep, 2)
    out = []
    for m, sol in ((prep.model, prep.expand(rsol)), (prep.rm, rsol)):
        sc = inc.make_scratch(m, 0)
        t, d = inc.build_tree(m, sol)
        order = np.arange(len(sol), dtype=np.int64)
        mv.count_evals(m, sol, t, d, order, sc)
        sc.ints[1] = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            mv.count_evals(m, sol, t, d, order, sc)
        out.append(sc.ints[1] / (time.perf_counter() - t0))
    return out[0], out[1]


def speed(args: argparse.Namespace) -> None:
    if args.compile:
        compile_times()
    from portfolio.io import load_problem
    from portfolio.kernels.engine import greedy_plan, prepare, warmup

    print(f"warm-up (kernels from cache or compiled): {warmup():.1f} s", flush=True)
    problem = load_problem(instance_path(args.instance))
    raw, red = move_speed(problem)
    print(f"single-node move evaluations/s on {args.instance} (one core): raw model {raw:,.0f}, "
          f"reduced model {red:,.0f}")
    t0 = time.perf_counter()
    prep = prepare(problem)
    t1 = time.perf_counter()
    greedy_plan(prep, 2)
    t2 = time.perf_counter()
    print(f"greedy on {args.instance} (kernels compiled, instance loaded): prepare {t1 - t0:.2f} s "
          f"+ greedy {t2 - t1:.2f} s = {t2 - t0:.2f} s")


def pairs(args: argparse.Namespace) -> None:
    tree = str(Path(args.tree).resolve())
    sys.path[:0] = [tree, tree + "/benchmarks"]
    import portfolio
    from portfolio.io import load_problem
    from portfolio.presolve import presolve
    try:   # the tree's own measurement (an older tree has it in benchmarks/backends.py)
        from kernel_speed import move_speed as measure
    except ImportError:
        from backends import move_speed as measure

    problem = load_problem(instance_path("A"))
    presolve(problem)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        presolve(problem)
        times.append(time.perf_counter() - t)
    measure(problem, 0.2)
    raw, merged = measure(problem, 2.0)
    print(json.dumps({"tree": tree, "loaded_from": portfolio.__file__,
                      "presolve_A_s": round(statistics.median(times), 3),
                      "raw_Mps": round(raw / 1e6, 2), "merged_Mps": round(merged / 1e6, 2)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speed", help="move rate, greedy time, compile time")
    s.add_argument("--instance", default="A")
    s.add_argument("--compile", action="store_true", help="measure numba compile times first")
    p = sub.add_parser("pairs", help="presolve time and move rate of one source tree")
    p.add_argument("tree", nargs="?", default=".")
    args = ap.parse_args()
    (speed if args.what == "speed" else pairs)(args)


if __name__ == "__main__":
    main()
