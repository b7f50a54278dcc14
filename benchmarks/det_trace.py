"""Every step of every deterministic backend, recorded, to show that a refactor changes none.

Why: a plan hash at the default work (``portfolio solve FILE --deterministic``) says that the
answer is the same; this says that the way there is: each backend's ``solve`` is called in-process
with a recording ``report.work`` on a few instances, and every ``spend`` (its units, to the last
bit, and its answer), every exchange point, every ``report.best()`` read (and at which count),
every reported plan and bound, and the result (status, plan, bound, note) are kept. Once with a
reporter that never hands a plan, once with one that hands the least-memory plan from point 2 on.

    python benchmarks/det_trace.py record before.json        # on the commit before
    python benchmarks/det_trace.py record after.json         # on the commit after
    python benchmarks/det_trace.py compare before.json after.json

``compare`` prints each difference and exits 1 when there is one. About 4 minutes of one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
BUDGETS = {"minusage": (10**6, 1), "greedy": (10**6, 1), "localsearch": (3000, 200),
           "bound": (1500, 200), "toulbar2": (4000, 300), "cpsat": (2500, 400),
           "maxsat": (2500, 400)}
"""(total, exchange) per backend: the one-shot backends get dense points to be compared."""


def digest(plan) -> Optional[str]:
    return None if plan is None else hashlib.sha256(np.asarray(plan, np.int64).tobytes()).hexdigest()[:16]


def recorder(total: int, exchange: int, plan: Optional[np.ndarray], at: Optional[int]):
    """A ``NullReporter`` with a recording ``report.work`` (``CountingWork``)."""
    from portfolio.backend import NullReporter
    from portfolio.work import CountingWork

    class Work(CountingWork):
        def spend(self, units: float) -> bool:
            ok = super().spend(units)
            self.calls.append((repr(float(units)), ok))
            return ok

    class Report(NullReporter):
        def __init__(self) -> None:
            super().__init__()
            self.work = Work(total, exchange, on_exchange=self.exchange)
            self.work.calls = []
            self.handed, self.events = None, []

        def exchange(self, k: int) -> None:
            self.events.append(("point", k))
            if at is not None and k >= at:
                self.handed = plan

        def best(self):
            self.events.append(("read", self.work.spent()))
            return self.handed

        def __call__(self, solution, note: str = "") -> None:
            super().__call__(solution, note)
            self.events.append(("report", digest(solution), note))

        def bound(self, value, note: str = "") -> None:
            super().bound(value, note)
            self.events.append(("bound", None if value is None else int(value), note))

    return Report()


def record(out: Path, instances: list[str]) -> None:
    from portfolio.generate import generate_problem
    from portfolio.io import load_problem
    from portfolio.registry import Registry
    from portfolio.runner.fallback import safe_plan

    registry = Registry()
    problems = {"gen300": generate_problem(300, seed=7),
                "gen2500": generate_problem(2500, seed=7, forbidden_fraction=0.0)}
    for name in instances:
        problems[name] = load_problem(str(BENCH / f"asplos-2025-iopddl-{name}.json.gz"))
    trace = {}
    for pname, problem in problems.items():
        for bname, (total, exchange) in BUDGETS.items():
            for variant in ("plain", "handed"):
                handed = safe_plan(problem, 10.0) if variant == "handed" else None
                report = recorder(total, exchange, handed, 2 if handed is not None else None)
                t0 = time.time()
                result = registry.get(bname).solve(problem, time.time() + 10**5, 3, None, report)
                key = f"{pname}/{bname}/{variant}"
                trace[key] = {"status": str(result.status), "plan": digest(result.solution),
                              "bound": None if result.lower_bound is None else int(result.lower_bound),
                              "note": result.note, "calls": report.work.calls,
                              "points": report.work.points, "events": report.events}
                print(f"{key}: {result.status.value} {digest(result.solution)} "
                      f"{len(report.work.calls)} spends, {time.time() - t0:.1f} s", flush=True)
    out.write_text(json.dumps(trace, default=str))


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    differences = 0
    for key in sorted(set(before) | set(after)):
        x, y = before.get(key), after.get(key)
        for field in sorted(set(x or {}) | set(y or {})):
            if (x or {}).get(field) != (y or {}).get(field):
                differences += 1
                print(f"{key} {field}: {str((x or {}).get(field))[:200]} -> "
                      f"{str((y or {}).get(field))[:200]}")
    print(f"{len(before)} runs before, {len(after)} after, {differences} differences")
    return 1 if differences else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record a trace of every deterministic backend")
    rec.add_argument("out", type=Path)
    rec.add_argument("--instances", default="G,B", help="contest instances besides two generated ones")
    cmp_ = sub.add_parser("compare", help="compare two recorded traces")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, [n for n in args.instances.split(",") if n])
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
