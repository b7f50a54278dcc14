"""``portfolio.tune``: the tune of ``portfolio tune`` from Python (docs/tune.md), with a local
Dask cluster started and stopped around it for ``dask_workers`` (the cluster's start lives here,
on the API's floor, beside ``portfolio.solve``'s)."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

from ..errors import ProblemError

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]


def _paths(value: Optional[Paths]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, os.PathLike)):
        return (str(value),)
    return tuple(str(v) for v in value)


def tune(files: Paths, *, time_limit: float, backends: Union[str, Sequence[str], None] = None,
         seeds: Any = 2, seed: int = 0, trials: Optional[int] = None,
         hours: Optional[float] = None, name: Optional[str] = None, runs_dir: str = "runs",
         deterministic: bool = False, work: Optional[int] = None,
         dask_scheduler: Optional[str] = None, dask_workers: Optional[int] = None, jobs: int = 1,
         validate: Optional[Paths] = None, space: Optional[Union[str, os.PathLike]] = None,
         progress: Any = None, command: Optional[list[str]] = None,
         config: Optional[Paths] = None) -> Any:
    """Tune the portfolio on ``files`` (see ``portfolio tune --help`` and docs/tune.md): the
    same parameters as the command; returns a :class:`portfolio.tuning.TuneOutcome` (``folder``,
    ``config``: the TOML written, ``summary``: default against tuned). Bad input raises
    :class:`ProblemError` (a :class:`portfolio.tuning.TuneError`) before anything runs.
    ``config``: config files (``--config``, merged in order) the tune starts from."""
    from ..tuning import TuneSettings, run_tune

    if dask_scheduler is not None and dask_workers is not None:
        raise ProblemError("dask_scheduler and dask_workers exclude each other: give one")
    if dask_workers is not None and (isinstance(dask_workers, bool) or not isinstance(dask_workers, int)
                                     or dask_workers < 1):
        raise ProblemError(f"dask_workers: expected a positive integer, got {dask_workers!r}")
    if isinstance(backends, str):
        backends = [b for b in backends.split(",")]
    settings = TuneSettings(files=_paths(files), time_limit=float(time_limit),
                            backends=list(backends) if backends else None, seeds=seeds, seed=seed,
                            trials=trials, hours=hours, name=name, runs_dir=str(runs_dir),
                            deterministic=deterministic, work=work,
                            dask_scheduler=dask_scheduler, jobs=jobs, validate=_paths(validate),
                            space=None if space is None else str(space), command=command,
                            config=_paths(config))
    opened = getattr(progress, "opened", None)
    if dask_workers is None:
        if progress is None:
            return run_tune(settings)
        with progress:
            return run_tune(settings, progress, on_open=opened)
    from ..tuning.settings import resolve
    resolve(settings)   # bad input is refused before a cluster starts
    from ..distributed.local_cluster import read_address, start_host, stop_host

    host = start_host(dask_workers, 1)
    try:
        address = read_address(host)
        if address is None:
            raise ProblemError(f"dask_workers={dask_workers}: the local cluster did not start")
        import dataclasses

        settings = dataclasses.replace(settings, dask_scheduler=address)
        if progress is None:
            return run_tune(settings)
        with progress:
            return run_tune(settings, progress, on_open=opened)
    finally:
        stop_host(host, 10.0)
