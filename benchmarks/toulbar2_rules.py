"""The ``toulbar2`` backend's weight rules side by side (issue 21), with other backends alone.

Runs ``portfolio solve FILE -b BACKEND -t SECONDS --seed S --json`` as a user would (a fresh
process each time, the runner giving the idle core the backend's second seed), for every
instance, seed and variant, **alternated** (seed-major: every variant of seed 0, then of seed 1,
...), so a drift of the machine spreads over all variants. A variant is a backend name (several: ``a/b/c``) or
``toulbar2:RULE[:start|:nostart][:limitS]`` (the rule set through ``PORTFOLIO_TOULBAR2_RULE``, ``start``/``nostart``
turn following the incumbent on/off, ``limitS`` makes the first solve ``S`` seconds). Each run's JSON goes to
``runs/<name>/<instance>-<variant>-s<seed>.json``; the script prints one markdown table with the
score (best known / cost) per seed and the median.

    python benchmarks/toulbar2_rules.py [--instances N,S] [--seconds 60] [--seeds 0,1,2]
        [--variants toulbar2:prices,toulbar2:nodes,toulbar2:global,localsearch,cpsat]
        [--name tb2-rules]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends import best_known, run_json  # noqa: E402


def run_one(path: Path, variant: str, seconds: float, seed: int, out: Path) -> dict:
    backend, *options = variant.split(":")
    backend = backend.replace("/", ",")   # several backends: a/b/c
    env = dict(os.environ)
    for option in options:
        if option in ("start", "nostart"):
            env["PORTFOLIO_TOULBAR2_START"] = "1" if option == "start" else "0"
        elif option.startswith("limit"):
            env["PORTFOLIO_TOULBAR2_LIMIT"] = option[len("limit"):]
        elif option:
            env["PORTFOLIO_TOULBAR2_RULE"] = option
    cmd = [sys.executable, "-m", "portfolio", "solve", str(path), "-b", backend, "-t", str(seconds),
           "--seed", str(seed), "--json", "-q"]
    data = run_json(cmd, env)
    data["variant"] = variant
    out.write_text(json.dumps(data, indent=1))
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", default="N,S")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants",
                    default="toulbar2:prices,toulbar2:nodes,toulbar2:global,localsearch,cpsat")
    ap.add_argument("--name", default="tb2-rules")
    args = ap.parse_args()
    best = best_known()
    out_dir = REPO / "runs" / args.name
    out_dir.mkdir(parents=True, exist_ok=True)
    instances = args.instances.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = args.variants.split(",")
    scores: dict[tuple[str, str], list] = {}
    for seed in seeds:
        for inst in instances:
            name = f"asplos-2025-iopddl-{inst}"
            path = SHARED / "benchmarks" / f"{name}.json.gz"
            for variant in variants:
                target = out_dir / f"{inst}-{variant.replace(':', '_').replace('/', '+')}-s{seed}.json"
                data = run_one(path, variant, args.seconds, seed, target)
                cost = data.get("cost")
                score = best[name] / cost if cost and name in best else None
                scores.setdefault((inst, variant), []).append(score)
                shown = "-" if score is None else f"{score:.4f}"
                print(f"# {time.strftime('%H:%M:%S')} {inst} {variant} seed {seed}: {shown} "
                      f"(wall {data['wall_s']} s)", flush=True)
    print(f"\n| instance | variant | {' | '.join(f'seed {s}' for s in seeds)} | median |")
    print("|---|---|" + "---:|" * (len(seeds) + 1))
    for (inst, variant), vals in scores.items():
        cells = ["-" if v is None else f"{v:.3f}" for v in vals]
        ok = [v for v in vals if v is not None]
        med = f"{statistics.median(ok):.3f}" if ok else "-"
        print(f"| {inst} | {variant} | {' | '.join(cells)} | **{med}** |")


if __name__ == "__main__":
    main()
