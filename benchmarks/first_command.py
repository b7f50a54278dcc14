"""A new user's first command, phase by phase: fresh venv, `pip install .`, `portfolio warmup`,
`portfolio solve` (the bundled example), for one or more checkouts, alternated.

Each run copies the checkout's tracked files to a new folder (as a fresh clone would be), then runs
the README's first command split at its `&&`s, timing each phase on the wall clock; the solve's own
report (winner, cost, elapsed) is read from its stderr. Wheels come from pip's cache (the install
phase is then mostly unpacking; it is shown but not counted in "first command less install").

    python benchmarks/first_command.py /path/to/old-checkout /path/to/this-checkout --repeat 2
    python benchmarks/first_command.py . --chain     # the README's chain as one bash command

``--chain`` runs the first command as the README writes it, one ``bash -c`` (which execs its last
command), and compares the time the solve reports with its wall time from the moment bash exec'd
it (polled in /proc every 5 ms) and with the whole chain's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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


def main() -> None:
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


if __name__ == "__main__":
    main()
