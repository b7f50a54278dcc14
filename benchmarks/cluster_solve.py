"""One solve across a Dask cluster (issue 22): the cluster's own costs, which no bench row shows:
how the problem reaches the shards and how fast an incumbent reaches the other shards.
Figures: docs/benchmarks/distributed.md. (The cluster's plan quality against the plain local run
was this script's `compare` part, an alternated sweep; its rows are bench rows in
runs/curated/distributed/compare-round*. A cluster solve is a run option of `portfolio solve`,
not a configuration `portfolio bench` can sweep yet.)

Every run is ``portfolio solve FILE -t SECONDS --seed S --json -q`` in a fresh process, as a user
would type it; the wall time is measured from before the process starts to its exit.

- ``transfer``: ``--dask-problem path`` against ``scatter`` on one instance (default A, the
  largest): seconds until the shards were submitted, until each had loaded its problem, and the
  bytes scattered.
- ``sharing``: a simulated larger cluster, ``--dask-workers W`` on this machine (one thread each,
  so W > cores oversubscribes): the seconds from a shard sending the plan that became the
  incumbent to every other shard's process having it (``cluster.sharing_latency_s``), plan sizes,
  messages and publishes per second.

    python benchmarks/cluster_solve.py transfer [--instances A] [--seconds 30] [--seeds 0,1,2]
    python benchmarks/cluster_solve.py sharing [--instances N] [--seconds 30] [--workers 4,6]

Each run's JSON goes to ``runs/<name>/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import REPO, instance_path, run_json


def solve(path: Path, seconds: float, seed: int, extra: list[str], out: Path) -> dict:
    cmd = [sys.executable, "-m", "portfolio", "solve", str(path), "-t", str(seconds),
           "--seed", str(seed), "--json", "-q", *extra]
    data = run_json(cmd)
    data["command"] = cmd[3:]
    out.write_text(json.dumps(data, indent=1))
    return data


def instance(name: str) -> tuple[str, Path]:
    return f"asplos-2025-iopddl-{name}", instance_path(name)


def startup(data: dict) -> dict:
    """Seconds from the command's start: shards submitted, first and last shard loaded."""
    cluster = data.get("cluster") or {}
    ready = [r["at"] for r in (cluster.get("ready") or {}).values()]
    submitted = (cluster.get("timings") or {}).get("submitted")
    load = data.get("load_seconds") or 0.0
    return {"submitted": None if submitted is None else round(submitted, 2),
            "first_ready": min(ready) if ready else None, "last_ready": max(ready) if ready else None,
            "driver_load": round(load, 2)}


def transfer(args: argparse.Namespace, out_dir: Path) -> None:
    print("| instance | mode | seed | shards submitted (s) | shards loaded (s) | shard load (s) | "
          "bytes scattered | wall (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for k, seed in enumerate(args.seeds):
        for inst in args.instances:
            _, path = instance(inst)
            modes = ["path", "scatter"] if k % 2 == 0 else ["scatter", "path"]
            for mode in modes:
                data = solve(path, args.seconds, seed, ["--dask-workers", "2", "--dask-problem", mode],
                             out_dir / f"{inst}-{mode}-s{seed}.json")
                cluster = data.get("cluster") or {}
                ready = cluster.get("ready") or {}
                loads = "/".join(f"{r['load_s']:.2f}" for r in ready.values())
                s = startup(data)
                print(f"| {inst} | {mode} | {seed} | {s['submitted']} | {s['last_ready']} | {loads} | "
                      f"{(cluster.get('traffic') or {}).get('scattered_bytes')} | {data['wall_s']} |",
                      flush=True)


def sharing(args: argparse.Namespace, out_dir: Path) -> None:
    print("| instance | workers | seed | sharing latency median / p90 / max (s) | receipts | "
          "driver latency median (s) | plan bytes per message | messages/s | publishes/s | wall (s) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for seed in args.seeds:
        for inst in args.instances:
            _, path = instance(inst)
            for workers in args.workers:
                data = solve(path, args.seconds, seed, ["--dask-workers", str(workers)],
                             out_dir / f"{inst}-w{workers}-s{seed}.json")
                cluster = data.get("cluster") or {}
                share = cluster.get("sharing_latency_s") or {}
                drv = cluster.get("plan_latency_s") or {}
                traffic = cluster.get("traffic") or {}
                plans = max(1, traffic.get("publishes", 0))
                span = max(1e-9, args.seconds - (startup(data)["first_ready"] or 0.0))
                print(f"| {inst} | {workers} | {seed} | {share.get('median')} / {share.get('p90')} / "
                      f"{share.get('max')} | {share.get('count')} | {drv.get('median')} | "
                      f"{traffic.get('plan_bytes_out', 0) // plans} | "
                      f"{traffic.get('messages_in', 0) / span:.1f} | "
                      f"{traffic.get('publishes', 0) / span:.1f} | {data['wall_s']} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["transfer", "sharing"])
    ap.add_argument("--instances", default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--workers", default="4,6")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    defaults = {"transfer": ("A", 30.0), "sharing": ("N", 30.0)}
    inst, secs = defaults[args.mode]
    args.instances = (args.instances or inst).split(",")
    args.seconds = args.seconds or secs
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.workers = [int(w) for w in args.workers.split(",")]
    out_dir = REPO / "runs" / (args.name or f"cluster-{args.mode}")
    out_dir.mkdir(parents=True, exist_ok=True)
    {"transfer": transfer, "sharing": sharing}[args.mode](args, out_dir)


if __name__ == "__main__":
    main()
