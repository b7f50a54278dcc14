"""``--dask-workers N``: a local Dask cluster in a host process of its own.

Why a separate process rather than ``LocalCluster`` in the driver: the driver's runner ends every
child process it did not start itself (orphans its workers leave behind, see
``portfolio.runner.contain``), and a cluster's worker processes would be such children. The host
is one child the runner is told to spare; the cluster's processes are the host's. It prints the
scheduler's address as one line, then keeps the cluster until its stdin closes (the driver ended
or died) and closes it; Linux kills it with the driver (PDEATHSIG) should the driver be killed.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Optional


def start_host(workers: int, threads: int) -> subprocess.Popen:
    """Start the host process (returns at once; the address comes on its stdout)."""
    return subprocess.Popen([sys.executable, "-m", "portfolio.distributed.local_cluster",
                             str(workers), str(threads)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def read_address(host: subprocess.Popen) -> Optional[str]:
    """The scheduler address the host printed, or None when it failed (its stderr says why)."""
    line = host.stdout.readline() if host.stdout is not None else ""
    return line.strip() or None


def stop_host(host: subprocess.Popen, timeout: float) -> None:
    """Close the host's stdin (it closes its cluster); kill it after ``timeout`` seconds."""
    try:
        if host.stdin is not None:
            host.stdin.close()
    except OSError:
        pass
    try:
        host.wait(timeout=max(0.05, timeout))
    except subprocess.TimeoutExpired:
        from ..runner import contain

        contain.kill_tree(host.pid)
        host.wait(timeout=1.0)


def main(argv: list[str]) -> int:
    from ..runner.worker import die_with_parent

    die_with_parent()
    workers, threads = int(argv[0]), int(argv[1])
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()   # until the driver closes it (or dies)
    try:
        cluster.close(timeout=2)
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
