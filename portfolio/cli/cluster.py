"""The ``--dask-*`` options of ``portfolio solve`` and ``iopddl``: one solve across a Dask cluster
(:mod:`portfolio.distributed`, docs/distributed.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import click

from .app import UserError
from .common import console


@dataclass(frozen=True)
class ClusterOptions:
    scheduler: Optional[str] = None
    workers: Optional[int] = None
    transfer: str = "auto"
    unreachable: str = "local"

    def start(self, problem_path: str | Path, backends: Sequence[Any], seed: int, start: float,
              time_limit: float, presolve: bool, cost_scale: float) -> Any:
        """Start the cluster link (connecting in its own thread) and return it; None when the
        scheduler cannot be reached and the user chose a local run (one line says so). Raises
        :class:`UserError` (exit 2) when dask is missing or the user chose ``fail``."""
        from ..distributed.driver import shard_end_wall
        from ..distributed.link import LOCAL_MIN_SECONDS, ClusterLink, dask_missing, probe
        from ..runner import deadline_plan

        missing = dask_missing()
        if missing:
            raise UserError(missing)
        if self.workers is not None and time_limit < LOCAL_MIN_SECONDS:
            console.print(f"[yellow]cluster:[/] {time_limit:g} s is too short to start a local "
                          f"cluster (at least {LOCAL_MIN_SECONDS:g} s); running on this machine only",
                          highlight=False, soft_wrap=True)
            return None
        if self.scheduler is not None:
            why = probe(self.scheduler)
            if why:
                if self.unreachable == "fail":
                    raise UserError(f"cannot reach the Dask scheduler at {self.scheduler}: {why}")
                console.print(f"[yellow]cluster:[/] cannot reach the Dask scheduler at "
                              f"{self.scheduler} ({why}); running on this machine only",
                              highlight=False, soft_wrap=True)
                return None
        if not Path(problem_path).is_file():
            return None  # loading names the problem right after this
        link = ClusterLink(str(problem_path), address=self.scheduler, local_workers=self.workers,
                           transfer=self.transfer)
        _, _, end = deadline_plan(start, time_limit)
        link.start(backends, seed, shard_end_wall(end),
                   {"presolve": presolve, "cost_scale": cost_scale})
        return link


def cluster_options(command: Callable) -> Callable:
    """The four ``--dask-*`` options, for ``solve`` and ``iopddl``."""
    options = [
        click.option("--dask-scheduler", metavar="tcp://HOST:PORT",
                     help="Run this solve across the Dask cluster of this scheduler: one shard of "
                     "the portfolio per worker, one deadline, the best verified plan shared."),
        click.option("--dask-workers", type=click.IntRange(min=1), metavar="N",
                     help="Run this solve on a local Dask cluster of N worker processes."),
        click.option("--dask-problem", type=click.Choice(["auto", "path", "scatter"]),
                     default="auto", show_default=True,
                     help="How workers get the problem: 'path', they read the same file; "
                     "'scatter', its bytes are sent once; 'auto', each worker that cannot read it "
                     "gets the bytes."),
        click.option("--dask-unreachable", type=click.Choice(["local", "fail"]), default="local",
                     show_default=True, help="When the scheduler cannot be reached at start: run "
                     "on this machine only (one line on stderr says so), or exit with code 2."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def cluster_from(scheduler: Optional[str], workers: Optional[int], transfer: str,
                 unreachable: str) -> Optional[ClusterOptions]:
    if scheduler is not None and workers is not None:
        raise UserError("--dask-scheduler and --dask-workers exclude each other: give one")
    if scheduler is None and workers is None:
        return None
    return ClusterOptions(scheduler, workers, transfer, unreachable)
