"""Work units of the exact backends (cpsat, maxsat, mip) in deterministic mode: calibration and
checks. Figures: docs/benchmarks/determinism.md (mip: docs/benchmarks/mip.md).

    python benchmarks/determinism_exact.py calibrate [--engine cpsat|maxsat|mip] [--instances B,G,K]
                                                     [--windows 30] [--units 2000]
        engine calls in deterministic mode, in this process: the full model of every instance
        whose model fits (from the least-memory plan), then ``--windows`` LNS windows of 5-400
        nodes per instance, each limited to ``--units`` work units. Per kind of call: CPU seconds
        (``time.process_time()``), units spent, CPU ms per unit; then a least-squares fit of the
        CPU seconds on the engine's counts, which gives the constants' values
    python benchmarks/determinism_exact.py overhead [--instances K,N,S] [--windows 30]
        the LNS loop's own work per window (build_window, the exact check) and the incumbent's
        statistics, in CPU seconds against the units charged for them (portfolio/exact/lns.py:
        WINDOW_UNITS, WINDOW_UNITS_PER_KITEM, WINDOW_UNITS_PER_EDGE, STATS_UNITS_PER_KEDGE)

    python benchmarks/determinism_exact.py backend [--engine cpsat|maxsat] [--instances B,K]
                                                   [--work 5000] [--seed 0] [--hand-over S]
        the whole backend in deterministic mode (the driver: full model or LNS windows, counted
        by a CountingWork of --work units), twice: status, cost, bound, units spent, exchange
        points, CPU seconds and CPU ms per unit; "same" says whether the two runs agree.
        --hand-over S: from the first exchange point on, report.best() is a plan of S seconds of
        the local-search kernels (computed once), as the portfolio's incumbent would be
    python benchmarks/determinism_exact.py hint [--instances B,G] [--seconds 60]
        cpsat's engine (one worker, timed) on the presolved instance hinted with a 3 s local-search
        plan: the hint's cost, CP-SAT's first solution, status and CPU seconds to the end (the
        hint is complete: every model variable, so CP-SAT starts from it)

A work unit is meant to be about one millisecond of one core (portfolio/work.py). CPU seconds, not
wall seconds: the machine may be loaded. Prints markdown tables.

    python benchmarks/determinism_exact.py trace record FILE | compare BEFORE AFTER
        Every step of every deterministic backend, recorded, to show that a refactor changes none.
        (record on the commit before a refactor and after it, then compare: every spend, exchange
        point, best() read, reported plan and bound, and result must agree)
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

from common import fmt, header, presolved


def _plan(problem):
    from portfolio.runner.fallback import safe_plan

    return safe_plan(problem, 1.0)


def _windows(problem, plan, count: int, seed: int = 0):
    """``count`` LNS windows of the loop's three kinds, sizes spread over 20-400 nodes."""
    from portfolio.exact.lns import WindowPicker, _plan_statistics, build_window

    rng = np.random.default_rng(seed)
    picker = WindowPicker(problem, rng)
    local, regret, load, profile = _plan_statistics(problem, plan)
    sizes = np.geomspace(5, min(400, problem.num_nodes), count).astype(int)
    for size in sizes.tolist():
        _, nodes = picker.pick(plan, size, local, regret, load)
        yield build_window(problem, plan, nodes, profile)


def _features(engine: str, out) -> list[float]:
    """The counts the engine's units are made of (the columns of the fit)."""
    s = out.stats
    if engine == "cpsat":
        return [float(s.get("det_time", 0.0)), float(s.get("size_terms", 0)) / 1000, 1.0]
    if engine == "mip":
        return [float(s.get("lp_iterations", 0)), float(s.get("nodes", 0)),
                float(s.get("callbacks", 0)), s.get("nonzeros", 0) * s.get("rounds", 0) / 1000,
                float(s.get("size_terms", 0)) / 1000, 1.0]
    return [(s.get("literals", 0) + s.get("lazy_literals", 0)) / 1000,
            float(s.get("conflicts", 0)), s.get("propagations", 0) / 1000,
            float(s.get("oracle_calls", 0)), s.get("mdd_steps", 0) / 1000,
            s.get("memory_cells", 0) / 1000, abs(s.get("sweeps", 0)) * s.get("edges", 0) / 1000,
            1.0]


COLUMNS = {"cpsat": ["det s", "kterm", "call"],
           "mip": ["LP iteration", "node", "callback", "knonzero x run", "kterm", "call"],
           "maxsat": ["kliteral", "conflict", "kprop", "oracle call", "kstep", "kcell",
                      "sweep x kedge", "call"]}


