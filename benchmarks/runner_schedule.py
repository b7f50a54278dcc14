"""Core-sharing rules of the runner, measured: CPU shares from /proc and portfolio scores.

    # (a) the CPU-demand rule: default portfolio vs the old trio vs the default without the rule,
    #     60 s, the seven shared instances, interleaved (the lead's one command, on a quiet machine)
    python benchmarks/runner_schedule.py score -t 60
    # (b) the scheduling policies, each with the default portfolio
    python benchmarks/runner_schedule.py score -t 60 --configs portfolio --policies share,pin,slices
    # smaller: two instances, 20 s, two seeds; raw rows kept
    python benchmarks/runner_schedule.py score -t 20 --instances B,S --seeds 0,1 --out /tmp/rows.jsonl
    # CPU shares of backends under each policy
    python benchmarks/runner_schedule.py cpu ../shared/benchmarks/asplos-2025-iopddl-A.json.gz -t 20

``score`` runs ``portfolio solve`` once per (seed, instance, configuration, policy), in that nesting,
so that the configurations compared on one instance run back to back (interleaved: a change of
machine load hits all of them alike), and prints a markdown table of scores (best known / cost, from
``../shared/reference/best_known.csv``) per instance with the mean over seeds, and the mean over
instances. Configurations: ``portfolio`` (every available backend, the CPU-demand rule on),
``trio`` (``--backends minusage,greedy,localsearch``), ``no-rule`` (every backend,
``--ignore-demand``), or any ``name=backend,backend`` of your own. The load average is printed with
each row (the machine may be shared).

``cpu`` runs ``localsearch,greedy,minusage`` plus two copies of the test suite's CPU-burning fake
backend (``spin``, ``spin-2`` from tests/faulty_backends.py) on 2 cores under each rule and prints
each backend's CPU seconds (the runner reads them from /proc) against its fair share
(cores x wall time it was alive / backends alive).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Optional

from runner_deadline import best_known

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"
POLICIES = ("share", "pin", "slices")
INSTANCES = "A,B,G,K,M,N,S"
CONFIGS = {
    "portfolio": (None, []),                                  # every available backend, the rule on
    "trio": ("minusage,greedy,localsearch", []),
    "no-rule": (None, ["--ignore-demand"]),
}


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
    env = {"PYTHONPATH": str(ROOT / "tests"), "PORTFOLIO_PLUGINS": "faulty_backends"}
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


def parse_configs(text: str) -> dict[str, tuple[Optional[str], list[str]]]:
    """``portfolio,trio`` or ``mine=localsearch,cpsat;trio``: named configurations."""
    out: dict[str, tuple[Optional[str], list[str]]] = {}
    for item in text.split(";") if "=" in text else text.split(","):
        name, _, backends = item.partition("=")
        if backends:
            out[name] = (backends, [])
        elif name in CONFIGS:
            out[name] = CONFIGS[name]
        else:
            sys.exit(f"--configs: unknown configuration {name!r} (known: {', '.join(CONFIGS)}, "
                     f"or name=backend,backend)")
    return out


def instance_paths(folder: Path, names: str) -> list[Path]:
    paths = []
    for name in names.split(","):
        path = folder / f"asplos-2025-iopddl-{name}.json.gz"
        if not path.exists():
            sys.exit(f"--instances: {path} not found")
        paths.append(path)
    return paths


def score(args: argparse.Namespace) -> None:
    known = best_known()
    paths = instance_paths(Path(args.benchmarks), args.instances)
    configs = parse_configs(args.configs)
    policies = args.policies.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = [(c, p) for c in configs for p in policies]
    label = {v: v[0] if len(policies) == 1 else f"{v[0]}/{v[1]}" for v in variants}
    scores: dict[tuple, dict[str, list[float]]] = {v: {} for v in variants}
    out = open(args.out, "a") if args.out else None
    print(f"# {len(paths)} instances x {len(seeds)} seeds x {len(variants)} variants, "
          f"{args.time_limit:g} s each; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    print("| seed | instance | variant | cost | score | stopped early | load |\n|---|---|---|---|---|---|---|",
          flush=True)
    for seed in seeds:
        for path in paths:
            for variant in variants:
                backends, flags = configs[variant[0]]
                doc = solve(path, args.time_limit, backends, variant[1], args.workers, {}, seed,
                            tuple(flags))
                ref = known.get(doc.get("problem", ""))
                cost = doc.get("cost")
                value = ref / cost if ref and cost else 0.0
                inst = path.name.split("-")[-1].split(".")[0]
                scores[variant].setdefault(inst, []).append(value)
                load = os.getloadavg()[0]
                print(f"| {seed} | {inst} | {label[variant]} | {cost if cost is not None else '-'} | "
                      f"{value:.4f} | {doc.get('stopped_early') or doc.get('error') or '-'} | "
                      f"{load:.1f} |", flush=True)
                if out:
                    out.write(json.dumps({"seed": seed, "instance": inst, "config": variant[0],
                                          "policy": variant[1], "score": value, "load": load,
                                          "result": {k: doc.get(k) for k in (
                                              "cost", "elapsed", "winner", "stopped_early", "gap",
                                              "lower_bound", "error", "backends")}}) + "\n")
                    out.flush()
    insts = list(scores[variants[0]])
    print(f"\nmean score over {len(seeds)} seed(s); load average at the end {os.getloadavg()[0]:.2f}")
    print("| variant | " + " | ".join(insts) + " | mean |")
    print("|---|" + "---|" * (len(insts) + 1))
    for variant in variants:
        means = [statistics.mean(scores[variant][i]) for i in insts]
        print(f"| {label[variant]} | " + " | ".join(f"{m:.4f}" for m in means) +
              f" | {statistics.mean(means):.4f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cpu", help="CPU shares under each policy")
    c.add_argument("target", help="an instance")
    c.add_argument("-t", "--time-limit", type=float, default=20.0)
    c.add_argument("--policies", nargs="+", default=list(POLICIES))
    s = sub.add_parser("score", help="portfolio scores per configuration and policy")
    s.add_argument("-t", "--time-limit", type=float, default=60.0)
    s.add_argument("--benchmarks", default=str(SHARED), help="folder of the shared instances")
    s.add_argument("--instances", default=INSTANCES, help=f"letters, comma-separated (default {INSTANCES})")
    s.add_argument("--seeds", default="0", help="comma-separated (default 0)")
    s.add_argument("--configs", default="portfolio,trio,no-rule",
                   help="comma-separated names (portfolio, trio, no-rule), or name=backends;name=...")
    s.add_argument("--policies", default="share", help="comma-separated: share, pin, slices")
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--out", help="append one JSON line per run here")
    args = ap.parse_args()
    cpu(args) if args.what == "cpu" else score(args)


if __name__ == "__main__":
    main()
