"""Deadline margin and memory of `portfolio solve` on one instance.

Runs the real command as a subprocess, samples the whole process tree every 50 ms (RSS and PSS: PSS
splits pages shared between the parent and its forked workers, so its sum is the true footprint), and
reports how long before the deadline the answer was printed (time of the last stdout bytes, measured
from just before the command is started, so the margin is conservative).

    python benchmarks/runner_resources.py ../shared/benchmarks/asplos-2025-iopddl-A.json.gz -t 20 \
        --backends greedy,localsearch --workers 2
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil


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


def main() -> None:
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


if __name__ == "__main__":
    main()
