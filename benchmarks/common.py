"""What the benchmark scripts share, in one place: where the shared contest instances are, their
reference costs (read through :mod:`portfolio.data.contest`, never a CSV of our own), loading and
presolving them, markdown helpers, and a command run for its JSON document.

Not a benchmark itself: no figures of its own.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BENCH = SHARED / "benchmarks"


def instance_path(name: str, bench: Path = BENCH) -> Path:
    """The shared contest instance of a letter (``K`` -> ``.../asplos-2025-iopddl-K.json.gz``)."""
    return bench / f"asplos-2025-iopddl-{name}.json.gz"


def existing(bench: Path, names: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """(letter, path) of each instance file found in ``bench``; a missing one gets a table row that
    says so (a table with a silent gap would read as a complete one)."""
    for name in names:
        path = instance_path(name, bench)
        if path.exists():
            yield name, path
        else:
            print(f"| {name} | (missing: {path}) |")


def reference(name: str):
    """The contest's facts about a benchmark (a letter or a name): time limit, best known cost, the
    published lower bound (:class:`portfolio.data.contest.Benchmark`), or None."""
    from portfolio.data import contest

    return contest.benchmarks().get(name) or contest.match(name)


def best_known() -> dict[str, int]:
    """Best known cost by full benchmark name (``asplos-2025-iopddl-K``)."""
    from portfolio.data import contest

    return {b.name: b.best_known_cost for b in contest.benchmarks().values()}


def load(name: str):
    """The contest instance ``name`` (a letter) and its presolve."""
    from portfolio.io import load_problem
    from portfolio.presolve import presolve

    problem = load_problem(instance_path(name))
    return problem, presolve(problem)


def presolved(names: list[str]):
    """(name, original problem, its presolve) per instance letter, loaded one at a time."""
    for name in names:
        yield (name, *load(name))


def fmt(x) -> str:
    return "-" if x is None else f"{x:,}" if isinstance(x, int) else str(x)


def header(columns: str) -> None:
    """A markdown table head from ``"a | b | c"``."""
    print(f"| {columns} |")
    print("|" + "---|" * (columns.count("|") + 1))


def run_json(cmd: list[str], env: dict | None = None, cwd: str | Path = REPO) -> dict:
    """Run a command that prints a JSON document (``portfolio solve --json``), by default from the
    repository; the document with ``wall_s`` (seconds from before the process started to its exit)
    added, or ``{"error", "returncode"}`` when it printed none."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd)
    wall = time.monotonic() - t0
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = {"error": proc.stderr[-2000:], "returncode": proc.returncode}
    data["wall_s"] = round(wall, 3)
    return data


def run_part(modes: dict[str, tuple[Callable[[], None], bool]], doc: str | None) -> None:
    """A script made of parts: ``python benchmarks/SCRIPT.py PART [its own options]`` runs
    ``modes[PART]``. Each entry is (the part's main, whether its own parser takes the part's name);
    an unknown or missing part prints the script's docstring and the parts, and exits."""
    import sys

    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        print(doc)
        raise SystemExit(f"usage: python {sys.argv[0]} {{{','.join(modes)}}} ...")
    run, keep = modes[sys.argv[1]]
    if not keep:   # the part's own parser does not take the part's name
        sys.argv[0:2] = [f"{sys.argv[0]} {sys.argv[1]}"]
    run()

