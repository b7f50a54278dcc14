"""The life cycle of one cluster solve, the same for ``portfolio solve --dask-*`` and for
``portfolio.solve(dask_scheduler=..., dask_workers=...)``.

:func:`open_session` decides, before the problem is loaded, whether the cluster is used at all:
dask must be installed, a local cluster (``workers``) needs at least ``LOCAL_MIN_SECONDS`` of budget,
and a scheduler must answer a TCP probe (when it does not: ``unreachable="fail"`` raises
:class:`ClusterUnavailable`, ``"local"`` says one line and the solve runs here only). Then it
starts the link, which connects and submits the shards in its own thread while the caller loads
the problem. The caller runs the local portfolio with :meth:`ClusterSession.run_options` and
:meth:`ClusterSession.hooks`, calls :meth:`ClusterSession.finish` with the result (the shards told
to stop, their rows settled, the ``cluster`` summary returned), and :meth:`ClusterSession.close`
when it is done: the CLI after printing the answer, the API before returning it. Messages for the
user go through ``say``; nothing here prints or exits.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..errors import ProblemError
from ..options import ClusterOptions, RunOptions
from ..runner import deadline_plan
from .driver import ClusterDriver, shard_end_wall
from .link import LOCAL_MIN_SECONDS, ClusterLink, dask_missing, probe

Say = Callable[[str], None]


class ClusterUnavailable(ProblemError):
    """The cluster cannot be used as asked: dask is not installed, or the scheduler cannot be
    reached and the caller chose ``unreachable="fail"``. One line; the CLI exits with code 2."""


def open_session(cluster: ClusterOptions, problem_path: Any, backends: Sequence[Any],
                 options: RunOptions, cost_scale: float = 1.0,
                 say: Say = lambda line: None) -> Optional["ClusterSession"]:
    """Start the cluster side of a solve (see the module); None when the solve runs here only.
    ``options.start`` and ``time_limit`` give the shards' deadline; ``presolve`` and ``seed`` go
    to the shards."""
    missing = dask_missing()
    if missing:
        raise ClusterUnavailable(missing)
    limit = options.time_limit
    if cluster.workers is not None and limit < LOCAL_MIN_SECONDS:
        say(f"cluster: {limit:g} s is too short to start a local cluster (at least "
            f"{LOCAL_MIN_SECONDS:g} s); running on this machine only")
        return None
    if cluster.scheduler is not None:
        why = probe(cluster.scheduler)
        if why:
            if cluster.unreachable == "fail":
                raise ClusterUnavailable(f"cannot reach the Dask scheduler at {cluster.scheduler}: "
                                         f"{why}")
            say(f"cluster: cannot reach the Dask scheduler at {cluster.scheduler} ({why}); running "
                f"on this machine only")
            return None
    if not Path(problem_path).is_file():
        return None  # loading names the problem right after this
    start = time.monotonic() if options.start is None else options.start
    link = ClusterLink(str(problem_path), address=cluster.scheduler, local_workers=cluster.workers,
                       transfer=cluster.transfer)
    _, _, end = deadline_plan(start, limit)
    link.start(backends, options.seed, shard_end_wall(end),
               {"presolve": options.presolve, "cost_scale": cost_scale})
    return ClusterSession(link, say, until=start + limit - 1.0)


class ClusterSession:
    """One cluster solve's link and driver (see the module). Built by :func:`open_session`, or from
    a link a test made itself."""

    def __init__(self, link: ClusterLink, say: Say = lambda line: None,
                 until: Optional[float] = None) -> None:
        self.link, self.driver = link, ClusterDriver(link, say=say)
        self.until = until   # when close() must be done by default (a time.monotonic() value)

    def run_options(self, options: RunOptions) -> RunOptions:
        """The local run's options: the cluster presolves in every shard; here only the backends
        held for the cluster would use it."""
        return replace(options, presolve=False)

    def hooks(self, on_update: Optional[Callable[[Any], None]] = None) -> dict:
        """``run_portfolio``'s hooks: the driver's (verifying shard plans, holding backends while
        the cluster is up, keeping the run open for it), then ``on_update``."""
        driver = self.driver
        if on_update is None:
            hook: Callable[[Any], None] = driver
        else:
            def hook(runner: Any) -> None:
                driver(runner)
                on_update(runner)
        return {"on_update": hook, "hold": driver.hold, "keep_open": driver.keep_open}

    def finish(self, result: Any) -> dict:
        """After the run: tell the shards to stop, settle their rows in ``result.runs`` (and drop
        the rows of backends held for the cluster that never started), return the ``cluster``
        summary."""
        self.link.stop()
        self.driver.finish(result.runs)
        return self.driver.summary()

    def close(self, until: Optional[float] = None) -> None:
        """End everything the session started by ``until`` (default: one second before the answer
        deadline): the stop signal, the client, the local cluster and its processes."""
        self.link.close(until=self.until if until is None else until)
