"""Where tasks run: joblib's loky processes on this machine, or an existing Dask cluster.

Rows come back unordered, as tasks finish, so the sweep can stream them to disk at once.
"""

from __future__ import annotations

from typing import Iterator, Optional

from .checkout import run_elsewhere
from .command_task import run_command_task
from .plan import BenchError, Task
from .task import run_task

DASK_CONNECT_TIMEOUT = 30.0
"""Seconds to wait for the Dask scheduler before giving up."""


def run_any(task: Task) -> dict:
    """One task, this checkout's code, another's (``LABEL=MEMBERS@PATH``) or a command
    (``LABEL=cmd:...``): the unit of work."""
    if task.command is not None:
        return run_command_task(task)
    return run_task(task) if task.checkout is None else run_elsewhere(task)


def parallel_rows(tasks: list[Task], jobs: int, dask_scheduler: Optional[str],
                  guard: float) -> Iterator[dict]:
    from joblib import Parallel, delayed, parallel_config

    calls = (delayed(run_any)(t) for t in tasks)
    if dask_scheduler is None:
        guard_kw = {} if jobs == 1 else {"timeout": guard}  # sequential: no joblib timeout
        yield from Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered",
                            **guard_kw)(calls)
        return
    try:
        from distributed import Client
    except ImportError:
        raise BenchError("--dask-scheduler needs dask: pip install 'iopddl-portfolio[dask]'") from None
    try:
        client = Client(dask_scheduler, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:
        raise BenchError(f"cannot reach the Dask scheduler at {dask_scheduler}: {exc}") from None
    try:
        if sum(client.ncores().values()) == 1:
            # joblib runs n_jobs == 1 in this process, not on the cluster: submit directly
            from distributed import as_completed

            with client.as_current():
                futures = client.map(run_any, tasks, pure=False)
                for future in as_completed(futures):
                    yield future.result()
            return
        with client.as_current(), parallel_config(backend="dask", client=client):
            yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(calls)
    finally:
        client.close()
