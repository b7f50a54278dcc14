"""Anytime rescoring (issue 34): does ``portfolio report LONG --at SHORT`` match a real SHORT run?

Runs two sweeps of the same instances, configuration and seeds through ``portfolio bench`` (as a
user types it): one with ``-t LONG`` and one with ``-t SHORT``. Then it rescores the long run at
SHORT seconds from its stored incumbent traces (``portfolio.report.rescore_row``, what ``--at``
uses) and compares, per instance and seed, the rescored cost with the real short run's cost.

"Within noise" is judged per instance: the difference of the medians over seeds against the
spread (max - min) of the real short run's seeds; and overall, the paired count of seeds where the
rescored cost was lower, equal or higher (a systematic bias shows as a lopsided count).

    python benchmarks/anytime.py [--instances B,G,K,N,S] [--seeds 0-4] [--long 180] [--short 60]
                                 [--config portfolio] [--name anytime] [--runs-dir runs]
    python benchmarks/anytime.py --long-run runs/LONG --short-run runs/SHORT --short 60

The second form compares two existing runs (e.g. a ``--contest-timeouts`` sweep, 180-240 s, with a
60 s sweep of the same instances and seeds) without running anything.

Both sweeps use bench's ``--resume``: rerunning the same command runs only the missing tasks. The
lead ran ``--long 180 --short 60``; on a loaded 2-core machine the figures are noisy, say so.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"


def sweep(instances: list[str], config: str, seeds: str, limit: float, folder: Path) -> None:
    """One ``portfolio bench`` sweep into ``folder`` (resumed when it exists)."""
    which = ["--portfolio"] if config == "portfolio" else ["-b", config]
    cmd = [sys.executable, "-m", "portfolio", "bench", *instances, *which, "-t", f"{limit:g}",
           "--seeds", seeds, "--name", folder.name, "--runs-dir", str(folder.parent), "-j", "1"]
    if folder.exists():
        cmd.append("--resume")
    subprocess.run(cmd, check=False)   # exit 1 (a failed task) still leaves the other rows


def compare(long_run: Path, short_run: Path, at: float) -> dict:
    """Pair the long run rescored at ``at`` with the short run, per (instance, configuration, seed).

    Returns ``{"pairs": [...], "instances": {...}, "lower": n, "equal": n, "higher": n}`` where a
    pair holds both costs (None without a plan) and both statuses.
    """
    from portfolio.report import load_run, rescore_row

    short = {(r["instance"], r["configuration"], r["seed"], r["repeat"]): r
             for r in load_run(short_run).rows}
    pairs = []
    for row in load_run(long_run).rows:
        key = (row["instance"], row["configuration"], row["seed"], row["repeat"])
        if key not in short:
            continue
        again = rescore_row(row, at)
        real = short[key]
        pairs.append({"instance": key[0], "configuration": key[1], "seed": key[2],
                      "rescored": again["cost"] if again.get("feasible") else None,
                      "rescored_status": again["status"], "rescored_limit": again["time_limit"],
                      "rescored_times": [i["time"] for i in again.get("incumbents") or []],
                      "long": row["cost"] if row.get("feasible") else None,
                      "real": real["cost"] if real.get("feasible") else None,
                      "real_status": real["status"]})
    summary: dict = {"pairs": pairs, "instances": {}, "lower": 0, "equal": 0, "higher": 0}
    for p in pairs:
        if p["rescored"] is not None and p["real"] is not None:
            side = "lower" if p["rescored"] < p["real"] else "higher" if p["rescored"] > p["real"] else "equal"
            summary[side] += 1
    for name in sorted({p["instance"] for p in pairs}):
        mine = [p for p in pairs if p["instance"] == name and p["rescored"] and p["real"]]
        if not mine:
            continue
        rescored = statistics.median(p["rescored"] for p in mine)
        real = [p["real"] for p in mine]
        spread = max(real) - min(real)
        diff = rescored - statistics.median(real)
        summary["instances"][name] = {"n": len(mine), "rescored_median": rescored,
                                      "real_median": statistics.median(real), "real_spread": spread,
                                      "difference_pct": 100 * diff / statistics.median(real),
                                      "within_noise": abs(diff) <= max(spread, 0)}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default="B,G,K,N,S")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--long", type=float, default=180.0)
    parser.add_argument("--short", type=float, default=60.0)
    parser.add_argument("--config", default="portfolio")
    parser.add_argument("--name", default="anytime")
    parser.add_argument("--runs-dir", default=str(REPO / "runs"))
    parser.add_argument("--long-run", default=None,
                        help="compare this existing run folder (e.g. a --contest-timeouts sweep) ...")
    parser.add_argument("--short-run", default=None, help="... with this one, without sweeping")
    args = parser.parse_args()
    files = [str(SHARED / f"asplos-2025-iopddl-{x}.json.gz") if len(x) == 1 else x
             for x in args.instances.split(",")]
    runs = Path(args.runs_dir)
    long_run = Path(args.long_run) if args.long_run else runs / f"{args.name}-{args.long:g}s"
    short_run = Path(args.short_run) if args.short_run else runs / f"{args.name}-{args.short:g}s"
    if not (args.long_run and args.short_run):
        sweep(files, args.config, args.seeds, args.long, long_run)
        sweep(files, args.config, args.seeds, args.short, short_run)
    result = compare(long_run, short_run, args.short)
    print(f"{'instance':<24} {'n':>2} {'rescored median':>18} {'real median':>16} {'real spread':>14} "
          f"{'diff %':>8}  within noise")
    for name, s in result["instances"].items():
        print(f"{name:<24} {s['n']:>2} {s['rescored_median']:>18,.0f} {s['real_median']:>16,.0f} "
              f"{s['real_spread']:>14,} {s['difference_pct']:>+8.3f}  {'yes' if s['within_noise'] else 'NO'}")
    print(f"paired seeds: rescored lower {result['lower']}, equal {result['equal']}, "
          f"higher {result['higher']} (a lopsided count is a bias, not noise)")
    print(f"reports: portfolio report {long_run} --at {args.short:g}   and   "
          f"portfolio report {short_run}")


if __name__ == "__main__":
    main()
