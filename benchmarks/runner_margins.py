"""The runner as a user meets it: when `portfolio solve` / `iopddl` prints its answer (cold or warm
numba cache), how much memory a run's process tree takes, and how the cores are shared between
backends. Figures: docs/benchmarks/runner.md (`timeline`: docs/benchmarks/short-budgets.md).
(Scores of configurations, backend sets or settings against each other are `portfolio bench`
sweeps: docs/bench.md.)

    python benchmarks/runner_margins.py deadline cold ../shared/benchmarks -t 10   # empty NUMBA_CACHE_DIR
    python benchmarks/runner_margins.py deadline warm ../shared/benchmarks -t 5 10 20
    python benchmarks/runner_margins.py deadline both ../shared/benchmarks -t 60 --only A --repeat 2 --command solve
        the real command as a subprocess per (instance, time limit): the last stdout line
        timestamped from just before the command starts (conservative margins), the plan checked
        with the exact evaluator (cost, forbidden choices, score against the best known cost);
        ``cold`` gives every run its own empty NUMBA_CACHE_DIR, ``warm`` uses the cache as it is,
        ``both`` alternates them; the load average beside each row
    python benchmarks/runner_margins.py resources ../shared/benchmarks/asplos-2025-iopddl-A.json.gz -t 20 \
        --backends greedy,localsearch --workers 2
        the whole process tree sampled every 50 ms (RSS and PSS: PSS splits the pages forked
        workers share, so its sum is the true footprint) and the margin before the deadline
    python benchmarks/runner_margins.py cpu ../shared/benchmarks/asplos-2025-iopddl-A.json.gz -t 20 \
        [--policies share pin slices]
        localsearch, greedy, minusage and two copies of the test suite's CPU-burning fake backend
        (spin, spin-2 from tests/faulty_backends.py) on 2 cores under each scheduling policy: each
        backend's CPU seconds (read from /proc by the runner) against its fair share (cores x
        the time it was alive / backends alive)
    python benchmarks/runner_margins.py timeline ../shared/benchmarks/asplos-2025-iopddl-*.json.gz -t 10
        one `portfolio solve` per file: when it was loaded and presolved, its first verified plan,
        when every backend was searching (and the last to), when the run ended, its score
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import psutil

from common import REPO, best_known, run_part
from portfolio.evaluate import evaluate
from portfolio.io import load_problem




def run_once(cmd: list[str], env: dict) -> tuple[float, str, int]:
    """(seconds until the last stdout line, that line, exit code)."""
    t0 = time.time()
    popen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    last = [0.0, ""]

    def drain() -> None:
        for line in popen.stdout:
            if line.strip():
                last[0], last[1] = time.time() - t0, line.strip()

    reader = threading.Thread(target=drain)
    reader.start()
    code = popen.wait()
    reader.join()
    return last[0], last[1], code


def deadline_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["cold", "warm", "both"])
    ap.add_argument("--repeat", type=int, default=1, help="Runs per (instance, limit, mode).")
    ap.add_argument("folder", type=Path)
    ap.add_argument("-t", "--time-limits", type=float, nargs="+", default=[10.0])
    ap.add_argument("--only", default="", help="Comma-separated instance letters (default: all).")
    ap.add_argument("--command", choices=["iopddl", "solve"], default="iopddl")
    ap.add_argument("--json", type=Path, help="Also write the rows here.")
    args = ap.parse_args()
    files = sorted(args.folder.glob("asplos-2025-iopddl-*.json.gz"))
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if f.name.split("-")[-1].split(".")[0] in wanted]
    bin_dir = Path(sys.executable).parent
    known = best_known()
    rows = []
    print("| instance | T s | mode | answer at s | margin s | exit | cost | forbidden | score | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    modes = ["cold", "warm"] if args.mode == "both" else [args.mode]
    plan = [(limit, path, mode) for limit in args.time_limits for path in files
            for _ in range(args.repeat) for mode in modes]
    for limit, path, mode in plan:
            env = dict(os.environ)
            tmp = None
            if mode == "cold":
                tmp = tempfile.mkdtemp(prefix="numba-cold-")
                env["NUMBA_CACHE_DIR"] = tmp
            if args.command == "iopddl":
                cmd = [str(bin_dir / "iopddl"), str(path), f"{limit:g}"]
            else:
                cmd = [str(bin_dir / "portfolio"), "solve", str(path), "-t", f"{limit:g}", "-q"]
            load = os.getloadavg()[0]
            at, line, code = run_once(cmd, env)
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
            problem = load_problem(path)
            cost = forb = score = None
            try:
                plan = json.loads(line)
                if plan:
                    ev = evaluate(problem, plan)
                    cost = ev.cost if ev.feasible else None
                    forb = ev.forbidden_node_choices + ev.forbidden_edge_entries
                    ref = known.get(problem.name) or known.get(path.name.split(".")[0])
                    score = None if not ref or not cost else ref / cost
            except (ValueError, TypeError):
                pass
            row = {"instance": problem.name, "limit": limit, "mode": mode, "answer_at": round(at, 3),
                   "margin": round(limit - at, 3), "exit": code, "cost": cost, "forbidden": forb,
                   "score": None if score is None else float(f"{score:.4g}"), "load": round(load, 2)}
            rows.append(row)
            print(f"| {row['instance'][-1]} | {limit:g} | {mode} | {row['answer_at']:.2f} | "
                  f"{row['margin']:+.2f} | {code} | {cost if cost is None else f'{cost:.4g}'} | {forb} | "
                  f"{row['score']} | {row['load']} |", flush=True)
    margins = [r["margin"] for r in rows]
    print(f"\nworst margin {min(margins):+.2f} s over {len(rows)} runs; "
          f"{sum(1 for r in rows if r['forbidden'] == 0)} of {len(rows)} answers free of forbidden choices")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def sample_tree(proc: psutil.Process) -> tuple[int, int, int]:
    """(sum RSS, sum PSS, process count) over a process and its descendants."""
    rss = pss = count = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            info = p.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
        count += 1
    return rss, pss, count


def resources_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("-t", "--time-limit", type=float, default=20.0)
    ap.add_argument("--backends", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    exe = shutil.which("portfolio") or str(Path(sys.executable).with_name("portfolio"))
    cmd = [exe, "solve", args.problem, "-t", str(args.time_limit), "-q", "--workers", str(args.workers)]
    if args.backends:
        cmd += ["--backends", args.backends]
    print("| run | exit | answer printed s | margin s | process exit s | peak RSS sum MB | "
          "peak PSS sum MB | max processes |")
    print("|---|---|---|---|---|---|---|---|")
    for r in range(args.repeat):
        t0 = time.time()
        popen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        proc = psutil.Process(popen.pid)
        answer_at: list[float] = []

        def drain() -> None:  # read stdout continuously (a full pipe would block the command)
            for _ in iter(lambda: popen.stdout.read(65536), b""):
                answer_at.append(time.time() - t0)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        peak_rss = peak_pss = peak_n = 0
        while popen.poll() is None:
            rss, pss, n = sample_tree(proc)
            peak_rss, peak_pss, peak_n = max(peak_rss, rss), max(peak_pss, pss), max(peak_n, n)
            time.sleep(0.05)
        wall = time.time() - t0
        reader.join()
        answered = answer_at[-1] if answer_at else float("nan")
        print(f"| {r + 1} | {popen.returncode} | {answered:.2f} | {args.time_limit - answered:.2f} | "
              f"{wall:.2f} | "
              f"{peak_rss / 2**20:.0f} | {peak_pss / 2**20:.0f} | {peak_n} |")


POLICIES = ("share", "pin", "slices")


def solve(path: Path, limit: float, backends: Optional[str], policy: str, workers: int,
          extra_env: dict, seed: int = 0, flags: tuple = ()) -> dict:
    exe = Path(sys.executable).with_name("portfolio")
    cmd = [str(exe), "solve", str(path), "-t", f"{limit:g}", "-q", "--json", "--workers", str(workers),
           "--schedule", policy, "--seed", str(seed), *flags]
    if backends and backends != "all":
        cmd += ["--backends", backends]
    env = dict(os.environ, **extra_env)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"problem": path.name.split(".")[0], "cost": None, "error": tail[:200]}


def cpu(args: argparse.Namespace) -> None:
    env = {"PYTHONPATH": str(REPO / "tests"), "PORTFOLIO_PLUGINS": "faulty_backends"}
    backends = "localsearch,greedy,minusage,spin,spin-2"
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| rule | backend | alive s | CPU s | fair share s | CPU / fair | relative to the run |")
    print("|---|---|---|---|---|---|---|")
    for policy in args.policies:
        doc = solve(Path(args.target), args.time_limit, backends, policy, 2, env)
        rows = [b for b in doc["backends"] if b["started"] is not None]
        # fair share: over the run, the cores split equally among the workers alive at each instant
        events = sorted({b["started"] for b in rows} | {b["finished"] for b in rows})
        fair = {b["backend"]: 0.0 for b in rows}
        for lo, hi in zip(events, events[1:]):
            alive = [b for b in rows if b["started"] <= lo and b["finished"] >= hi]
            for b in alive:
                fair[b["backend"]] += (hi - lo) * min(1.0, 2 / len(alive))
        # on a shared machine the run as a whole gets less than 2 cores: compare with what it got
        overall = sum(b["cpu_seconds"] or 0.0 for b in rows) / max(sum(fair.values()), 1e-9)
        for b in rows:
            f = fair[b["backend"]]
            c = b["cpu_seconds"] or 0.0
            ratio = c / f if f else float("nan")
            print(f"| {policy} | {b['backend']} | {b['finished'] - b['started']:.2f} | {c:.2f} | "
                  f"{f:.2f} | {ratio:.2f} | {ratio / overall:.2f} |", flush=True)


def cpu_main() -> None:
    ap = argparse.ArgumentParser(description="CPU shares under each scheduling policy")
    ap.add_argument("target", help="an instance")
    ap.add_argument("-t", "--time-limit", type=float, default=20.0)
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    cpu(ap.parse_args())


def timeline_main() -> None:
    """When one `portfolio solve FILE -t T` run does what: loaded, presolved, each backend started,
    set up, searching and its first plan, the run's end and its score (the first-second figures of
    docs/benchmarks/short-budgets.md)."""
    parser = argparse.ArgumentParser(description=timeline_main.__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("-t", "--time-limit", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    known = best_known()
    exe = Path(sys.executable).with_name("portfolio")
    print("| instance | run | loaded s | presolved s | first plan s | every backend searching s "
          "| last to search | copies searching s | ended s | wall s | score |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for path in args.files:
        for rep in range(args.repeat):
            t0 = time.monotonic()
            out = subprocess.run([str(exe), "solve", str(path), "-t", f"{args.time_limit:g}",
                                  "--json", "-q"], capture_output=True, text=True)
            wall = time.monotonic() - t0
            doc = json.loads(out.stdout)
            pre = doc.get("presolve") or {}
            presolved = (None if pre.get("seconds") is None or "error" in pre
                         else doc["load_seconds"] + pre["seconds"])
            firsts = [b["incumbents"][0]["time"] for b in doc["backends"] if b["incumbents"]]
            searching = {b["backend"]: b.get("searching") for b in doc["backends"]
                         if b["status"] not in ("pending", "unsupported")}
            # a copy (``NAME+1``) starts when a core frees later in the run: not a late start
            late = max(((k, v) for k, v in searching.items() if "+" not in k),
                       key=lambda kv: kv[1] if kv[1] is not None else 1e9, default=(None, None))
            copies = [v for k, v in searching.items() if "+" in k and v is not None]
            name = path.name.removesuffix(".gz").removesuffix(".json")
            score = (known[name] / doc["cost"]) if doc.get("cost") and name in known else None
            print(f"| {name.split('-')[-1]} | {rep} | {doc['load_seconds']:.2f} | "
                  f"{'-' if presolved is None else f'{presolved:.2f}'} | "
                  f"{min(firsts) if firsts else '-'} | "
                  f"{'-' if late[1] is None else f'{late[1]:.2f}'} | {late[0]} | "
                  f"{max(copies) if copies else '-'} | {doc['elapsed']:.2f} | {wall:.2f} | "
                  f"{'-' if score is None else f'{score:.4f}'} |", flush=True)


MODES = {"deadline": (deadline_main, False), "resources": (resources_main, False),
         "cpu": (cpu_main, False), "timeline": (timeline_main, False)}
"""Each part's command: ``python benchmarks/runner_margins.py PART [its own options]``."""


def main() -> None:
    run_part(MODES, __doc__)


if __name__ == "__main__":
    main()
