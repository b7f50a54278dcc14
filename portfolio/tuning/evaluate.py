"""Evaluations: ordinary bench tasks (:func:`portfolio.bench.run_task`: a supervised child, the
same containment and the same rows as ``portfolio bench``), run here under joblib or on a Dask
cluster, with a cache keyed by what decides a row, so a resumed tune or a configuration proposed
twice never runs a finished evaluation again.

Why not :func:`portfolio.bench.parallel.parallel_rows`: it opens a Dask client per call, and a
tune calls it once per racing round; here one client lives as long as the tune, and rows come
back in the order the tasks were given (the racing rule tells results in a fixed order).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Optional, Sequence

from ..bench.plan import PLUGINS_ENV, Task, option_set
from ..bench.task import run_task
from ..report.tune_score import Pair
from .space import Candidate, TuneError

DASK_CONNECT_TIMEOUT = 30.0


_WARM: set[str] = set()
"""The backends whose kernels this process has loaded (``""``: the loader and presolve)."""


def warm(names: Sequence[str], plugins: Optional[str]) -> None:
    """Load the compiled kernels of ``names`` into this process, once each (a warm numba cache
    loads in about a second; :func:`portfolio.runner.warmup.warm_up_serial`): every run forked
    from here then starts warm. Measured: without it the tune's very first run, the default's,
    spent its 3 s on B loading localsearch's and bound's kernels under load and scored 10 times
    the best known, a cold start charged to the baseline."""
    todo = [n for n in names if n not in _WARM]
    if not todo and "" in _WARM:
        return
    with contextlib.suppress(Exception):
        from ..registry import Registry
        from ..runner.warmup import warm_up_serial

        if plugins is None:
            os.environ.pop(PLUGINS_ENV, None)
        else:
            os.environ[PLUGINS_ENV] = plugins
        registry = Registry()
        warm_up_serial([registry.get(n) for n in todo])
    _WARM.update([*todo, ""])


def evaluate_task(task: Task) -> dict:
    """One evaluation: the backends' kernels loaded in this process first, then the bench task
    (picklable, top level: the unit joblib and Dask run)."""
    warm(task.backends, task.plugins)
    return run_task(task)


def cache_key(instance: str, seed: int, backends: Sequence[str], options: Any) -> tuple:
    """What decides an evaluation's row within one tune (its time limit and work are the tune's)."""
    return (instance, int(seed), tuple(backends), json.dumps(options or {}, sort_keys=True))


def row_cache_key(row: dict) -> tuple:
    return cache_key(row.get("instance"), row.get("seed", 0), row.get("backends", ()),
                     row.get("options_given", {}))


def make_task(name: str, candidate: Candidate, pair: Pair, time_limit: float, *, jobs: int,
              distributed: bool, deterministic: bool, work: Optional[int]) -> Task:
    """The bench task of one evaluation (configuration ``name`` on one (instance, seed))."""
    several = len(candidate.backends) > 1
    workers = None if distributed and several else (
        max(1, (os.cpu_count() or 1) // max(1, jobs)) if several else 1)
    return Task(pair.instance, pair.path, name, candidate.backends, pair.seed, 0, time_limit,
                workers, os.environ.get(PLUGINS_ENV), jobs, option_set(candidate.option_dict()),
                deterministic or work is not None, work)


class Evaluator:
    """Runs tasks and returns their rows in the tasks' order: one by one in this process
    (``jobs=1``), in ``jobs`` loky processes, or on the Dask cluster at ``dask_scheduler``
    (one client for the whole tune). ``slots`` is how many tasks run at once."""

    def __init__(self, jobs: int = 1, dask_scheduler: Optional[str] = None) -> None:
        self.jobs, self.dask_scheduler = max(1, jobs), dask_scheduler
        self.client: Any = None

    def __enter__(self) -> "Evaluator":
        if self.dask_scheduler is not None:
            try:
                from distributed import Client
            except ImportError:
                raise TuneError("--dask-scheduler needs dask: pip install "
                                "'iopddl-portfolio[dask]'") from None
            try:
                self.client = Client(self.dask_scheduler, timeout=DASK_CONNECT_TIMEOUT,
                                     set_as_default=False)
            except Exception as exc:
                raise TuneError(f"cannot reach the Dask scheduler at {self.dask_scheduler}: "
                                f"{exc}") from None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except Exception:
                pass
            self.client = None

    @property
    def distributed(self) -> bool:
        return self.dask_scheduler is not None

    @property
    def slots(self) -> int:
        if self.client is not None:
            return max(1, sum(self.client.ncores().values()))
        return self.jobs

    def run(self, tasks: Sequence[Task]) -> list[dict]:
        if not tasks:
            return []
        if self.client is not None:
            futures = self.client.map(evaluate_task, list(tasks), pure=False)
            return list(self.client.gather(futures))
        if self.jobs == 1 or len(tasks) == 1:
            return [evaluate_task(t) for t in tasks]
        from joblib import Parallel, delayed

        return list(Parallel(n_jobs=min(self.jobs, len(tasks)), backend="loky")(
            delayed(evaluate_task)(t) for t in tasks))
