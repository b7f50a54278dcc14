"""Loading, evaluating and converting instances: what a problem file costs before any solving.
Figures: docs/benchmarks/core.md (load, evaluate, scaling), docs/benchmarks/adapters.md
(conversion) and docs/selection.md (a selector's cost, "What it costs").

    python benchmarks/loading.py core [--bench ../shared/benchmarks] [NAMES...]
        each shared instance in a fresh Python process (so the peak RSS is that of a user running
        ``portfolio info`` on it, interpreter, numpy and numba included): loading from the gzip file
        to a validated Problem, derived structures, the median of 20 exact evaluations of the
        min-usage plan
    python benchmarks/loading.py scaling --sizes 10000 30000 100000 300000 [--big] [--out FILE]
        synthetic contest-shaped instances (portfolio.generate), written as JSON to a temporary
        folder, then loaded and evaluated in a fresh process; --big adds a contest-W/Y-sized file
        (~1.3 GB of JSON), which must load in well under a minute and 12 GB
    python benchmarks/loading.py convert [--instances A,B,G,K,M,N,S] [--text]
        contest JSON to XLA's binary request and back (checked identical), and with --text to a
        text request, each step in a fresh process: wall time and peak memory, as `portfolio
        convert` does it
    python benchmarks/loading.py selection SELECTOR.json [N] [--repeat 9]
        what a selector adds before the backends start (issue 50's limit: 0.1 s on the largest
        shared graph), on one loaded instance (a letter or a file; default N): reading the
        selector file, the cheap features, the candidates' models, choosing the schedule's
        backends and options again; the median and largest of each, CPU and wall, and the load
        average

Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import BENCH, REPO, existing, instance_path, run_part



_CORE_CHILD = r"""
import json, resource, statistics, sys, time
t = time.perf_counter()
import numpy, numba
import portfolio.io, portfolio.evaluate, portfolio.jsonscan
imports = time.perf_counter() - t
from portfolio.io import load_problem
from portfolio.evaluate import evaluate
t = time.perf_counter()
p = load_problem(sys.argv[1])
load = time.perf_counter() - t
rss_after_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
p.time_points; p.interval_point_range; p.incidence_offsets; p.adjacency_offsets
derived = time.perf_counter() - t
plan = p.min_usage_strategies
evaluate(p, plan)
times = []
for _ in range(20):
    t = time.perf_counter(); evaluate(p, plan); times.append(time.perf_counter() - t)
print(json.dumps({"nodes": p.num_nodes, "edges": p.num_edges, "imports": imports, "load": load,
                  "rss_load_mb": rss_after_load, "derived": derived,
                  "eval_ms": 1000 * statistics.median(times)}))
"""


def core_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list("ABGKMNS"))
    ap.add_argument("--bench", type=Path, default=BENCH)
    args = ap.parse_args()
    print("| instance | nodes | edges | imports s | load s | peak RSS after load MB | "
          "derived structures s | evaluate ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, path in existing(args.bench, args.names):
        out = subprocess.run([sys.executable, "-c", _CORE_CHILD, str(path)], capture_output=True,
                             text=True, check=True, cwd=REPO)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['nodes']:,} | {r['edges']:,} | {r['imports']:.2f} | {r['load']:.2f} | "
              f"{r['rss_load_mb']:.0f} | {r['derived']:.2f} | {r['eval_ms']:.1f} |")



# Generation and writing run in a child too: a parent that had held a big instance would pass its
# RSS high-water mark on to every process it starts (Linux keeps ru_maxrss across fork and exec),
# and the loader child would then report the generator's peak instead of its own.
_GENERATE = r"""
import json, sys, time
from portfolio.generate import generate_problem
from portfolio.io import write_problem

nodes, strategies, seed, edges_per_node, path = sys.argv[1:]
t = time.perf_counter()
problem = generate_problem(int(nodes), int(strategies), int(seed),
                           edges_per_node=float(edges_per_node))
gen_s = time.perf_counter() - t
t = time.perf_counter()
write_problem(problem, path)
print(json.dumps({"gen_s": gen_s, "write_s": time.perf_counter() - t, "nodes": problem.num_nodes,
                  "edges": problem.num_edges, "strategies": len(problem.node_costs),
                  "entries": len(problem.edge_costs)}))
"""

# Runs in a fresh child: imports, then load, then evaluate the min-usage plan; one JSON line out.
# ru_maxrss is in KiB on Linux and is the process's peak, so read right after loading it is the
# loader's peak (interpreter and imports included; the baseline is reported separately).
_LOAD = r"""
import json, resource, statistics, sys, time
import portfolio.io as pio
from portfolio.io import load_problem
from portfolio.evaluate import evaluate

