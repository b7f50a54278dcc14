"""Deadline from process start: when `portfolio solve` / `iopddl` prints its answer, cold or warm.

Runs the real command as a subprocess per (instance, time limit), timestamps the last stdout line
(measured from just before the command starts, so margins are conservative), and checks the plan
with the exact evaluator: cost, forbidden choices, score (best known / cost).

    python benchmarks/runner_deadline.py cold ../shared/benchmarks -t 10      # empty NUMBA_CACHE_DIR
    python benchmarks/runner_deadline.py warm ../shared/benchmarks -t 5 10 20 # the usual cache
    python benchmarks/runner_deadline.py cold ../shared/benchmarks -t 60 --only A
    python benchmarks/runner_deadline.py both ../shared/benchmarks -t 60 --only A --repeat 2 --command solve

``cold`` gives every run its own empty NUMBA_CACHE_DIR (the first run after an install); ``warm``
uses the cache as it is (run ``portfolio warmup`` first); ``both`` alternates a cold and a warm run,
``--repeat`` times, so the two see the same load. The machine's load average is printed
next to each row: on a shared machine the margins move with it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from portfolio.evaluate import evaluate
from portfolio.io import load_problem

BEST_KNOWN = Path(__file__).resolve().parents[2] / "shared" / "reference" / "best_known.csv"


def best_known() -> dict[str, int]:
    try:
        with open(BEST_KNOWN) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return {}
    key = next((k for k in rows[0] if "cost" in k.lower()), None) if rows else None
    name = next((k for k in rows[0] if k.lower() in ("benchmark", "instance", "problem", "name")), None) if rows else None
    return {r[name]: int(float(r[key])) for r in rows if key and name and r[key]}


def run_once(cmd: list[str], env: dict) -> tuple[float, str, int]:
    """(seconds until the last stdout line, that line, exit code)."""
    t0 = time.time()
    popen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    last = [0.0, ""]

    def drain() -> None:
        for line in popen.stdout:
            if line.strip():
                last[0], last[1] = time.time() - t0, line.strip()

    reader = threading.Thread(target=drain)
    reader.start()
    code = popen.wait()
    reader.join()
    return last[0], last[1], code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["cold", "warm", "both"])
    ap.add_argument("--repeat", type=int, default=1, help="Runs per (instance, limit, mode).")
    ap.add_argument("folder", type=Path)
    ap.add_argument("-t", "--time-limits", type=float, nargs="+", default=[10.0])
    ap.add_argument("--only", default="", help="Comma-separated instance letters (default: all).")
    ap.add_argument("--command", choices=["iopddl", "solve"], default="iopddl")
    ap.add_argument("--json", type=Path, help="Also write the rows here.")
    args = ap.parse_args()
    files = sorted(args.folder.glob("asplos-2025-iopddl-*.json.gz"))
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if f.name.split("-")[-1].split(".")[0] in wanted]
    bin_dir = Path(sys.executable).parent
    known = best_known()
    rows = []
    print("| instance | T s | mode | answer at s | margin s | exit | cost | forbidden | score | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    modes = ["cold", "warm"] if args.mode == "both" else [args.mode]
    plan = [(limit, path, mode) for limit in args.time_limits for path in files
            for _ in range(args.repeat) for mode in modes]
    for limit, path, mode in plan:
            env = dict(os.environ)
            tmp = None
            if mode == "cold":
                tmp = tempfile.mkdtemp(prefix="numba-cold-")
                env["NUMBA_CACHE_DIR"] = tmp
            if args.command == "iopddl":
                cmd = [str(bin_dir / "iopddl"), str(path), f"{limit:g}"]
            else:
                cmd = [str(bin_dir / "portfolio"), "solve", str(path), "-t", f"{limit:g}", "-q"]
            load = os.getloadavg()[0]
            at, line, code = run_once(cmd, env)
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
            problem = load_problem(path)
            cost = forb = score = None
            try:
                plan = json.loads(line)
                if plan:
                    ev = evaluate(problem, plan)
                    cost = ev.cost if ev.feasible else None
                    forb = ev.forbidden_node_choices + ev.forbidden_edge_entries
                    ref = known.get(problem.name) or known.get(path.name.split(".")[0])
                    score = None if not ref or not cost else ref / cost
            except (ValueError, TypeError):
                pass
            row = {"instance": problem.name, "limit": limit, "mode": mode, "answer_at": round(at, 3),
                   "margin": round(limit - at, 3), "exit": code, "cost": cost, "forbidden": forb,
                   "score": None if score is None else float(f"{score:.4g}"), "load": round(load, 2)}
            rows.append(row)
            print(f"| {row['instance'][-1]} | {limit:g} | {mode} | {row['answer_at']:.2f} | "
                  f"{row['margin']:+.2f} | {code} | {cost if cost is None else f'{cost:.4g}'} | {forb} | "
                  f"{row['score']} | {row['load']} |", flush=True)
    margins = [r["margin"] for r in rows]
    print(f"\nworst margin {min(margins):+.2f} s over {len(rows)} runs; "
          f"{sum(1 for r in rows if r['forbidden'] == 0)} of {len(rows)} answers free of forbidden choices")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