def _run(make, problem, hint, units: float):
    """One engine call in deterministic mode: (outcome, CPU seconds, units spent)."""
    from portfolio.backend import NullReporter
    from portfolio.exact import WorkLimit
    from portfolio.work import CountingWork, Meter

    report = NullReporter()
    report.work = CountingWork(10**9)
    limit = WorkLimit(units, Meter(report.work, report))
    c0 = time.process_time()
    out = make().solve(problem, 600.0, hint, 1, 0, lambda plan: None, work=limit)
    return out, time.process_time() - c0, limit.spent


def calibrate_engine(engine: str, names: list[str], windows: int, units: float) -> None:
    from exact_models import engine_factory

    make = engine_factory(engine)
    rows: list[tuple[str, float, float, list[float]]] = []
    for name, _, pre in presolved(names):
        problem = pre.reduced
        plan = _plan(problem)
        if make().estimate(problem).within(make().budget()):
            for u in (units, 3 * units):
                out, cpu, spent = _run(make, problem, plan, u)
                out.stats["size_terms"] = make().estimate(problem).terms
                out.stats["edges"] = problem.num_edges
                rows.append((f"{name} full", cpu, spent, _features(engine, out)))
        for window in _windows(problem, plan, windows):
            out, cpu, spent = _run(make, window.problem, plan[window.nodes], units)
            out.stats["size_terms"] = make().estimate(window.problem).terms
            out.stats["edges"] = window.problem.num_edges
            rows.append((f"{name} windows", cpu, spent, _features(engine, out)))
    print(f"{engine}: engine calls in deterministic mode, limit {units:g} units (full models "
          f"also {3 * units:g})\n")
    header("calls | count | CPU s | units | CPU ms per unit")
    for kind in dict.fromkeys(k for k, *_ in rows):
        mine = [r for r in rows if r[0] == kind]
        cpu, spent = sum(r[1] for r in mine), sum(r[2] for r in mine)
        print(f"| {kind} | {len(mine)} | {cpu:.2f} | {spent:,.0f} | {1000 * cpu / max(spent, 1e-9):.2f} |")
    cpu, spent = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"| all | {len(rows)} | {cpu:.2f} | {spent:,.0f} | {1000 * cpu / max(spent, 1e-9):.2f} |")
    a = np.array([r[3] for r in rows])
    b = np.array([r[1] for r in rows])
    coef = _nonnegative_fit(a, b)
    print("\nfit (CPU ms per count, non-negative least squares): "
          + ", ".join(f"{c:.4g} per {col}" for c, col in zip(1000 * coef, COLUMNS[engine])))