pio = getattr(pio, "read", pio)  # the readers' module (portfolio/io/read.py; an older tree's io.py)
careful = getattr(pio, "_parse_careful", None)
fell_back = []
def spy(*args):  # records whether the loader fell back to json.loads
    fell_back.append(True)
    return careful(*args)
if careful is not None:
    pio._parse_careful = spy

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def hwm_mb():  # the same peak from the kernel's per-process counter, as a cross-check
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return float("nan")

base_mb = peak_mb()
t = time.perf_counter()
problem = load_problem(sys.argv[1])
load_s = time.perf_counter() - t
load_peak_mb, load_hwm_mb = peak_mb(), hwm_mb()
plan = problem.min_usage_strategies
times = []
for _ in range(5):
    t = time.perf_counter()
    result = evaluate(problem, plan)
    times.append(time.perf_counter() - t)
assert result.feasible and not result.has_forbidden, result
print(json.dumps({"load_s": load_s, "base_mb": base_mb, "peak_mb": load_peak_mb,
                  "eval_ms": 1000 * statistics.median(times), "hwm_mb": load_hwm_mb,
                  "parser": "?" if careful is None else "json.loads" if fell_back else "scanner"}))
"""

BIG = {"nodes": 60_000, "strategies": 36, "edges_per_node": 1.8}
"""~1.3 GB of JSON with W/Y's node and edge counts. Our strategy counts are less heavy-tailed than
the contest's, so matching the bytes takes a higher average (and more numbers than W/Y: harder)."""


@dataclass
class Row:
    nodes: int
    edges: int
    strategies: int
    entries: int
    file_mb: float
    gen_s: float
    write_s: float
    load_s: float
    base_mb: float
    peak_mb: float
    eval_ms: float
    parser: str


def run_child(code: str, *args: object) -> dict:
    """Run ``code`` in a fresh interpreter on the tree; the JSON object it prints last."""
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
    )
    if done.returncode != 0:
        raise RuntimeError(f"child failed ({args}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(nodes: int, strategies: int, workdir: Path, seed: int = 0,
            edges_per_node: float = 1.5) -> Row:
    """Generate and write in one child, load and evaluate in another, delete the file."""
    path = workdir / f"scaling-{nodes}-{strategies}.json"
    try:
        made = run_child(_GENERATE, nodes, strategies, seed, edges_per_node, path)
        file_mb = path.stat().st_size / 1e6
        used = run_child(_LOAD, path)
    finally:
        path.unlink(missing_ok=True)
    if abs(used["peak_mb"] - used["hwm_mb"]) > 0.1 * used["hwm_mb"]:
        print(f"warning: ru_maxrss {used['peak_mb']:.0f} MB disagrees with VmHWM "
              f"{used['hwm_mb']:.0f} MB", file=sys.stderr)
    return Row(made["nodes"], made["edges"], made["strategies"], made["entries"], file_mb=file_mb,
               gen_s=made["gen_s"], write_s=made["write_s"], load_s=used["load_s"],
               base_mb=used["base_mb"], peak_mb=used["peak_mb"], eval_ms=used["eval_ms"],
               parser=used["parser"])


def markdown(rows: list[Row]) -> str:
    head = ("| nodes | edges | total strategies | edge-table entries | file MB | load s | peak RSS MB "
            "| evaluate ms | import RSS MB | generate s | write s | parser |")
    lines = [head, "|" + "---:|" * (head.count("|") - 2) + "---|"]
    for r in rows:
        lines.append(
            f"| {r.nodes:,} | {r.edges:,} | {r.strategies:,} | {r.entries:,} | {r.file_mb:,.1f} "
            f"| {r.load_s:.2f} | {r.peak_mb:,.0f} | {r.eval_ms:.1f} | {r.base_mb:,.0f} "
            f"| {r.gen_s:.1f} | {r.write_s:.1f} | {r.parser} |"
        )
    return "\n".join(lines)


def scaling_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 30_000, 100_000, 300_000],
                        help="node counts to measure")
    parser.add_argument("--strategies", type=int, default=8, help="average strategies per node")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--big", action="store_true",
                        help=f"also measure a ~1.3 GB instance ({BIG['nodes']:,} nodes, "
                             f"{BIG['strategies']} strategies)")
    parser.add_argument("--out", type=Path, help="also write the markdown table here")
    parser.add_argument("--tmp", type=Path, default=Path("/tmp"), help="where temporary files go")
    return parser.parse_args(argv)


