"""A user's first minutes and a program's first calls: the README's first command phase by phase,
`portfolio.solve` from a host program, and where the cold-cache compile time goes. Figures:
docs/benchmarks/first-run.md (first command), docs/benchmarks/api.md (the Python API),
docs/benchmarks/runner.md (compile times).

    python benchmarks/startup.py first /path/to/old-checkout /path/to/this-checkout --repeat 2
    python benchmarks/startup.py first . --chain
        fresh venv, `pip install .`, `portfolio warmup`, `portfolio solve` (the bundled example) for
        one or more checkouts, alternated: each run copies the checkout's tracked files to a new
        folder (as a fresh clone would be) and times each phase of the README's first command on
        the wall clock (wheels from pip's cache); --chain runs it as the README writes it, one
        `bash -c`, and compares the time the solve reports with its wall time from the exec
    python benchmarks/startup.py api [--rounds 5] [--calls 4]
        a fresh interpreter per round (warm numba cache) times `import portfolio`, the first
        `portfolio.solve` on the bundled example and --calls more, alternating the main thread and
        a worker thread, beside `portfolio solve -q` on the same file; every answer the proven 305
    python benchmarks/startup.py compile [--twice] [--stages presolve,greedy,localsearch] [--signatures]
        the warm-up stages in a fresh process with an empty numba cache (``--twice``: then a second
        process on the cache the first filled, which should compile nothing), every numba
        compilation recorded through numba's event API: per stage wall and CPU seconds, per
        function its signatures and exclusive compile time, duplicate specialisations listed
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from common import run_part


PHASES = [("venv", "python3 -m venv .venv"),
          ("install", ".venv/bin/pip install -q ."),
          ("warmup", ".venv/bin/portfolio warmup"),
          ("solve", ".venv/bin/portfolio solve")]


def copy_checkout(source: Path, target: Path) -> None:
    names = subprocess.run(["git", "-C", str(source), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        if (source / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, target / name)


@contextmanager
def fresh_copy(source: Path) -> Iterator[tuple[Path, dict]]:
    """A new folder holding the checkout's tracked files, and an environment without this one's
    venv, plugins or numba cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NUMBA_CACHE_DIR", "PORTFOLIO_PLUGINS")}
    with tempfile.TemporaryDirectory(prefix="first-command-") as tmp:
        work = Path(tmp) / "repo"
        copy_checkout(source, work)
        yield work, env


def one_run(source: Path) -> dict:
    with fresh_copy(source) as (work, env):
        row: dict = {"checkout": str(source)}
        for name, command in PHASES:
            t0 = time.monotonic()
            done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL)
            row[name] = time.monotonic() - t0
            if done.returncode != 0:
                row["error"] = f"{name}: exit {done.returncode}: {done.stderr[-300:]}"
                break
            if name == "solve":
                found = re.search(r"best: ([\d,]+) by (\S+) in ([\d.]+) s of", done.stderr)
                if found:
                    row.update(cost=int(found.group(1).replace(",", "")), winner=found.group(2),
                               reported=float(found.group(3)))
    return row


CHAIN = " && ".join(command for _, command in PHASES)


def chain_run(source: Path) -> str:
    """One run of the whole chain; a markdown row: chain wall, solve wall since its exec, reported."""
    with fresh_copy(source) as (work, env):
        t0 = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", CHAIN], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        became = None
        while proc.poll() is None and became is None:
            try:
                argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
                if argv[0] != "bash" and "solve" in argv:
                    became = time.monotonic()
            except OSError:
                pass
            time.sleep(0.005)
        _, err = proc.communicate()
        end = time.monotonic()
    found = re.search(r"best: ([\d,]+) by (\S+) in ([\d.]+) s of", err)
    reported = float(found.group(3)) if found else float("nan")
    since_exec = (end - became) if became is not None else float("nan")
    return (f"| {source.name} | {end - t0:.1f} | {since_exec:.2f} | {reported:.2f} | "
            f"{found.group(1) if found else '-'} by {found.group(2) if found else '-'} |")


def first_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--chain", action="store_true", help="the README's chain as one bash command")
    args = ap.parse_args()
    if args.chain:
        print("| checkout | chain wall s | solve wall since exec s | solve reported s | answer |")
        print("|---|---:|---:|---:|---|")
        for _ in range(args.repeat):
            for source in args.checkouts:
                print(chain_run(source.resolve()), flush=True)
        return
    print("| checkout | venv s | install s | warmup s | solve s (reported) | answer | first command less install s |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for _ in range(args.repeat):
        for source in args.checkouts:
            r = one_run(source.resolve())
            if "error" in r:
                print(f"| {source} | error: {r['error']} |")
                continue
            less = r["venv"] + r["warmup"] + r["solve"]
            print(f"| {source.name} | {r['venv']:.1f} | {r['install']:.1f} | {r['warmup']:.1f} | "
                  f"{r['solve']:.2f} ({r.get('reported', float('nan')):.2f}) | "
                  f"{r.get('cost', '-')} by {r.get('winner', '-')} | {less:.1f} |", flush=True)


def _api_child(calls: int) -> dict:
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


def _api_run(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, proc.stdout


def api_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4, help="solves after the first, per round")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_api_child(args.calls)))
        return
    cli = shutil.which("portfolio", path=str(Path(sys.executable).parent))
    rows = []
    for _ in range(args.rounds):
        wall, text = _api_run([sys.executable, __file__, "api", "--child", "--calls", str(args.calls)])
        row = json.loads(text.strip().splitlines()[-1])
        row["child_wall"] = wall
        if cli:
            row["cli_wall"], answer = _api_run([cli, "solve", "-q"])
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


STAGES = ("loader", "presolve", "greedy", "moves", "trws", "localsearch", "bound")


def _compile_child(stages: list[str], show_sigs: bool) -> dict:
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


def compile_main() -> None:
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
        print(json.dumps(_compile_child(stages, args.signatures)))
        return
    cache = args.cache or tempfile.mkdtemp(prefix="numba-cold-")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    cmd = [sys.executable, __file__, "compile", "--child", "--stages", ",".join(stages)]
    cmd += ["--signatures"] if args.signatures else []
    print(f"load average {os.getloadavg()[0]:.2f}; cache {cache}")
    for label in ("first process (cold cache)", "second process (same cache)")[:2 if args.twice else 1]:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        _report(label, json.loads(out.strip().splitlines()[-1]), args.top)


MODES = {"first": (first_main, False), "api": (api_main, False), "compile": (compile_main, False)}
"""Each part's command: ``python benchmarks/startup.py PART [its own options]``."""


def main() -> None:
    run_part(MODES, __doc__)


if __name__ == "__main__":
    main()
