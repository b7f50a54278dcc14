"""The exact backends (cpsat, maxsat) on the shared contest instances: what their scripts share.

    python benchmarks/exact.py prove [--engine cpsat|maxsat] [--instances B,G,A] [--threads 1]
                                     [--seconds S]
        the backend as the portfolio runs it (driver: local-search polish, then the full model or
        LNS windows), in this process, under the contest limit (B, A 60 s, G 120 s, ...) unless
        --seconds: status, cost, best known, lower bound, gap, seconds, the driver's note

``benchmarks/cpsat.py prove`` and ``benchmarks/maxsat.py prove`` are this command with their engine.
The kernels are compiled before the clock starts, so the times are the backend's own. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def reference() -> dict[str, dict]:
    """Best-known costs and contest time limits by instance letter."""
    with (SHARED / "reference" / "best_known.csv").open() as fh:
        return {row["benchmark"].rsplit("-", 1)[-1]: row for row in csv.DictReader(fh)}


def load(name: str):
    """The contest instance ``name`` (a letter) and its presolve."""
    from portfolio.io import load_problem
    from portfolio.presolve import presolve

    problem = load_problem(SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz")
    return problem, presolve(problem)


def fmt(x) -> str:
    return "-" if x is None else f"{x:,}" if isinstance(x, int) else str(x)


def header(columns: str) -> None:
    """A markdown table head from ``"a | b | c"``."""
    print(f"| {columns} |")
    print("|" + "---|" * (columns.count("|") + 1))


def presolved(names: list[str]):
    """(name, original problem, its presolve) per instance letter, loaded one at a time."""
    for name in names:
        yield (name, *load(name))


def engine_factory(name: str) -> Callable[[], object]:
    """The engine class of an exact backend, by backend name."""
    if name == "cpsat":
        from portfolio_plugins.cpsat import CpSatEngine
        return CpSatEngine
    if name == "maxsat":
        from portfolio_plugins.maxsat import MaxSatEngine
        return MaxSatEngine
    raise SystemExit(f"unknown engine {name!r} (cpsat or maxsat)")


def prove(engine: str, names: list[str], threads: int = 1, seconds: float | None = None) -> None:
    """One row per instance: the driver with ``engine`` on the presolved instance."""
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.exact import solve_with_engine
    from portfolio.kernels.engine import warmup

    make = engine_factory(engine)
    warmup()
    ref = reference()
    print(f"{engine}, {threads} thread(s)\n")
    header("inst | limit s | status | cost | best known | lower bound | gap | time s | note")
    for name, problem, pre in presolved(names):
        limit = seconds or float(ref[name]["timeout_s"])
        t0 = time.time()
        result = solve_with_engine(make(), pre.reduced, t0 + limit, 0, None, NullReporter(),
                                   threads=threads)
        spent = time.time() - t0
        cost = (evaluate(problem, pre.expand(result.solution)).cost
                if result.solution is not None else None)
        lb = result.lower_bound
        gap = f"{(cost - lb) / cost:.4%}" if cost and lb is not None else "-"
        print(f"| {name} | {limit:.0f} | {result.status.value} | {fmt(cost)} | "
              f"{int(ref[name]['best_known_cost']):,} | {fmt(lb)} | {gap} | {spent:.1f} | "
              f"{result.note[:90]} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["prove"])
    parser.add_argument("--engine", default="cpsat", choices=["cpsat", "maxsat"])
    parser.add_argument("--instances", default="B,G,A")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    prove(args.engine, args.instances.split(","), args.threads, args.seconds)


if __name__ == "__main__":
    main()
