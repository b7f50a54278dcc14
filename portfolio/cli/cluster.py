"""The ``--dask-*`` options of ``portfolio solve`` and ``iopddl``: one solve across a Dask cluster
(:mod:`portfolio.distributed`, docs/distributed.md). The flags become a
:class:`~portfolio.options.ClusterOptions` in the run's options; the cluster's life cycle is
:mod:`portfolio.distributed.session`'s, shared with ``portfolio.solve``."""

from __future__ import annotations

from typing import Callable, Optional

import click

from ..options import ClusterOptions
from .app import UserError


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
    """The flags as options (None: no cluster); the two ways to name a cluster exclude each other."""
    if scheduler is not None and workers is not None:
        raise UserError("--dask-scheduler and --dask-workers exclude each other: give one")
    if scheduler is None and workers is None:
        return None
    return ClusterOptions(scheduler, workers, transfer, unreachable)
