"""The exact backends (cpsat, maxsat, mip) on the shared contest instances: model and encoding
sizes, proofs through the driver, LNS after local search. Figures: docs/benchmarks/cpsat.md,
docs/benchmarks/maxsat.md and docs/benchmarks/mip.md. (Their scores in a portfolio, or alone at a
time limit, are `portfolio bench FILES -b cpsat,maxsat,cpsat+maxsat`.)

    python benchmarks/exact_models.py prove [--engine cpsat|maxsat|mip] [--instances B,G,A]
                                     [--threads 1]
                                     [--seconds S]
        the backend as the portfolio runs it (driver: local-search polish, then the full model or
        LNS windows), in this process, under the contest limit (B, A 60 s, G 120 s, ...) unless
        --seconds: status, cost, best known, lower bound, gap, seconds, the driver's note
    python benchmarks/exact_models.py cpsat sizes [--instances A,B,G,K,M,N,S]
        model size per presolved instance and memory encoding (variables, constraints, terms of
        the memory part, build seconds) and whether the full model fits the budget
    python benchmarks/exact_models.py cpsat prove [--instances B,G,A] [--threads 1] [--seconds S]
        `prove --engine cpsat`
    python benchmarks/exact_models.py cpsat lns [--instances ...] [--seconds 60] [--seeds 0]
        localsearch for --seconds, then cpsat warm-started from its plan for --seconds more
        (without the driver's local-search polish, so every gain is CP-SAT's): cost before and
        after, windows tried/improved (from the backend's note; "-" = the full model ran)
    python benchmarks/exact_models.py maxsat sizes [--instances A,B,G,K,M,N,S]
        per presolved instance: the engine's estimate and whether it fits the budget; for those
        that fit, the encoding (direct and pairs edge forms; memory rows counted, and built
        eagerly as MDDs where that is cheap), the constant after folding and after min-sum
        diffusion, and the seconds each part took
    python benchmarks/exact_models.py maxsat forms [--instances B,G] [--seconds 60]
        the engine alone, no hint: each edge form x diffusion on/off; status, cost, bound, time
    python benchmarks/exact_models.py maxsat prove [--instances B,G,A] [--seconds S]
        `prove --engine maxsat`
    python benchmarks/exact_models.py mip sizes [--instances B,G,A,S]
        per presolved instance: the MIP as built (strategy and entry columns, linking and memory
        rows, non-zeros, objective scale, memory mode, build seconds) and after HiGHS's presolve
        (rows, columns, non-zeros, seconds), for the models within the budget
    python benchmarks/exact_models.py mip forms [--instances B,G,A] [--seconds 60]
        the engine alone, no hint, one option changed at a time from the defaults (and the
        objective unscaled): status, cost, bound, wall and CPU seconds, rounds, nodes

Each run is in this process (one backend, --threads cores for CP-SAT). The kernels are compiled
before the clock starts, so the times are the backend's own. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Callable

from common import fmt, header, presolved, reference, run_part




def engine_factory(name: str) -> Callable[[], object]:
    """The engine class of an exact backend, by backend name."""
    if name == "cpsat":
        from portfolio.cpsat import CpSatEngine
        return CpSatEngine
    if name == "maxsat":
        from portfolio.maxsat import MaxSatEngine
        return MaxSatEngine
    if name == "mip":
        from portfolio.mip import MipEngine
        return MipEngine
    raise SystemExit(f"unknown engine {name!r} (cpsat, maxsat or mip)")


def prove(engine: str, names: list[str], threads: int = 1, seconds: float | None = None) -> None:
    """One row per instance: the driver with ``engine`` on the presolved instance."""
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.exact import solve_with_engine
    from portfolio.kernels.engine import warmup

    make = engine_factory(engine)
    warmup()
    print(f"{engine}, {threads} thread(s)\n")
    header("inst | limit s | status | cost | best known | lower bound | gap | time s | note")
    for name, problem, pre in presolved(names):
        limit = seconds or reference(name).timeout
        t0 = time.time()
        result = solve_with_engine(make(), pre.reduced, t0 + limit, 0, None, NullReporter(),
                                   threads=threads)
        spent = time.time() - t0
        cost = (evaluate(problem, pre.expand(result.solution)).cost
                if result.solution is not None else None)
        lb = result.lower_bound
        gap = f"{(cost - lb) / cost:.4%}" if cost and lb is not None else "-"
        print(f"| {name} | {limit:.0f} | {result.status.value} | {fmt(cost)} | "
              f"{reference(name).best_known_cost:,} | {fmt(lb)} | {gap} | {spent:.1f} | "
              f"{result.note[:90]} |", flush=True)


def prove_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["prove"])
    parser.add_argument("--engine", default="cpsat", choices=["cpsat", "maxsat", "mip"])
    parser.add_argument("--instances", default="B,G,A")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    prove(args.engine, args.instances.split(","), args.threads, args.seconds)


def cpsat_sizes(names: list[str]) -> None:
    from portfolio.exact import build_exact_model
    from portfolio.cpsat import BUDGET, CpSatEngine

    header("inst | free nodes | factors | entry vars | memory points | encoding | variables | "
           "constraints | memory terms | build s | fits budget")
    for name, _, pre in presolved(names):
        red = pre.reduced
        engine = CpSatEngine()
        if len(red.time_points) == 0:
            continue
        fits = engine.estimate(red).within(BUDGET)
        md = build_exact_model(red)
        for memory in ("rows", "lazy", "sweep", "cumulative"):
            if memory == "rows" and md.memory.terms > 3_000_000 and fits:
                print(f"| {name} | {int((red.strategy_counts > 1).sum())} | {len(md.factors)} | "
                      f"{md.stats['factor_entries']:,} | {len(md.memory.rhs):,} | rows | - | - | "
                      f"{md.memory.terms:,} | (not built) | {fits} |")
                continue
            if not fits:
                if memory == "sweep":
                    est = engine.estimate(red)
                    print(f"| {name} | {int((red.strategy_counts > 1).sum())} | "
                          f"{len(md.factors)} | {md.stats['factor_entries']:,} | "
                          f"{len(md.memory.rhs):,} | (estimate) | {est.variables:,} | "
                          f"{est.constraints:,} | - | (LNS) | {fits} |")
                continue
            t0 = time.perf_counter()
            built = CpSatEngine(memory=memory).build(md)
            model, stats = built.model, built.stats
            built = time.perf_counter() - t0
            proto = model.proto
            print(f"| {name} | {int((red.strategy_counts > 1).sum())} | {len(md.factors)} | "
                  f"{md.stats['factor_entries']:,} | {len(md.memory.rhs):,} | {memory} | "
                  f"{len(proto.variables):,} | {len(proto.constraints):,} | "
                  f"{stats['memory_terms']:,} | {built:.1f} | {fits} |")


def lns(names: list[str], seconds: float, seeds: list[int]) -> None:
    from portfolio.backend import NullReporter
    from portfolio.evaluate import evaluate
    from portfolio.exact import solve_with_engine
    from portfolio.kernels.engine import warmup
    from portfolio.cpsat import CpSatEngine
    from portfolio_plugins.localsearch import LocalSearchBackend

    warmup()
    header("inst | seed | localsearch cost | + cpsat LNS cost | change | windows | improved | "
           "best known")
    for name, problem, pre in presolved(names):
        red = pre.reduced
        for seed in seeds:
            ls = LocalSearchBackend().solve(red, time.time() + seconds, seed, None,
                                            NullReporter())
            before = evaluate(red, ls.solution).cost
            result = solve_with_engine(CpSatEngine(), red, time.time() + seconds, seed,
                                       ls.solution, NullReporter(), threads=1, polish=False)
            after = evaluate(problem, pre.expand(result.solution)).cost
            m = re.search(r"LNS: (\d+) windows, (\d+) improved", result.note)
            tried, improved = (m.group(1), m.group(2)) if m else ("-", "-")
            print(f"| {name} | {seed} | {before:,} | {after:,} | {(after - before) / before:+.3%} | "
                  f"{tried} | {improved} | {reference(name).best_known_cost:,} |", flush=True)


def cpsat_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sizes", "prove", "lns"])
    parser.add_argument("--instances", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--seeds", default="0")
    args = parser.parse_args()
    if args.what == "sizes":
        cpsat_sizes((args.instances or "A,B,G,K,M,N,S").split(","))
    elif args.what == "prove":
        prove("cpsat", (args.instances or "B,G,A").split(","), args.threads, args.seconds)
    else:
        lns((args.instances or "A,B,G,K,M,N,S").split(","), args.seconds or 60.0,
            [int(s) for s in args.seeds.split(",")])


def maxsat_sizes(names: list[str]) -> None:
    from portfolio.maxsat import MaxSatEngine, encode

    header("inst | free nodes | estimate (vars / clauses / literals) | fits | form | variables | "
           "hard | soft | literals | memory rows | eager MDD nodes | constant folded -> diffused "
           "| encode s (cost / diffusion / rows)")
    for name, _, pre in presolved(names):
        red = pre.reduced
        engine = MaxSatEngine()
        est = engine.estimate(red)
        fits = est.within(engine.budget())
        head = (f"| {name} | {int((red.strategy_counts > 1).sum()):,} | {est.variables:,} / "
                f"{est.constraints:,} / {est.terms:,} | {fits} |")
        if not fits:
            print(head + " (LNS windows) | | | | | | | | |")
            continue
        for form in ("direct", "pairs"):
            t0 = time.perf_counter()
            plain = encode(red, form, memory="lazy")
            t1 = time.perf_counter()
            enc = encode(red, form, memory="lazy", diffusion=10.0)
            t2 = time.perf_counter()
            rows = len(enc.memory.rows)
            mdd = "-"
            if rows <= 200:   # A's 15k rows are only ever built lazily
                eager = encode(red, form, memory="eager")
                mdd = f"{eager.memory.nodes:,} ({eager.stats['hard']:,} hard)"
            t3 = time.perf_counter()
            s = enc.stats
            print(f"{head} {form} | {s['variables']:,} | {s['hard']:,} | {s['soft']:,} | "
                  f"{s['literals']:,} | {rows:,} | {mdd} | {plain.constant:,} -> "
                  f"{enc.constant:,} ({abs(s['sweeps'])} sweeps) | {t1 - t0:.1f} / "
                  f"{t2 - t1:.1f} / {t3 - t2:.1f} |", flush=True)


def forms(names: list[str], seconds: float) -> None:
    from portfolio.maxsat import MaxSatEngine

    header("inst | form | diffusion | status | cost | bound | time s | rounds / lazy rows")
    for name, _, pre in presolved(names):
        for form in ("direct", "pairs"):
            for diffusion in (0.1, 0.0):
                engine = MaxSatEngine(edge_form=form, diffusion=diffusion)
                t0 = time.monotonic()
                out = engine.solve(pre.reduced, seconds, None, 1, 0, lambda plan: None)
                spent = time.monotonic() - t0
                st = out.stats
                print(f"| {name} | {form} | {'on' if diffusion else 'off'} | {out.status} | "
                      f"{fmt(out.cost)} | {fmt(out.bound)} | {spent:.1f} | "
                      f"{st.get('rounds', '-')} / {st.get('lazy_rows', '-')} |", flush=True)


def maxsat_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sizes", "forms", "prove"])
    parser.add_argument("--instances", default=None)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    default = {"sizes": "A,B,G,K,M,N,S", "forms": "B,G", "prove": "B,G,A"}[args.what]
    names = (args.instances or default).split(",")
    if args.what == "sizes":
        maxsat_sizes(names)
    elif args.what == "forms":
        forms(names, args.seconds or 60.0)
    else:
        prove("maxsat", names, 1, args.seconds)


def mip_sizes(names: list[str]) -> None:
    from portfolio.exact import build_exact_model
    from portfolio.mip import BUDGET, MipEngine, build_mip
    from portfolio.mip.engine import load, new_highs

    header("inst | free nodes | x cols | y cols | linking rows | memory rows | non-zeros | scale | "
           "memory | build s | after HiGHS presolve: rows / cols / non-zeros | presolve s")
    for name, _, pre in presolved(names):
        red = pre.reduced
        est = MipEngine().estimate(red)
        head = f"| {name} | {int((red.strategy_counts > 1).sum()):,} |"
        if not est.within(BUDGET):
            print(f"{head} (estimate {est.variables:,} columns, {est.terms:,} non-zeros: above "
                  f"the budget, LNS windows) | | | | | | | | |")
            continue
        t0 = time.perf_counter()
        mip = build_mip(build_exact_model(red))
        t1 = time.perf_counter()
        h = new_highs()
        load(h, mip)
        h.presolve()
        t2 = time.perf_counter()
        lp = h.getPresolvedLp()
        s = mip.stats
        print(f"{head} {s['x_cols']:,} | {s['y_cols']:,} | {s['linking_rows']:,} | "
              f"{s['memory_rows']:,} | {s['nonzeros']:,} | 2^{s['scale'].bit_length() - 1} | "
              f"{s['memory']} | {t1 - t0:.2f} | {lp.num_row_:,} / {lp.num_col_:,} / "
              f"{len(lp.a_matrix_.value_):,} | {t2 - t1:.2f} |", flush=True)


MIP_FORMS = (("defaults", {}), ("weak linking", {"linking": "weak"}),
             ("HiGHS presolve", {"presolve": "choose"}), ("heuristics 0.3", {"heuristic_effort": 0.3}),
             ("lazy memory", {"memory": "lazy"}), ("unscaled objective", None))


def mip_forms(names: list[str], seconds: float) -> None:
    from portfolio.mip import MipEngine, model

    header("inst | form | status | cost | bound | wall s | cpu s | rounds | nodes")
    for name, _, pre in presolved(names):
        for label, options in MIP_FORMS:
            saved = model.COEF_TARGET
            if options is None:   # every coefficient as it is (costs below 2**53 stay exact)
                model.COEF_TARGET = float(2 ** 62)
            t0, c0 = time.monotonic(), time.process_time()
            try:
                out = MipEngine(**(options or {})).solve(pre.reduced, seconds, None, 1, 0,
                                                         lambda plan: None)
            finally:
                model.COEF_TARGET = saved
            st = out.stats
            print(f"| {name} | {label} | {out.status} | {fmt(out.cost)} | {fmt(out.bound)} | "
                  f"{time.monotonic() - t0:.1f} | {time.process_time() - c0:.1f} | "
                  f"{st.get('rounds', '-')} | {st.get('nodes', '-')} |", flush=True)


def mip_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sizes", "forms"])
    parser.add_argument("--instances", default=None)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    default = {"sizes": "B,G,A,S", "forms": "B,G,A"}[args.what]
    names = (args.instances or default).split(",")
    if args.what == "sizes":
        mip_sizes(names)
    else:
        mip_forms(names, args.seconds)


MODES = {"prove": (prove_main, True), "cpsat": (cpsat_main, False), "maxsat": (maxsat_main, False),
         "mip": (mip_main, False)}
"""Each part's command: ``python benchmarks/exact_models.py PART [its own options]``."""


def main() -> None:
    run_part(MODES, __doc__)


if __name__ == "__main__":
    main()
