"""Variants of the default portfolio side by side, alternated (issue 33's A/B runs).

A variant is ``NAME`` or ``NAME=SPEC`` where SPEC is ``;``-separated items: ``repo:PATH`` (run the
code of that checkout, through its own ``.venv/bin/python`` when it has one), ``-b:LIST`` (backends
joined by ``+``; default: the default portfolio), or ``ENV=VALUE`` (an environment knob such as
``PORTFOLIO_TOULBAR2_RULE=nodes``). Each run is ``portfolio solve FILE -t LIMIT --seed S --json -q``
in a fresh process, as a user types it; every variant of one (instance, seed) runs before the next
seed (alternated), so a drift of the machine spreads over all variants. LIMIT is ``--seconds`` or,
with ``--contest``, each benchmark's contest limit (from the reference ``best_known.csv``).

Output: ``runs/<name>/<instance>-<variant>-s<seed>.json`` (rerunning skips finished runs) and a
markdown table: per instance, variant and seed the contest score (contest best known / cost), and
per variant the mean; then which backend sent the winning plan and the CPU seconds per backend.

    python benchmarks/variants.py --instances N,S --seeds 0,1,2 --seconds 60 \
        --variants 'base,par3=PORTFOLIO_TOULBAR2_PARALLEL=3' --name r33-par
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends import best_known, run_json  # noqa: E402


def contest_limits() -> dict[str, float]:
    path = SHARED / "reference" / "best_known.csv"
    with path.open() as fh:
        return {row["benchmark"]: float(row["timeout_s"]) for row in csv.DictReader(fh)}


def parse_variant(text: str) -> tuple[str, dict]:
    """``NAME=SPEC`` -> (name, {"repo", "backends", "env"})."""
    name, _, spec = text.partition("=")
    out: dict = {"repo": REPO, "backends": None, "env": {}}
    for item in filter(None, spec.split(";")):
        if item.startswith("repo:"):
            out["repo"] = Path(item[5:]).resolve()
        elif item.startswith("-b:"):
            out["backends"] = item[3:].replace("+", ",")
        elif "=" in item:
            key, _, value = item.partition("=")
            out["env"][key] = value
        else:
            raise SystemExit(f"variant {text!r}: item {item!r} is not repo:PATH, -b:LIST or ENV=VALUE")
    return name, out


def run_one(path: Path, spec: dict, limit: float, seed: int) -> dict:
    repo = spec["repo"]
    python = repo / ".venv" / "bin" / "python"
    env = dict(os.environ, **spec["env"])
    if not python.exists():
        python = Path(sys.executable)
        env["PYTHONPATH"] = str(repo)
    cmd = [str(python), "-m", "portfolio", "solve", str(path), "-t", f"{limit:g}", "--seed", str(seed),
           "--json", "-q"]
    if spec["backends"]:
        cmd += ["-b", spec["backends"]]
    return run_json(cmd, env, cwd=repo)


def summary_row(data: dict) -> dict:
    cpu: dict[str, float] = defaultdict(float)
    for run in data.get("backends") or []:
        if isinstance(run, dict) and run.get("cpu_seconds") is not None:
            cpu[str(run.get("name", run.get("backend", "?"))).split("+")[0]] += run["cpu_seconds"]
    return {"cost": data.get("cost") if data.get("feasible") else None, "winner": data.get("winner"),
            "bound": data.get("lower_bound"), "cpu": dict(cpu)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", default="N,S")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--contest", action="store_true", help="each benchmark's contest limit")
    ap.add_argument("--variants", required=True, help="comma-separated NAME[=SPEC]")
    ap.add_argument("--name", default="variants")
    args = ap.parse_args()
    variants = [parse_variant(v) for v in args.variants.split(",")]
    out = REPO / "runs" / args.name
    out.mkdir(parents=True, exist_ok=True)
    known, limits = best_known(), contest_limits()
    results: dict = defaultdict(dict)
    for letter in args.instances.split(","):
        bench = f"asplos-2025-iopddl-{letter}"
        path = SHARED / "benchmarks" / f"{bench}.json.gz"
        limit = limits[bench] if args.contest else args.seconds
        for seed in [int(s) for s in args.seeds.split(",")]:
            for name, spec in variants:
                target = out / f"{letter}-{name}-s{seed}.json"
                if target.exists():
                    data = json.loads(target.read_text())
                else:
                    data = run_one(path, spec, limit, seed)
                    data["variant"] = name
                    target.write_text(json.dumps(data, indent=1))
                row = summary_row(data)
                results[(letter, name)][seed] = row
                score = known[bench] / row["cost"] if row["cost"] else 0.0
                print(f"{letter} s{seed} {name:<12} score {score:.4f} winner {row['winner']} "
                      f"bound {row['bound']} cpu {row['cpu']}", flush=True)
    print("\n| instance | variant | " + " | ".join(f"seed {s}" for s in args.seeds.split(","))
          + " | mean |\n|---|---|" + "---:|" * (len(args.seeds.split(",")) + 1))
    for (letter, name), by_seed in results.items():
        bench = f"asplos-2025-iopddl-{letter}"
        scores = [known[bench] / r["cost"] if r["cost"] else 0.0 for _, r in sorted(by_seed.items())]
        print(f"| {letter} | {name} | " + " | ".join(f"{s:.4f}" for s in scores)
              + f" | {statistics.mean(scores):.4f} |")


if __name__ == "__main__":
    main()
