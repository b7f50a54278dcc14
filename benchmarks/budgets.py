"""Memory budgets (issue 32): the targets of docs/budgets.md, one part per target.
Figures: docs/benchmarks/budgets.md.

    python benchmarks/budgets.py infeasible [-i B,G]         limit below the least peak: proven, < 5 s
    python benchmarks/budgets.py tight [-i A,K] [-t 20]      limit 10 % below a best plan's peak
    python benchmarks/budgets.py peak [-i all] [-t 60]       --objective peak: least peak vs bound
    python benchmarks/budgets.py tradeoff [-i K,S] [-t 300]  8 points, monotone, the file's limit

Each part runs the installed `portfolio` command as a real process (its wall time is what a user
waits) and prints one markdown row per instance. Files with a changed limit go to a temporary folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
ALL = "A,B,G,K,M,N,S"
PORTFOLIO = str(Path(sys.executable).with_name("portfolio"))


def instance(letter: str) -> Path:
    found = sorted(BENCH.glob(f"*-{letter}.json*"))
    if not found:
        sys.exit(f"no instance {letter} in {BENCH}")
    return found[0]


def with_limit(path: Path, limit: int, folder: Path) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    doc["problem"]["usage_limit"] = int(limit)
    out = folder / f"{path.name.split('.')[0]}-limit{limit}.json"
    out.write_text(json.dumps(doc))
    return out


def solve(path: Path, seconds: float, *extra: str) -> tuple[dict, float, int]:
    t0 = time.monotonic()
    res = subprocess.run([PORTFOLIO, "solve", str(path), "-t", str(seconds), "--json", "-q", *extra],
                         capture_output=True, text=True)
    wall = time.monotonic() - t0
    return (json.loads(res.stdout) if res.stdout.strip() else {}), wall, res.returncode


def least_peak_bound(path: Path) -> int:
    from portfolio.api import load
    from portfolio.memory import least_peak_bound as bound

    return int(bound(load(path)).value)


def part_infeasible(letters: list[str], seconds: float, tmp: Path) -> None:
    print("| instance | limit | certified least peak | verdict | wall s |\n|---|---|---|---|---|")
    for letter in letters:
        path = instance(letter)
        low = with_limit(path, least_peak_bound(path) * 99 // 100, tmp)
        doc, wall, _ = solve(low, seconds)
        m = doc.get("memory") or {}
        print(f"| {letter} | {m.get('limit'):,} | {m['bound']['value']:,} | {m.get('verdict')} "
              f"| {wall:.2f} |")


def part_tight(letters: list[str], seconds: float, tmp: Path) -> None:
    print("| instance | plan's peak | limit (-10 %) | certified least peak | best peak found (t) "
          "| verdict | wall s |\n|---|---|---|---|---|---|---|")
    for letter in letters:
        path = instance(letter)
        doc, _, _ = solve(path, seconds)
        peak = doc["evaluation"]["peak_usage"]
        low = with_limit(path, peak * 9 // 10, tmp)
        doc, wall, _ = solve(low, seconds)
        m = doc.get("memory") or {}
        best = m.get("best") or {}
        print(f"| {letter} | {peak:,} | {peak * 9 // 10:,} | {m['bound']['value']:,} | "
              f"{best.get('peak', 0):,} ({best.get('time')}) | {m.get('verdict')} | {wall:.2f} |")


def part_peak(letters: list[str], seconds: float, tmp: Path) -> None:
    print("| instance | least peak found | certified bound | gap % | proven | cost | wall s |\n"
          "|---|---|---|---|---|---|---|")
    for letter in letters:
        doc, wall, _ = solve(instance(letter), seconds, "--objective", "peak")
        m = doc.get("memory") or {}
        gap = m.get("gap")
        print(f"| {letter} | {m.get('least_peak') or 0:,} | {m['bound']['value']:,} | "
              f"{'-' if gap is None else f'{100 * gap:.4f}'} | {m.get('proven')} | "
              f"{doc.get('cost') or 0:,} | {wall:.1f} |")


def part_tradeoff(letters: list[str], seconds: float, tmp: Path) -> None:
    print("| instance | points | monotone | cost at the file's limit | wall s | folder |\n"
          "|---|---|---|---|---|---|")
    for letter in letters:
        t0 = time.monotonic()
        res = subprocess.run([PORTFOLIO, "tradeoff", str(instance(letter)), "-t", str(seconds),
                              "--json", "-q", "--plot"], capture_output=True, text=True)
        wall = time.monotonic() - t0
        doc = json.loads(res.stdout)
        costs = [r["cost"] for r in doc["rows"] if r["cost"] is not None]
        own = next((r["cost"] for r in doc["rows"] if r["own_limit"]), None)
        print(f"| {letter} | {len(doc['rows'])} | {costs == sorted(costs, reverse=True)} | "
              f"{'-' if own is None else f'{own:,}'} | {wall:.1f} | {doc.get('folder')} |")


def main() -> None:
    parts = {"infeasible": (part_infeasible, "B,G", 10.0), "tight": (part_tight, "A,K", 20.0),
             "peak": (part_peak, ALL, 60.0), "tradeoff": (part_tradeoff, "K,S", 300.0)}
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("part", choices=sorted(parts))
    ap.add_argument("-i", "--instances")
    ap.add_argument("-t", "--time-limit", type=float)
    args = ap.parse_args()
    run, default, seconds = parts[args.part]
    letters = (args.instances or default).replace("all", ALL).split(",")
    with tempfile.TemporaryDirectory() as tmp:
        run(letters, args.time_limit or seconds, Path(tmp))


if __name__ == "__main__":
    main()
