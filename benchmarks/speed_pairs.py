"""Presolve time and single-move evaluation rate of the code in one source tree, for old/new pairs.

Run it alternately on two checkouts (for example the current tree and a ``git worktree`` of an older
commit) so that both codes see the same machine state:

    python benchmarks/speed_pairs.py /path/to/old/tree
    python benchmarks/speed_pairs.py .

Prints one JSON line: the median of 5 presolves of A, and ``move_speed`` (benchmarks/backends.py:
every strategy of every node evaluated with its memory check, 2 s) on the raw and the merged model.
The first run of a tree compiles its kernels; discard it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def main() -> None:
    tree = str(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve())
    sys.path[:0] = [tree, tree + "/benchmarks"]
    import portfolio
    from backends import move_speed
    from portfolio.io import load_problem
    from portfolio.presolve import presolve

    problem = load_problem(SHARED / "asplos-2025-iopddl-A.json.gz")
    presolve(problem)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        presolve(problem)
        times.append(time.perf_counter() - t)
    move_speed(problem, 0.2)
    raw, merged = move_speed(problem, 2.0)
    print(json.dumps({"tree": tree, "loaded_from": portfolio.__file__,
                      "presolve_A_s": round(statistics.median(times), 3),
                      "raw_Mps": round(raw / 1e6, 2), "merged_Mps": round(merged / 1e6, 2)}))


if __name__ == "__main__":
    main()
