"""Issue 33's table: plan quality at the contest limits, per instance and seed, before and after.
Figures: docs/benchmarks/quality.md and docs/benchmarks.md. It measures nothing itself: it reads
bench runs for what `portfolio report` does not show (whose plans carried the descent, CPU seconds
per backend, the 2026 winner's median).

Reads ``portfolio bench`` run folders (one per variant, same instances and seeds, e.g. made with
``portfolio bench FILES --portfolio --contest-timeouts --seeds 0-2 --name NAME``) and prints
markdown: per instance and seed the cost, the contest score (contest best known / cost), the cost
against the 2026 winner's 8-core median, which backend sent the winning plan, whose plans carried
the descent (each backend's share of the cost reduction in the incumbent trace), the lower bound, and
the CPU seconds each backend's worker used (``cpu_seconds`` of the bench rows; extra seed copies
are summed into their backend). Then per variant the means the issue's targets are stated in, and
the score each run would have had at ``--at`` seconds, rescored from its incumbent trace (the same
rescoring as ``portfolio report --at``).

    python benchmarks/quality.py runs/r33-before runs/r33-after [--at 60] [--names before,after]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

from common import SHARED, best_known

REFERENCE = SHARED / "reference"


def anchors() -> dict[str, dict[str, int]]:
    """Per benchmark (``asplos-2025-iopddl-X``): the winner's 2026 median, bounds (the 2026 anchors,
    shared reference data the package does not ship); the contest's best known cost comes from the
    library (:func:`common.best_known`)."""
    out: dict[str, dict[str, int]] = {}
    path = REFERENCE / "anchors_2026.csv"
    if not path.exists():
        return out
    with open(path) as f:
        for row in csv.DictReader(f):
            out[row["benchmark"]] = {k: int(v) for k, v in row.items() if k != "benchmark" and v}
    return out


def cpu_by_backend(row: dict) -> dict[str, float]:
    """CPU seconds per backend (``toulbar2+1`` counted as ``toulbar2``)."""
    cpu: dict[str, float] = defaultdict(float)
    for run in row.get("backend_runs", []):
        if run.get("cpu_seconds") is not None:
            cpu[run["backend"].split("+")[0]] += float(run["cpu_seconds"])
    return dict(cpu)


def improvement_shares(row: dict, after: float = 0.0) -> dict[str, float]:
    """Per backend, its share of the cost reduction from the first plan within 20 % of the final cost to
    the final one (the incumbent trace; extra seed copies counted as their backend): the last
    improver is often a polisher (local search), this says whose plans carried the descent."""
    trace = [i for i in row.get("incumbents") or [] if i.get("cost") is not None]
    final = row.get("cost")
    if not trace or not final:
        return {}
    trace = [i for i in trace if 10 * i["cost"] <= 12 * final]
    total = trace[0]["cost"] - final if trace else 0
    if total <= 0:
        return {}
    share: dict[str, float] = defaultdict(float)
    for before, now in zip(trace, trace[1:]):
        share[str(now["backend"]).split("+")[0]] += (before["cost"] - now["cost"]) / total
    return dict(share)


def main() -> None:
    from portfolio.report import load_run
    from portfolio.report.anytime import rescore_row

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--names", default=None, help="comma-separated variant names")
    parser.add_argument("--at", type=float, default=60.0)
    args = parser.parse_args()
    names = args.names.split(",") if args.names else [Path(r).name for r in args.runs]
    ref = anchors()
    known = best_known()
    print("| instance | seed | variant | cost | score | vs 2026 median | at %gs | winner | descent by | bound | CPU s per backend |"
          % args.at)
    print("|---|---:|---|---:|---:|---:|---:|---|---|---:|---|")
    summary: dict[str, dict[str, list]] = {n: defaultdict(list) for n in names}
    rows_by = {}
    for name, path in zip(names, args.runs):
        for row in load_run(path).rows:
            rows_by[(row["instance"], row["seed"], name)] = row
    for inst, seed, name in sorted(rows_by, key=lambda k: (k[0], k[1], names.index(k[2]))):
        row = rows_by[(inst, seed, name)]
        a = ref.get(inst, {})
        best = known.get(inst)
        cost = row["cost"] if row.get("feasible") else None
        score = best / cost if cost and best else None
        median = a["winner_2026_median_cost_8cores"] / cost if cost and a else None
        early = rescore_row(row, args.at)
        early_cost = early["cost"] if early.get("feasible") else None
        early_score = best / early_cost if early_cost and best else None
        cpu = cpu_by_backend(row)
        shares = improvement_shares(row)
        descent = ", ".join(f"{b} {100 * v:.0f} %" for b, v in sorted(shares.items(), key=lambda kv: -kv[1])
                            if v >= 0.05)
        cpu_text = ", ".join(f"{b} {s:.0f}" for b, s in sorted(cpu.items(), key=lambda kv: -kv[1]) if s >= 1)
        bound = row.get("lower_bound")
        s = summary[name]
        s["score"].append(score or 0.0)
        s[f"score:{inst}"].append(score or 0.0)
        s[f"early:{inst}"].append(early_score or 0.0)
        s[f"bound:{inst}"].append(bound or 0)
        print(f"| {inst.rsplit('-', 1)[-1]} | {seed} | {name} | {cost:,} | {score:.4f} | {median:.4f} | "
              f"{early_score:.4f} | {row.get('winner')} | {descent} | {bound or 0:,} | {cpu_text} |"
              if cost and early_score else
              f"| {inst.rsplit('-', 1)[-1]} | {seed} | {name} | {cost} | - | - | - | {row.get('winner')} | {descent} | "
              f"{bound or 0:,} | {cpu_text} |")
    print()
    instances = sorted({k[0] for k in rows_by})
    print("| variant | " + " | ".join(i.rsplit('-', 1)[-1] for i in instances)
          + " | mean | worst run | N, S at %gs (worst) | best bound K, S |" % args.at)
    print("|---|" + "---:|" * (len(instances) + 4))
    for name in names:
        s = summary[name]
        per = [statistics.mean(s[f"score:{i}"]) if s[f"score:{i}"] else 0.0 for i in instances]
        early = [min(s[f"early:{i}"]) for i in instances if i[-1] in "NS" and s[f"early:{i}"]]
        bounds = [max(s[f"bound:{i}"]) for i in instances if i[-1] in "KS" and s[f"bound:{i}"]]
        print(f"| {name} | " + " | ".join(f"{p:.4f}" for p in per)
              + f" | {statistics.mean(s['score']) if s['score'] else 0:.4f} | {min(s['score'], default=0):.4f}"
              + f" | {', '.join(f'{e:.4f}' for e in early)} | {', '.join(f'{b:,}' for b in bounds)} |")


if __name__ == "__main__":
    main()
