"""Converting the shared instances to and from XLA requests: wall time and peak memory per step.

Each step runs in a fresh Python process (so its peak RSS, read from ``getrusage`` at its end, is
its own): load the source with :func:`portfolio.adapters.formats.read_any`, write the target with
``save_any``, exactly what ``portfolio convert`` does. Steps: contest JSON (``.json.gz``) to binary
request (``.pb``), that request back to contest JSON (checked identical to the original problem),
and, with ``--text``, contest JSON to a text request. Prints a markdown table.

    python benchmarks/convert.py [--instances A,B,G,K,M,N,S] [--text]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from portfolio.adapters.formats import read_any, save_any
src, dst, check = sys.argv[1:4]
conv = read_any(src)
t1 = time.perf_counter()
save_any(conv.problem, dst)
t2 = time.perf_counter()
same = None
if check:
    import numpy as np
    from portfolio.io import load_problem
    a, b = load_problem(check), load_problem(dst)
    same = all(np.array_equal(getattr(a, k), getattr(b, k)) for k in (
        "strategy_offsets", "node_costs", "interval_start", "interval_end", "interval_usages",
        "edge_nodes", "edge_costs")) and a.usage_limit == b.usage_limit
print(json.dumps({"read": t1 - t0, "write": t2 - t1, "total": t2 - t0, "same": same,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def step(src: Path, dst: Path, check: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), str(dst), str(check or "")],
                         capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    row["bytes"] = dst.stat().st_size
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", default="A,B,G,K,M,N,S")
    parser.add_argument("--text", action="store_true", help="also write text requests (slow)")
    args = parser.parse_args()
    print("| instance | step | total s (read + write) | peak RSS MB | output MB | identical |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.instances.split(","):
            src = SHARED / f"asplos-2025-iopddl-{name}.json.gz"
            if not src.is_file():
                print(f"| {name} | missing: {src} | | | | |")
                continue
            pb, back, txt = (Path(tmp) / f"{name}{ext}" for ext in (".pb", ".json.gz", ".txtpb"))
            steps = [("json.gz -> pb", src, pb, None), ("pb -> json.gz", pb, back, src)]
            if args.text:
                steps.append(("json.gz -> txtpb", src, txt, None))
            for label, a, b, check in steps:
                r = step(a, b, check)
                same = "" if r["same"] is None else ("yes" if r["same"] else "**NO**")
                print(f"| {name} | {label} | {r['total']:.2f} ({r['read']:.2f} + {r['write']:.2f}) | "
                      f"{r['rss_mb']:.0f} | {r['bytes'] / 2**20:.1f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
