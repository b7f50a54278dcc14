"""Where the cold-cache compile time goes: per stage and per numba function.

Runs the warm-up stages in a fresh process with its own numba cache folder (empty: ``cold``, the
first run after an install; or the folder a cold run filled: ``--twice`` runs again on it to show
what a second process recompiles, which should be nothing), records every numba compilation through
numba's event API (inclusive and exclusive CPU seconds: a caller's compile includes its callees';
CPU time because the machine is shared and wall time moves with the load) and prints, per stage,
its wall and CPU time, and per function, its compiled signatures and exclusive compile time. Duplicate specialisations (one function compiled for several signatures) are listed.

    python benchmarks/compile.py                 # cold, default stages
    python benchmarks/compile.py --twice         # cold, then a second process on the same cache
    python benchmarks/compile.py --stages presolve,greedy,localsearch --signatures
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

STAGES = ("loader", "presolve", "greedy", "moves", "trws", "localsearch", "bound")


def _child(stages: list[str], show_sigs: bool) -> dict:
    from numba.core import event

    records: list[tuple[str, str, float, float]] = []   # name, signature, inclusive, exclusive
    stack: list[list[float]] = []

    class Recorder(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            stack.append([time.process_time(), 0.0])

        def on_end(self, ev: event.Event) -> None:
            t0, child = stack.pop()
            inc = time.process_time() - t0
            if stack:
                stack[-1][1] += inc
            disp = ev.data["dispatcher"]
            name = f"{disp.py_func.__module__.split('.')[-1]}.{disp.py_func.__name__}"
            sig = [str(a) for a in ev.data["args"]] if show_sigs else []
            records.append((name, sig, inc, inc - child))

    event.register("numba:compile", Recorder())
    t = time.perf_counter()
    import numpy as np

    from portfolio.cli import bundled_example
    from portfolio.io import load_problem
    from portfolio.kernels import engine
    timings: dict[str, float] = {"import": time.perf_counter() - t}
    problem = None
    for stage in stages:
        n0 = len(records)
        t = time.perf_counter()
        c = time.process_time()
        if stage == "loader":
            problem = load_problem(bundled_example())
        elif stage == "presolve":
            from portfolio.presolve import warm_up
            warm_up()
        elif stage == "greedy":
            engine.warmup("greedy")
        elif stage == "moves":
            engine.warmup("moves")
        elif stage == "trws":
            engine.warmup("trws")
        elif stage == "localsearch":
            engine.warmup("search")
        elif stage == "bound":
            from portfolio.kernels import bound
            bound.warmup()
        timings[stage] = time.perf_counter() - t
        timings[stage + "_cpu"] = time.process_time() - c
        timings[stage + "_compiles"] = len(records) - n0
    del problem, np
    per: dict[str, dict] = defaultdict(lambda: {"sigs": [], "excl": 0.0, "incl": 0.0})
    for name, sig, inc, exc in records:
        per[name]["sigs"].append(sig)
        per[name]["excl"] += exc
        per[name]["incl"] = max(per[name]["incl"], inc)
    return {"timings": timings, "functions": per}


def _report(label: str, doc: dict, top: int) -> None:
    t = doc["timings"]
    stages = [k for k in t if not k.endswith(("_compiles", "_cpu"))]
    print(f"## {label}")
    print("stage wall (CPU) s: " + ", ".join(
        f"{k} {t[k]:.2f}" + (f" ({t[k + '_cpu']:.2f}; {t[k + '_compiles']} compiles)"
                             if k + "_compiles" in t else "") for k in stages) +
          f"; total {sum(t[k] for k in stages):.2f} ({sum(t.get(k + '_cpu', 0) for k in stages):.2f})")
    funcs = sorted(doc["functions"].items(), key=lambda kv: -kv[1]["excl"])
    total = sum(f["excl"] for _, f in funcs)
    print(f"{len(funcs)} functions compiled, {sum(len(f['sigs']) for _, f in funcs)} signatures, "
          f"{total:.2f} s of compilation (exclusive CPU times summed)")
    if not funcs:
        return
    print("| function | signatures | exclusive CPU s | inclusive CPU s (max) |")
    print("|---|---:|---:|---:|")
    for name, f in funcs[:top]:
        print(f"| {name} | {len(f['sigs'])} | {f['excl']:.2f} | {f['incl']:.2f} |")
    dups = [(name, f) for name, f in funcs if len(f["sigs"]) > 1]
    if dups:
        print("duplicate specialisations (arguments that differ):")
        for name, f in dups:
            print(f"  {name}: {len(f['sigs'])}")
            for diff in _differences(f["sigs"]):
                print(f"      {diff}")


def _differences(sigs: list[list[str]]) -> list[str]:
    """Argument positions (and, inside a named tuple, fields) where the signatures differ."""
    out = []
    if not sigs or not sigs[0] or len({len(s) for s in sigs}) > 1:
        return out
    for pos in range(len(sigs[0])):
        vals = [s[pos] for s in sigs]
        if len(set(vals)) == 1:
            continue
        parts = [v.split("array(") for v in vals]
        if "(" in vals[0] and len({len(p) for p in parts}) == 1 and len(parts[0]) > 2:
            fields = [k for k in range(len(parts[0])) if len({p[k] for p in parts}) > 1]
            out.append(f"arg {pos}: fields {fields}: " +
                       " / ".join(str([p[k][:40] for k in fields[:3]]) for p in parts))
        else:
            out.append(f"arg {pos}: " + " / ".join(v[:120] for v in vals))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, from {STAGES}")
    ap.add_argument("--twice", action="store_true", help="then a second process on the same cache")
    ap.add_argument("--cache", help="numba cache folder (default: a new empty one)")
    ap.add_argument("--signatures", action="store_true", help="print each signature compiled")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    if args.child:
        print(json.dumps(_child(stages, args.signatures)))
        return
    cache = args.cache or tempfile.mkdtemp(prefix="numba-cold-")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    cmd = [sys.executable, __file__, "--child", "--stages", ",".join(stages)]
    cmd += ["--signatures"] if args.signatures else []
    print(f"load average {os.getloadavg()[0]:.2f}; cache {cache}")
    for label in ("first process (cold cache)", "second process (same cache)")[:2 if args.twice else 1]:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        _report(label, json.loads(out.strip().splitlines()[-1]), args.top)


if __name__ == "__main__":
    main()
