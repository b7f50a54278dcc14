"""Deterministic mode (issue 31): one plan per instance whatever the workers and the load, and its
quality against the timed mode.

Every run is ``portfolio solve FILE --deterministic [--work W] --json -q ...`` in a fresh process
started from a neutral directory, as a user would type it.

- ``repeat``: per instance, ``--runs`` runs with ``--workers 1`` and as many with ``--workers 2``;
  with ``--hog``, every other run has a CPU hog (a process spinning on the other core) beside it.
  Prints each run's plan hash, cost, wall and whether the answer was the deterministic one, and
  the number of distinct hashes per instance (the target: one).
- ``quality``: per instance and seed, a timed run (``-t SECONDS``) and a deterministic run
  (``--seed S``), alternated; prints the scores (best known / cost), the timed mode's mean, the
  deterministic cost's distance to it, and the walls.
- ``calibrate``: the wall time of deterministic runs at one work budget on each instance, to
  choose the default budget (about as long as a 60 s timed run on this machine kind).

    python benchmarks/determinism.py repeat [--instances A,K,N,S] [--runs 5] [--work W] [--hog]
    python benchmarks/determinism.py quality [--instances A,K,M,N,S] [--seeds 0,1,2] [--seconds 60]
    python benchmarks/determinism.py calibrate [--instances A,K,N,S] [--work W]

Rows go to ``runs/NAME/rows.jsonl`` (appending); rerunning the same NAME keeps the rows already
there and runs only the missing ones, so an interrupted benchmark resumes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends import best_known, run_json  # noqa: E402
from portfolio.testing import cpu_hog  # noqa: E402

NEUTRAL = tempfile.mkdtemp(prefix="determinism-")
"""Every run's working directory, so ``python -m portfolio`` imports the installed build."""


def path_of(name: str) -> Path:
    return SHARED / "benchmarks" / f"asplos-2025-iopddl-{name}.json.gz"


def solve(args: argparse.Namespace, name: str, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "portfolio", "solve", str(path_of(name)), "--json", "-q", *extra]
    doc = run_json(cmd, cwd=NEUTRAL)
    det = doc.get("deterministic") or {}
    return {"instance": name, "cost": doc.get("cost"), "plan_hash": doc.get("plan_hash"),
            "wall_s": doc.get("wall_s"), "complete": det.get("complete"),
            "reason": det.get("reason"), "points": det.get("points"), "winner": doc.get("winner"),
            "error": doc.get("error")}


def done_rows(out: Path) -> list[dict]:
    """Rows an interrupted run of the same name already saved (they are kept, not run again)."""
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def save(out: Path, row: dict) -> None:
    with out.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(json.dumps(row), file=sys.stderr, flush=True)


def work_args(args: argparse.Namespace) -> list[str]:
    return ["--deterministic"] + (["--work", str(args.work)] if args.work else [])


def repeat(args: argparse.Namespace, out: Path) -> None:
    rows = [r for r in done_rows(out) if r["instance"] in args.instances]
    seen = {(r["instance"], r["run"], r["workers"]) for r in rows}
    for name in args.instances:
        for k in range(args.runs):
            for workers in (1, 2):
                if (name, k, workers) in seen:
                    continue
                hog = args.hog and (k + workers) % 2 == 1
                with cpu_hog() if hog else nullcontext():
                    row = solve(args, name, work_args(args) + ["--seed", str(args.seed),
                                                               "--workers", str(workers)])
                row.update(run=k, workers=workers, hog=hog)
                save(out, row)
                rows.append(row)
    print("| instance | runs | distinct plan hashes | hash | cost | complete | wall s (1 worker) "
          "| wall s (2 workers) |")
    print("|---|---:|---:|---|---:|---|---|")
    for name in args.instances:
        mine = [r for r in rows if r["instance"] == name]
        hashes = sorted({r["plan_hash"] for r in mine})
        walls = {w: [r["wall_s"] for r in mine if r["workers"] == w] for w in (1, 2)}
        print(f"| {name} | {len(mine)} | {len(hashes)} | {', '.join(h or '-' for h in hashes)} | "
              f"{mine[0]['cost']:,} | {all(r['complete'] for r in mine)} | "
              f"{min(walls[1]):.1f}-{max(walls[1]):.1f} | {min(walls[2]):.1f}-{max(walls[2]):.1f} |")


def quality(args: argparse.Namespace, out: Path) -> None:
    best = best_known()
    rows = [r for r in done_rows(out) if r["instance"] in args.instances and r["seed"] in args.seeds]
    seen = {(r["instance"], r["variant"], r["seed"]) for r in rows}
    for k, seed in enumerate(args.seeds):
        for name in args.instances:
            variants = {"timed": ["-t", str(args.seconds), "--seed", str(seed)],
                        "deterministic": work_args(args) + ["--seed", str(seed)]}
            order = list(variants) if k % 2 == 0 else list(reversed(variants))
            for variant in order:
                if (name, variant, seed) in seen:
                    continue
                row = solve(args, name, variants[variant])
                row.update(variant=variant, seed=seed)
                save(out, row)
                rows.append(row)
    print("| instance | timed scores | timed mean | deterministic scores | det. mean | det. cost vs "
          "timed mean cost | walls timed / det. s |")
    print("|---|---|---:|---|---:|---:|---|")
    for name in args.instances:
        bk = best[f"asplos-2025-iopddl-{name}"]
        t = [r for r in rows if r["instance"] == name and r["variant"] == "timed" and r["cost"]]
        d = [r for r in rows if r["instance"] == name and r["variant"] == "deterministic" and r["cost"]]
        if not t or not d:
            continue
        tmean = statistics.mean(r["cost"] for r in t)
        dmean = statistics.mean(r["cost"] for r in d)
        ts = " ".join(f"{bk / r['cost']:.4f}" for r in t)
        ds = " ".join(f"{bk / r['cost']:.4f}" for r in d)
        print(f"| {name} | {ts} | {bk / tmean:.4f} | {ds} | {bk / dmean:.4f} | "
              f"{(dmean / tmean - 1) * 100:+.2f} % | "
              f"{max(r['wall_s'] for r in t):.1f} / {max(r['wall_s'] for r in d):.1f} |")


def calibrate(args: argparse.Namespace, out: Path) -> None:
    for name in args.instances:
        row = solve(args, name, work_args(args) + ["--seed", str(args.seed)])
        save(out, row)
        print(f"{name}: work {args.work or 'default'}: wall {row['wall_s']:.1f} s, cost "
              f"{row['cost']}, {row['points']} points, complete {row['complete']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["repeat", "quality", "calibrate"])
    ap.add_argument("--instances", default=None, type=lambda s: s.split(","))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", type=int, default=None, help="work units (default: the tool's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default="0,1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--hog", action="store_true", help="a CPU hog beside every other run")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    if args.instances is None:
        args.instances = ["A", "K", "M", "N", "S"] if args.what == "quality" else ["A", "K", "N", "S"]
    out_dir = REPO / "runs" / (args.name or f"determinism-{args.what}")
    out_dir.mkdir(parents=True, exist_ok=True)
    {"repeat": repeat, "quality": quality, "calibrate": calibrate}[args.what](args, out_dir / "rows.jsonl")


if __name__ == "__main__":
    main()