def scaling_main(argv: list[str] | None = None) -> int:
    args = scaling_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="iopddl-scaling-", dir=args.tmp))
    rows: list[Row] = []
    try:
        jobs = [(n, args.strategies, 1.5) for n in args.sizes]
        if args.big:
            jobs.append((BIG["nodes"], BIG["strategies"], BIG["edges_per_node"]))
        for nodes, strategies, epn in jobs:
            rows.append(measure(nodes, strategies, workdir, args.seed, epn))
            print(f"measured {nodes:,} nodes: load {rows[-1].load_s:.2f} s, "
                  f"peak {rows[-1].peak_mb:,.0f} MB", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table = markdown(rows)
    print(table)
    print(f"\n({_cpu_count()} cores; parser = the loader path taken: fast scanner or json.loads)")
    if args.out:
        args.out.write_text(table + "\n")
    return 0


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1



_CONVERT_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from portfolio.adapters.formats import read_any, save_any
src, dst, check = sys.argv[1:4]
conv = read_any(src)
t1 = time.perf_counter()
save_any(conv.problem, dst)
t2 = time.perf_counter()
same = None
if check:
    import numpy as np
    from portfolio.io import load_problem
    a, b = load_problem(check), load_problem(dst)
    same = all(np.array_equal(getattr(a, k), getattr(b, k)) for k in (
        "strategy_offsets", "node_costs", "interval_start", "interval_end", "interval_usages",
        "edge_nodes", "edge_costs")) and a.usage_limit == b.usage_limit
print(json.dumps({"read": t1 - t0, "write": t2 - t1, "total": t2 - t0, "same": same,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def convert_step(src: Path, dst: Path, check: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", _CONVERT_CHILD, str(src), str(dst), str(check or "")],
                         capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    row["bytes"] = dst.stat().st_size
    return row


def convert_main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", default="A,B,G,K,M,N,S")
    parser.add_argument("--text", action="store_true", help="also write text requests (slow)")
    args = parser.parse_args()
    print("| instance | step | total s (read + write) | peak RSS MB | output MB | identical |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.instances.split(","):
            src = instance_path(name)
            if not src.is_file():
                print(f"| {name} | missing: {src} | | | | |")
                continue
            pb, back, txt = (Path(tmp) / f"{name}{ext}" for ext in (".pb", ".json.gz", ".txtpb"))
            steps = [("json.gz -> pb", src, pb, None), ("pb -> json.gz", pb, back, src)]
            if args.text:
                steps.append(("json.gz -> txtpb", src, txt, None))
            for label, a, b, check in steps:
                r = convert_step(a, b, check)
                same = "" if r["same"] is None else ("yes" if r["same"] else "**NO**")
                print(f"| {name} | {label} | {r['total']:.2f} ({r['read']:.2f} + {r['write']:.2f}) | "
                      f"{r['rss_mb']:.0f} | {r['bytes'] / 2**20:.1f} | {same} |", flush=True)


def _selection_rows(selector_path: str, problem_path: str, repeat: int) -> list[dict]:
    from portfolio.api.selecting import UserChoice, open_selector, select_run
    from portfolio.api.solving import choose
    from portfolio.io import load_problem
    from portfolio.options import RunOptions

    problem = load_problem(problem_path)
    options = RunOptions(60.0)
    picked = choose(None, 60.0)
    rows = []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        selector = open_selector(selector_path)
        c1, w1 = time.process_time(), time.perf_counter()
        _, _, record = select_run(selector, problem, picked, options, user=UserChoice(),
                                  warn=lambda line: None, choose=choose)
        c2, w2 = time.process_time(), time.perf_counter()
        rows.append({"file (CPU)": c1 - c0, "file (wall)": w1 - w0,
                     "selection (CPU)": c2 - c1, "selection (wall)": w2 - w1,
                     "features (wall)": record["features_seconds"],
                     "models (wall)": record["model_seconds"],
                     "choice again (wall)": (w2 - w1) - record["features_seconds"]
                     - record["model_seconds"]})
    print(f"{len(selector.candidates)} candidates; chose {record['schedule']['name']} "
          f"(applied: {record['applied']})\n")
    return rows


def selection_main() -> None:
    import statistics

    parser = argparse.ArgumentParser(description="what a selector adds to a run")
    parser.add_argument("selector")
    parser.add_argument("instance", nargs="?", default="N")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    path = args.instance if Path(args.instance).is_file() else str(instance_path(args.instance))
    before = os.getloadavg()[0]
    rows = _selection_rows(args.selector, path, args.repeat)
    print("| part | median ms | largest ms |\n|---|---:|---:|")
    for key in rows[0]:
        values = [1000 * r[key] for r in rows]
        print(f"| {key} | {statistics.median(values):.2f} | {max(values):.2f} |")
    print(f"\nload average {before:.1f} -> {os.getloadavg()[0]:.1f} (2 cores shared)")


MODES = {"core": (core_main, False), "scaling": (scaling_main, False), "convert": (convert_main, False),
         "selection": (selection_main, False)}
"""Each part's command: ``python benchmarks/loading.py PART [its own options]``."""


def main() -> None:
    run_part(MODES, __doc__)


if __name__ == "__main__":
    main()
