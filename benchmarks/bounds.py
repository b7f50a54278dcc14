"""Certified lower bounds on the shared contest instances (issue 13).

Two measurements, both printing markdown tables for ``docs/benchmarks/bounds.md``:

``alone``      the ``bound`` backend in-process on the presolved instance (as the runner hands it
               over), for the contest time limit minus the presolve time (times ``--scale``).
               Columns: bound, gap to the best known cost ``(best - bound) / best``, the published
               ``lower_bound_3sig`` and whether ours is at least as high, steps.
``portfolio``  ``portfolio solve`` (subprocess, JSON result) per instance twice, with every default
               backend and with all but ``bound``, in alternating order: cost, contest score
               (best known / cost), best certified bound and gap ``(cost - bound) / cost`` of the
               run with it. The mean scores of the two columns are the "costs the plans nothing"
               check, measured in the same run.

    python benchmarks/bounds.py alone [--scale 1.0] [--instances A,B,G,K,M,N,S]
    python benchmarks/bounds.py portfolio [--scale 1.0] [--instances ...]
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

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TIMEOUTS = {"A": 60, "B": 60, "G": 120, "K": 180, "M": 180, "N": 180, "S": 240}


def reference() -> dict[str, dict]:
    path = SHARED / "reference" / "best_known.csv"
    if not path.is_file():
        return {}
    with path.open() as fh:
        return {row["benchmark"].rsplit("-", 1)[-1]: row for row in csv.DictReader(fh)}


def instance_path(key: str) -> Path:
    return SHARED / "benchmarks" / f"asplos-2025-iopddl-{key}.json.gz"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.3f} %"


def run_alone(keys: list[str], scale: float, ref: dict[str, dict]) -> None:
    from portfolio.backend import NullReporter
    from portfolio.io import load_problem
    from portfolio.kernels.bound import warmup
    from portfolio.presolve import presolve
    from portfolio_plugins.bound import BoundBackend

    warmup()
    print("| instance | limit s | bound | best known | gap to best | published | >= published | "
          "steps | presolve s |")
    print("|---|---:|---:|---:|---:|---:|:-:|---:|---:|")
    gaps, wins = [], 0
    for key in keys:
        t0 = time.time()
        limit = TIMEOUTS[key] * scale
        problem = load_problem(str(instance_path(key)))
        pre = presolve(problem)
        pre_s = time.time() - t0
        res = BoundBackend().solve(pre.reduced, t0 + limit, 0, None, NullReporter())
        row = ref.get(key, {})
        best = int(row["best_known_cost"]) if row else None
        pub = float(row["lower_bound_3sig"]) if row else None
        gap = None if best is None or res.lower_bound is None else (best - res.lower_bound) / best
        ok = pub is not None and res.lower_bound is not None and res.lower_bound >= pub
        wins += ok
        if gap is not None:
            gaps.append(gap)
        print(f"| {key} | {limit:.0f} | {res.lower_bound:,} | {best:,} | {pct(gap)} | {pub:.3g} | "
              f"{'yes' if ok else 'no'} | {res.note.split(';')[0]} | {pre_s:.1f} |", flush=True)
    if gaps:
        print(f"\nmean gap to the best known cost: {pct(sum(gaps) / len(gaps))}; at least the "
              f"published bound on {wins} of {len(keys)}")


def backend_names() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "portfolio", "backends", "--json"],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    rows = doc if isinstance(doc, list) else doc.get("backends", [])
    return [r["name"] for r in rows if r.get("available", True) and r.get("default", True)]


def solve(key: str, limit: float, backends: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        subprocess.run([sys.executable, "-m", "portfolio", "solve", str(instance_path(key)),
                        "-t", str(limit), "-q", "-b", ",".join(backends), "-o", str(out)],
                       capture_output=True, text=True, timeout=limit + 60)
        return json.loads(out.read_text())


def best_bound(doc: dict) -> tuple[int | None, str | None]:
    """The highest standing claimed bound in a result (source named)."""
    best, source = None, None
    for c in doc.get("claims", []):
        if not c.get("false") and c.get("value") is not None and (best is None or c["value"] > best):
            best, source = int(c["value"]), c["source"]
    if best is None:
        for b in doc.get("backends", []):
            if b.get("lower_bound") is not None and b["status"] != "rejected" and (
                    best is None or b["lower_bound"] > best):
                best, source = int(b["lower_bound"]), b["backend"]
    return best, source


def run_portfolio(keys: list[str], scale: float, ref: dict[str, dict]) -> None:
    names = backend_names()
    without = [n for n in names if n != "bound"]
    print(f"backends: {', '.join(names)}; without: {', '.join(without)}")
    print("| instance | limit s | cost with bound | score | cost without | score | best bound "
          "(source) | gap | published | >= published |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|:-:|")
    sw, so, gaps, wins = [], [], [], 0
    for i, key in enumerate(keys):
        limit = TIMEOUTS[key] * scale
        order = [("with", names), ("without", without)]
        docs = dict((label, solve(key, limit, bs)) for label, bs in
                    (order if i % 2 == 0 else order[::-1]))
        row = ref.get(key, {})
        best_known = int(row["best_known_cost"]) if row else None
        pub = float(row["lower_bound_3sig"]) if row else None
        cw, co = docs["with"].get("cost"), docs["without"].get("cost")
        score = lambda c: None if c is None or best_known is None else best_known / c  # noqa: E731
        bound, source = best_bound(docs["with"])
        gap = None if bound is None or cw is None else (cw - bound) / cw
        ok = bound is not None and pub is not None and bound >= pub
        wins += ok
        sw.append(score(cw) or 0.0)
        so.append(score(co) or 0.0)
        if gap is not None:
            gaps.append(gap)
        fmt = lambda c: "-" if c is None else f"{c:,}"  # noqa: E731
        fs = lambda s: "-" if s is None else f"{s:.4f}"  # noqa: E731
        print(f"| {key} | {limit:.0f} | {fmt(cw)} | {fs(score(cw))} | {fmt(co)} | {fs(score(co))} | "
              f"{fmt(bound)} ({source or '-'}) | {pct(gap)} | {pub:.3g} | {'yes' if ok else 'no'} |",
              flush=True)
    n = len(keys)
    print(f"\nmean score with bound {sum(sw) / n:.4f}, without {sum(so) / n:.4f}; mean gap "
          f"{pct(sum(gaps) / len(gaps)) if gaps else '-'} over {len(gaps)} bounded; at least the "
          f"published bound on {wins} of {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["alone", "portfolio"])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the contest time limits")
    ap.add_argument("--instances", default="A,B,G,K,M,N,S")
    args = ap.parse_args()
    keys = [k.strip().upper() for k in args.instances.split(",") if k.strip()]
    missing = [k for k in keys if k not in TIMEOUTS or not instance_path(k).is_file()]
    if missing:
        sys.exit(f"bounds.py: unknown or missing instances: {', '.join(missing)} "
                 f"(expected under {SHARED / 'benchmarks'})")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    (run_alone if args.mode == "alone" else run_portfolio)(keys, args.scale, reference())


if __name__ == "__main__":
    main()
