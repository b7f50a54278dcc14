"""How long ``portfolio.solve`` takes on the bundled example, from the main thread and a worker thread.

Each round starts a fresh interpreter (warm numba cache, as after ``portfolio warmup``) and times,
inside it: ``import portfolio``; the first ``solve`` (registry, plugin loading, backend checks);
then ``--calls`` more solves alternating main thread and a worker thread. The wall time of the whole
child and of ``portfolio solve -q`` (the CLI on the same file) are shown for comparison. Every answer
must be the optimum 305, proven.

    python benchmarks/api.py                    # 5 rounds, 4 calls each after the first
    python benchmarks/api.py --rounds 3 --calls 6
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _child(calls: int) -> dict:
    """One round, in this (fresh) interpreter."""
    import threading

    t = time.perf_counter()
    import portfolio

    out: dict = {"import": time.perf_counter() - t, "main": [], "thread": []}
    example = portfolio.example_path()

    def one() -> float:
        t0 = time.perf_counter()
        result = portfolio.solve(example, time_limit=10)
        assert result.cost == 305 and result.optimal, result
        return time.perf_counter() - t0

    out["first"] = one()
    for k in range(calls):
        if k % 2:
            box: list[float] = []
            thread = threading.Thread(target=lambda: box.append(one()))
            thread.start()
            thread.join()
            out["thread"].append(box[0])
        else:
            out["main"].append(one())
    return out


def _run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4, help="solves after the first, per round")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.calls)))
        return
    cli = shutil.which("portfolio", path=str(Path(sys.executable).parent))
    rows = []
    for _ in range(args.rounds):
        wall, text = _run([sys.executable, __file__, "--child", "--calls", str(args.calls)])
        row = json.loads(text.strip().splitlines()[-1])
        row["child_wall"] = wall
        if cli:
            row["cli_wall"], answer = _run([cli, "solve", "-q"])
            assert answer.strip().splitlines()[-1] == "[0, 0, 0, 2, 0, 0, 1, 1]", answer
        rows.append(row)
    print("| round | import s | first solve s | later, main thread s | later, worker thread s "
          "| whole process s | `portfolio solve -q` s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k, r in enumerate(rows, 1):
        print(f"| {k} | {r['import']:.3f} | {r['first']:.3f} | {max(r['main']):.3f} "
              f"| {max(r['thread']):.3f} | {r['child_wall']:.2f} | {r.get('cli_wall', float('nan')):.2f} |")
    later = [x for r in rows for x in r["main"] + r["thread"]]
    firsts = [r["first"] for r in rows]
    print(f"\nfirst solve in a process: median {statistics.median(firsts):.3f} s, max {max(firsts):.3f} s; "
          f"later solves: median {statistics.median(later):.3f} s, max {max(later):.3f} s "
          f"({len(later)} calls, main and worker thread)")


if __name__ == "__main__":
    main()
