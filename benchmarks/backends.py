"""Greedy and local search on the shared contest instances: cost, score, timings, speed.

Each backend is called in-process (one core) with a deadline ``--seconds`` ahead, after a warm-up
that loads (or compiles) the numba kernels. Prints a markdown table: instance, backend, cost,
feasible, forbidden choices, contest score (best known / cost), time to best, total time; then the
mean score per backend and, unless ``--no-speed``, single-node move evaluations per second on A.

    python benchmarks/backends.py [--seconds 60] [--seed 0] [--instances A,B,G,K,M,N,S]
                                  [--backends greedy,localsearch] [--compile]

``--compile`` measures the first-call compile time in a fresh numba cache (a subprocess), then the
warm start from the cache.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def run_json(cmd: list[str], env: dict | None = None, cwd: str | Path = REPO) -> dict:
    """Run a command that prints a JSON document (``portfolio solve --json``), by default from the
    repository; the document with ``wall_s`` (seconds from before the process started to its exit)
    added, or ``{"error", "returncode"}`` when it printed none."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd)
    wall = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = {"error": proc.stderr[-2000:], "returncode": proc.returncode}
    data["wall_s"] = round(wall, 3)
    return data


def best_known() -> dict[str, int]:
    path = SHARED / "reference" / "best_known.csv"
    if not path.is_file():
        return {}
    with path.open() as fh:
        return {row["benchmark"]: int(row["best_known_cost"]) for row in csv.DictReader(fh)}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--instances", default="A,B,G,K,M,N,S")
    ap.add_argument("--backends", default="greedy,localsearch")
    ap.add_argument("--bench", type=Path, default=SHARED / "benchmarks")
    ap.add_argument("--compile", action="store_true", help="measure numba compile times first")
    ap.add_argument("--no-speed", action="store_true", help="skip the move-speed measurement")
    args = ap.parse_args()

    if args.compile:
        compile_times()
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.io import load_problem
    from portfolio.kernels.engine import warmup
    from portfolio_plugins.greedy import GreedyBackend
    from portfolio_plugins.localsearch import LocalSearchBackend

    print(f"warm-up (kernels from cache or compiled): {warmup():.1f} s", flush=True)
    factories = {"greedy": GreedyBackend, "localsearch": LocalSearchBackend}
    known = best_known()
    scores: dict[str, list[float]] = {}
    print(f"\n{args.seconds:g} s per run, seed {args.seed}\n")
    print("| instance | backend | cost | feasible | forbidden | score | time to best s | "
          "total s |")
    print("|---|---|---:|---|---:|---:|---:|---:|", flush=True)
    problems = {}
    for name in args.instances.split(","):
        path = args.bench / f"asplos-2025-iopddl-{name}.json.gz"
        if not path.is_file():
            print(f"| {name} | (missing {path}) |")
            continue
        problem = load_problem(path)
        problems[name] = problem
        for bname in args.backends.split(","):
            rep = NullReporter()
            t0 = time.time()
            res = factories[bname]().solve(problem, t0 + args.seconds, args.seed, None, rep)
            total = time.time() - t0
            if res.solution is None:
                print(f"| {name} | {bname} | - | no | - | 0 | - | {total:.1f} |", flush=True)
                scores.setdefault(bname, []).append(0.0)
                continue
            ev = evaluate(problem, res.solution)
            bk = known.get(f"asplos-2025-iopddl-{name}")
            score = bk / ev.cost if (bk and ev.feasible and ev.cost) else 0.0
            scores.setdefault(bname, []).append(score)
            found = res.timings.get("best_s")
            if found is None:
                found = (rep.reports[-1][0] - t0) if rep.reports else total
            forb = ev.forbidden_node_choices + ev.forbidden_edge_entries
            print(f"| {name} | {bname} | {ev.cost:,} | {'yes' if ev.feasible else 'NO'} | "
                  f"{forb} | {score:.3f} | {found:.1f} | {total:.1f} |", flush=True)
    print()
    for bname, vals in scores.items():
        print(f"mean score {bname}: {np.mean(vals):.3f} (min {np.min(vals):.3f}, "
              f"{len(vals)} instances)")
    if not args.no_speed and "A" in problems:
        raw, red = move_speed(problems["A"])
        print(f"\nsingle-node move evaluations/s on A (one core): raw model {raw:,.0f}, "
              f"reduced model {red:,.0f}")
    if "greedy" in args.backends and "A" in problems:
        from portfolio.kernels.engine import greedy_plan, prepare

        t0 = time.perf_counter()
        prep = prepare(problems["A"])
        t1 = time.perf_counter()
        greedy_plan(prep, 2)
        t2 = time.perf_counter()
        print(f"greedy on A (kernels compiled, instance loaded): prepare {t1 - t0:.2f} s + "
              f"greedy {t2 - t1:.2f} s = {t2 - t0:.2f} s")


if __name__ == "__main__":
    main()
