"""Which backends really start from a warm start: each default backend alone, cold and warm.

    python benchmarks/warm_start.py plans [--instances K,N,S] [--seconds 60]
        once: the default portfolio's plan for each instance, saved to runs/warm_start/NAME.json
        (`portfolio solve NAME -t 60`, in this process through portfolio.solve)
    python benchmarks/warm_start.py run [--instances K,N,S] [--seconds 10] [--backends ...]
        each backend of the default set (or --backends) alone on each instance for --seconds,
        cold and then warm-started from the saved plan: the first plan the backend reports (cost
        and seconds since the start) and its final cost, both ways

A row is the backend's own (the runner's fallback plan off, the warm start not counted as its
plan); presolve runs as in `portfolio solve`. "starts from it" is yes when the backend's first
warm plan costs no more than the plan it was given. Prints a markdown table; `run` makes the
plans it lacks at --seconds. The figures go to docs/benchmarks/determinism.md, "Warm starts".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import SHARED, fmt, header

REPO = Path(__file__).resolve().parents[1]
PLANS = REPO / "runs" / "warm_start"


def instance(name: str) -> Path:
    return SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz"


def plan_of(name: str, seconds: float) -> tuple[list[int], int]:
    """The saved plan of instance ``name`` (made now with the default portfolio when missing)."""
    import portfolio

    path = PLANS / f"{name}.json"
    if not path.exists():
        result = portfolio.solve(instance(name), time_limit=seconds)
        PLANS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"solution": result.plan, "cost": result.cost,
                                    "seconds": seconds}) + "\n")
    doc = json.loads(path.read_text())
    return doc["solution"], doc["cost"]


def one(problem, backend, seconds: float, warm) -> tuple[object, object, object]:
    """(first reported cost, its seconds, final cost) of ``backend`` alone."""
    from portfolio.options import RunOptions
    from portfolio.runner import run_portfolio

    options = RunOptions(seconds, presolve=True, fallback=False, extra_seeds=False, warm_start=warm)
    result = run_portfolio(problem, [backend], options)
    run = result.runs[backend.name]
    first = run.incumbents[0] if run.incumbents else None
    return (None if first is None else first.cost, None if first is None else first.time,
            run.best_cost)


def run(names: list[str], seconds: float, chosen: str | None) -> None:
    from portfolio.api import choose_backends
    from portfolio.io import load_problem

    backends = choose_backends(chosen.split(",") if chosen else None, seconds)
    header("inst | backend | given | cold first (s) | cold final | warm first (s) | warm final | "
           "starts from it")
    for name in names:
        plan, cost = plan_of(name, max(seconds, 5.0))
        problem = load_problem(instance(name))
        for backend in backends:
            c1, t1, cf = one(problem, backend, seconds, None)
            w1, s1, wf = one(problem, backend, seconds, plan)
            uses = "yes" if w1 is not None and w1 <= cost else "no"
            print(f"| {name} | {backend.name} | {fmt(cost)} | {fmt(c1)} ({fmt(t1)}) | {fmt(cf)} | "
                  f"{fmt(w1)} ({fmt(s1)}) | {fmt(wf)} | {uses} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["plans", "run"])
    parser.add_argument("--instances", default="K,N,S")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--backends", default=None)
    args = parser.parse_args()
    names = args.instances.split(",")
    if args.what == "plans":
        seconds = args.seconds or 60.0
        for name in names:
            t0 = time.monotonic()
            _, cost = plan_of(name, seconds)
            print(f"{name}: cost {cost:,} ({time.monotonic() - t0:.0f} s)", flush=True)
    else:
        run(names, args.seconds or 10.0, args.backends)


if __name__ == "__main__":
    main()
