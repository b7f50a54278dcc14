"""The maxsat backend on the shared contest instances: encoding sizes, forms, proofs.

    python benchmarks/maxsat.py sizes [--instances A,B,G,K,M,N,S]
        per presolved instance: the engine's estimate and whether it fits the budget; for those
        that fit, the encoding (direct and pairs edge forms; memory rows counted, and built
        eagerly as MDDs where that is cheap), the constant after folding and after min-sum
        diffusion, and the seconds each part took
    python benchmarks/maxsat.py forms [--instances B,G] [--seconds 60]
        the engine alone, no hint: each edge form x diffusion on/off; status, cost, bound, time
    python benchmarks/maxsat.py prove [--instances B,G,A] [--seconds S]
        the backend as the portfolio runs it (driver: local-search polish, then the full model or
        LNS windows), one thread, under the contest limit (B, A 60 s, G 120 s) unless --seconds
        (``benchmarks/exact.py prove --engine maxsat``)

Each run is in this process, one at a time. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import time

from exact import fmt, header, presolved, prove


def sizes(names: list[str]) -> None:
    from portfolio_plugins.maxsat import MaxSatEngine
    from portfolio_plugins.maxsat_encoding import encode

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
    from portfolio_plugins.maxsat import MaxSatEngine

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sizes", "forms", "prove"])
    parser.add_argument("--instances", default=None)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    default = {"sizes": "A,B,G,K,M,N,S", "forms": "B,G", "prove": "B,G,A"}[args.what]
    names = (args.instances or default).split(",")
    if args.what == "sizes":
        sizes(names)
    elif args.what == "forms":
        forms(names, args.seconds or 60.0)
    else:
        prove("maxsat", names, 1, args.seconds)


if __name__ == "__main__":
    main()
