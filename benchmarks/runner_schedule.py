"""Core-sharing rules of the runner, measured: CPU shares from /proc and portfolio scores.

    python benchmarks/runner_schedule.py cpu ../shared/benchmarks/asplos-2025-iopddl-A.json.gz -t 20
    python benchmarks/runner_schedule.py score ../shared/benchmarks -t 20 --backends all

``cpu`` runs ``localsearch,greedy,minusage`` plus two copies of the test suite's CPU-burning fake
backend (``spin``, ``spin-2`` from tests/faulty_backends.py) on 2 cores under each rule and prints
each backend's CPU seconds (the runner reads them from /proc) against its fair share
(cores x wall time it was alive / backends alive). ``score`` runs a portfolio under each rule on
every shared instance and prints the mean score (best known / cost).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from runner_deadline import best_known

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("share", "pin", "slices")


def solve(path: Path, limit: float, backends: str, policy: str, workers: int, extra_env: dict) -> dict:
    exe = Path(sys.executable).with_name("portfolio")
    cmd = [str(exe), "solve", str(path), "-t", f"{limit:g}", "-q", "--json", "--workers", str(workers),
           "--schedule", policy]
    if backends != "all":
        cmd += ["--backends", backends]
    env = dict(os.environ, **extra_env)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def cpu(args: argparse.Namespace) -> None:
    env = {"PYTHONPATH": str(ROOT / "tests"), "PORTFOLIO_PLUGINS": "faulty_backends"}
    backends = "localsearch,greedy,minusage,spin,spin-2"
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| rule | backend | alive s | CPU s | fair share s | CPU / fair | relative to the run |")
    print("|---|---|---|---|---|---|---|")
    for policy in args.policies:
        doc = solve(Path(args.target), args.time_limit, backends, policy, 2, env)
        rows = [b for b in doc["backends"] if b["started"] is not None]
        # fair share: over the run, the cores split equally among the workers alive at each instant
        events = sorted({b["started"] for b in rows} | {b["finished"] for b in rows})
        fair = {b["backend"]: 0.0 for b in rows}
        for lo, hi in zip(events, events[1:]):
            alive = [b for b in rows if b["started"] <= lo and b["finished"] >= hi]
            for b in alive:
                fair[b["backend"]] += (hi - lo) * min(1.0, 2 / len(alive))
        # on a shared machine the run as a whole gets less than 2 cores: compare with what it got
        overall = sum(b["cpu_seconds"] or 0.0 for b in rows) / max(sum(fair.values()), 1e-9)
        for b in rows:
            f = fair[b["backend"]]
            c = b["cpu_seconds"] or 0.0
            ratio = c / f if f else float("nan")
            print(f"| {policy} | {b['backend']} | {b['finished'] - b['started']:.2f} | {c:.2f} | "
                  f"{f:.2f} | {ratio:.2f} | {ratio / overall:.2f} |", flush=True)


def score(args: argparse.Namespace) -> None:
    known = best_known()
    files = sorted(Path(args.target).glob("asplos-2025-iopddl-*.json.gz"))
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| rule | " + " | ".join(f.name.split("-")[-1][0] for f in files) + " | mean |")
    print("|---|" + "---|" * (len(files) + 1))
    for policy in args.policies:
        scores = []
        for f in files:
            doc = solve(f, args.time_limit, args.backends, policy, 2, {})
            ref = known.get(doc["problem"])
            scores.append(ref / doc["cost"] if ref and doc.get("cost") else 0.0)
        print(f"| {policy} | " + " | ".join(f"{s:.4f}" for s in scores) +
              f" | {sum(scores) / len(scores):.4f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["cpu", "score"])
    ap.add_argument("target", help="an instance (cpu) or the folder of shared instances (score)")
    ap.add_argument("-t", "--time-limit", type=float, default=20.0)
    ap.add_argument("--backends", default="all")
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    args = ap.parse_args()
    cpu(args) if args.what == "cpu" else score(args)


if __name__ == "__main__":
    main()