def _nonnegative_fit(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with the negative coefficients dropped (refitted without them) until none is
    left: a cost per count is never negative."""
    keep = np.ones(a.shape[1], dtype=bool)
    while True:
        coef = np.zeros(a.shape[1])
        coef[keep] = np.linalg.lstsq(a[:, keep], b, rcond=None)[0]
        if (coef >= 0).all():
            return coef
        keep &= coef > 0


def overhead(names: list[str], windows: int) -> None:
    from portfolio.evaluate import evaluate
    from portfolio.exact.lns import (STATS_UNITS_PER_KEDGE, WINDOW_UNITS, WINDOW_UNITS_PER_EDGE,
                                     WINDOW_UNITS_PER_KITEM, WindowPicker, _items,
                                     _plan_statistics, build_window)

    print("LNS loop's own work: CPU per window (build + check) and per statistics pass\n")
    header("inst | items | window CPU ms | units charged | statistics CPU ms | units charged")
    for name, _, pre in presolved(names):
        problem = pre.reduced
        plan = _plan(problem)
        c0 = time.process_time()
        local, regret, load, profile = _plan_statistics(problem, plan)
        stats_cpu = time.process_time() - c0
        picker = WindowPicker(problem, np.random.default_rng(0))
        sizes = np.geomspace(5, min(400, problem.num_nodes), windows).astype(int).tolist()
        charged = 0.0
        degree = np.diff(problem.incidence_offsets)
        c0 = time.process_time()
        for size in sizes:   # as the loop does it: pick, build, check
            _, nodes = picker.pick(plan, size, local, regret, load)
            w = build_window(problem, plan, nodes, profile)
            evaluate(problem, w.embed(plan, plan[w.nodes]))
            charged += (WINDOW_UNITS + WINDOW_UNITS_PER_KITEM * _items(problem) / 1000
                        + WINDOW_UNITS_PER_EDGE * int(degree[w.nodes].sum()))
        cpu = (time.process_time() - c0) / len(sizes)
        print(f"| {name} | {_items(problem):,} | {1000 * cpu:.1f} | {charged / len(sizes):.1f} | "
              f"{1000 * stats_cpu:.0f} | {STATS_UNITS_PER_KEDGE * problem.num_edges / 1000:.0f} |")


class _Handing:
    """A reporter playing the runner: ``best()`` is ``plan`` once an exchange point passed."""

    def __init__(self, total: int, plan) -> None:
        from portfolio.backend import NullReporter
        from portfolio.work import CountingWork

        self.inner, self.plan, self.passed = NullReporter(), plan, False
        self.work = CountingWork(total, on_exchange=self._point)

    def _point(self, k: int) -> None:
        self.passed = True

    def __call__(self, solution, note: str = "") -> None:
        self.inner(solution, note)

    def best(self):
        return self.plan if self.passed else None

    def bound(self, value, note: str = "") -> None:
        self.inner.bound(value, note)

    def demand(self, level: str, why: str = "") -> None:
        self.inner.demand(level, why)


def backend(engine: str, names: list[str], total: int, seed: int, hand_over: float) -> None:
    from portfolio.evaluate import evaluate
    from portfolio.exact import solve_with_engine
    from portfolio.exact.driver import kernel_polish
    from portfolio.kernels.engine import warmup

    from exact_models import engine_factory

    make = engine_factory(engine)
    warmup()
    handed = f", a {hand_over:g} s local-search plan handed at the first point" if hand_over else ""
    print(f"{engine} in deterministic mode, {total:,} work units, seed {seed}{handed}, two runs\n")
    header("inst | handed cost | status | cost | bound | units | points | CPU s | CPU ms per unit "
           "| same")
    for name, _, pre in presolved(names):
        plan = kernel_polish(pre.reduced, time.monotonic() + hand_over, seed, None) \
            if hand_over else None
        runs = []
        for _ in range(2):
            report = _Handing(total, plan)
            c0 = time.process_time()
            result = solve_with_engine(make(), pre.reduced, time.time() + 3600, seed, None, report)
            runs.append((result, report.work, time.process_time() - c0))
        (result, work, cpu), (again, work2, _) = runs
        same = (result.status, result.lower_bound, work.points) == \
            (again.status, again.lower_bound, work2.points) and \
            np.array_equal(result.solution, again.solution)
        cost = evaluate(pre.reduced, result.solution).cost if result.solution is not None else None
        given = f"{evaluate(pre.reduced, plan).cost:,}" if plan is not None else "-"
        print(f"| {name} | {given} | {result.status.value} | {cost:,} | {fmt(result.lower_bound)} | "
              f"{work.spent():,} | {len(work.points)} | {cpu:.1f} | "
              f"{1000 * cpu / max(work.spent(), 1):.2f} | {same} |")


def hint(names: list[str], seconds: float) -> None:
    from portfolio.evaluate import evaluate
    from portfolio.exact.driver import kernel_polish
    from portfolio.kernels.engine import warmup
    from portfolio.cpsat import CpSatEngine

    warmup()
    print(f"cpsat engine, one worker, {seconds:g} s limit, hinted with a 3 s local-search plan\n")
    header("inst | hint cost | first solution | status | cost | CPU s")
    for name, _, pre in presolved(names):
        problem = pre.reduced
        good = kernel_polish(problem, time.monotonic() + 3, 0, None)
        c0 = time.process_time()
        out = CpSatEngine().solve(problem, seconds, good, 1, 0, lambda plan: None)
        print(f"| {name} | {evaluate(problem, good).cost:,} | {out.stats.get('first_cost', '-'):,} | "
              f"{out.status} | {out.cost:,} | {time.process_time() - c0:.1f} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "trace":   # a part with options of its own
        sys.argv[0:2] = [f"{sys.argv[0]} trace"]
        trace_main()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate")
    cal.add_argument("--engine", default="cpsat")
    cal.add_argument("--instances", default="B,G,K")
    cal.add_argument("--windows", type=int, default=30)
    cal.add_argument("--units", type=float, default=2000.0)
    be = sub.add_parser("backend")
    be.add_argument("--engine", default="cpsat")
    be.add_argument("--instances", default="B,K")
    be.add_argument("--work", type=int, default=5000)
    be.add_argument("--seed", type=int, default=0)
    be.add_argument("--hand-over", type=float, default=0.0)
    hi = sub.add_parser("hint")
    hi.add_argument("--instances", default="B,G")
    hi.add_argument("--seconds", type=float, default=60.0)
    ov = sub.add_parser("overhead")
    ov.add_argument("--instances", default="K,N,S")
    ov.add_argument("--windows", type=int, default=30)
    args = parser.parse_args()
    if args.command == "calibrate":
        calibrate_engine(args.engine, args.instances.split(","), args.windows, args.units)
    elif args.command == "backend":
        backend(args.engine, args.instances.split(","), args.work, args.seed, args.hand_over)
    elif args.command == "hint":
        hint(args.instances.split(","), args.seconds)
    else:
        overhead(args.instances.split(","), args.windows)


# ------------------------------------------------------------------------ trace
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


def trace_main() -> None:
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
