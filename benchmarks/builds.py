"""Two builds of the tool side by side: the same instances and seeds, alternated, on one machine.

A renovation or a tuning change is judged by plan quality and speed before and after; runs of one
instance spread by several per cent, so the two builds run in one sweep, seed-major, back to back,
their order swapped every seed (a drift of the machine spreads over both). Each build is a Python
interpreter whose environment has the tool installed (a virtualenv of a checkout): every run is
``PYTHON -m portfolio solve FILE -t SECONDS --seed S --json -q [EXTRA]`` in a fresh process, as a
user would type it.

    python benchmarks/builds.py --build before=/path/a/.venv/bin/python \\
        --build after=/path/b/.venv/bin/python [--instances A,K,N,S] [--seconds 60 | --contest]
        [--seeds 0,1,2] [--extra '...'] [--name NAME]

Writes every run's summary to ``runs/NAME/rows.jsonl`` (appending: an interrupted sweep resumes
where it stopped) and its ``--json`` document, less the plan, to ``runs/NAME/BUILD-INSTANCE-SEED.json`` and prints a markdown table: the contest score (best known / cost) per build,
instance and seed, the mean per build and instance, walls, the backend that found each answer, and
CPU seconds per backend summed over the runs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends import best_known, run_json  # noqa: E402

CONTEST_SECONDS = {"A": 60, "B": 60, "G": 120, "K": 180, "M": 180, "N": 180, "S": 240}
"""The contest's time limit per shared instance (../shared/reference/best_known.csv)."""


NEUTRAL = tempfile.mkdtemp(prefix="builds-")
"""Every run's working directory: ``python -m`` puts it first on ``sys.path``, so a run started in
a checkout would import that checkout's ``portfolio`` instead of its own build's."""


def where(python: str) -> str:
    """The directory a build's ``portfolio`` is imported from, as its runs see it (a check that the
    builds really differ)."""
    return subprocess.run([python, "-c", "import portfolio, os; print(os.path.dirname(portfolio.__file__))"],
                          capture_output=True, text=True, cwd=NEUTRAL).stdout.strip()


def instance(name: str) -> tuple[str, Path]:
    full = f"asplos-2025-iopddl-{name}"
    return full, SHARED / "benchmarks" / f"{full}.json.gz"


def summary(data: dict) -> dict:
    """What the table needs of one ``--json`` document: cost, winner, wall, CPU per backend."""
    cpu = {r.get("backend", "?"): r.get("cpu_seconds") for r in data.get("backends") or []}
    return {"cost": data.get("cost"), "winner": data.get("winner"), "wall_s": data.get("wall_s"),
            "lower_bound": data.get("lower_bound"), "cpu": cpu, "error": data.get("error")}


def sweep(args: argparse.Namespace, rows_path: Path) -> list[dict]:
    done = {(r["build"], r["instance"], r["seed"]) for r in load_rows(rows_path)}
    builds = dict(args.build)
    for name, python in builds.items():
        print(f"build {name}: {python} imports portfolio from {where(python)}", file=sys.stderr)
    for k, seed in enumerate(args.seeds):
        for inst in args.instances:
            full, path = instance(inst)
            seconds = CONTEST_SECONDS[inst] if args.contest else args.seconds
            order = list(builds) if k % 2 == 0 else list(reversed(builds))
            for build in order:
                if (build, inst, seed) in done:
                    continue
                cmd = [builds[build], "-m", "portfolio", "solve", str(path), "-t", str(seconds),
                       "--seed", str(seed), "--json", "-q", *args.extra]
                data = run_json(cmd, cwd=NEUTRAL)
                row = {"build": build, "instance": inst, "seed": seed, "seconds": seconds,
                       **summary(data)}
                data.pop("solution", None)   # the rest (rows, incumbents, bounds) says who found what, when
                (rows_path.parent / f"{build}-{inst}-{seed}.json").write_text(json.dumps(data))
                with rows_path.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(f"{inst} seed {seed} {build}: cost {row['cost']} by {row['winner']} "
                      f"wall {row['wall_s']}", file=sys.stderr, flush=True)
    return load_rows(rows_path)


def load_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def table(rows: list[dict], builds: list[str]) -> str:
    best = best_known()
    out = ["| instance | seed | " + " | ".join(f"{b} score (winner, wall s)" for b in builds) + " |",
           "|---|---|" + "---|" * len(builds)]
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    cpu: dict[str, dict[str, float]] = {b: defaultdict(float) for b in builds}
    by = {(r["build"], r["instance"], r["seed"]): r for r in rows}
    for inst in dict.fromkeys(r["instance"] for r in rows):
        for seed in sorted({r["seed"] for r in rows if r["instance"] == inst}):
            cells = []
            for b in builds:
                r = by.get((b, inst, seed))
                if r is None:
                    cells.append("-")
                    continue
                for name, seconds in (r.get("cpu") or {}).items():
                    cpu[b][name] += seconds or 0.0
                if not r.get("cost"):
                    cells.append(f"none ({r.get('error') and 'error' or 'no plan'})")
                    continue
                score = best[f"asplos-2025-iopddl-{inst}"] / r["cost"]
                scores[(b, inst)].append(score)
                cells.append(f"{score:.4f} ({r['winner']}, {r['wall_s']:.1f})")
            out.append(f"| {inst} | {seed} | " + " | ".join(cells) + " |")
    out += ["", "| instance | " + " | ".join(f"{b} mean (n)" for b in builds) + " |",
            "|---|" + "---|" * len(builds)]
    for inst in dict.fromkeys(r["instance"] for r in rows):
        cells = [f"{statistics.mean(s):.4f} ({len(s)})" if (s := scores.get((b, inst))) else "-"
                 for b in builds]
        out.append(f"| {inst} | " + " | ".join(cells) + " |")
    means = [statistics.mean(v for (bb, _), s in scores.items() if bb == b for v in s)
             if any(bb == b for bb, _ in scores) else float("nan") for b in builds]
    out.append("| **all** | " + " | ".join(f"**{m:.4f}**" for m in means) + " |")
    out += ["", "CPU seconds per backend, summed over the runs:", ""]
    for b in builds:
        parts = ", ".join(f"{n} {s:.0f}" for n, s in sorted(cpu[b].items(), key=lambda kv: -kv[1]))
        out.append(f"- {b}: {parts}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="NAME=PYTHON",
                    type=lambda s: tuple(s.split("=", 1)), help="a build: its name and interpreter")
    ap.add_argument("--instances", default="A,K,N,S", type=lambda s: s.split(","))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--contest", action="store_true", help="each instance's contest time limit")
    ap.add_argument("--seeds", default="0,1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--extra", default="", type=shlex.split, help="more options for every solve")
    ap.add_argument("--name", default="builds")
    args = ap.parse_args()
    out_dir = REPO / "runs" / args.name
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = sweep(args, out_dir / "rows.jsonl")
    print(table(rows, [b for b, _ in args.build]))


if __name__ == "__main__":
    main()
