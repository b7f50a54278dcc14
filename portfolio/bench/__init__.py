"""Benchmark sweeps: instances x solver configurations x seeds, streamed to ``runs/NAME/``.

A *task* is one (instance, configuration, seed, repetition). Tasks run through joblib (loky processes
on this machine, or an existing Dask cluster through joblib's dask backend). Each task calls
:func:`portfolio.runner.run_portfolio`, so every cost in a results file was verified by the exact
evaluator. The time limit counts from before the instance is loaded, as in the contest.

Fault containment: a task's solve runs in a forked child in its own process group, supervised by the
task function. A child that crashes, raises, or outlives its limit plus a grace period (killed with
its whole group, backend workers included) gives a row with that status, and the sweep goes on.

Results stream to ``runs/NAME/results.jsonl`` (one JSON object per finished task, appended and flushed
as tasks finish, in completion order) and ``runs/NAME/meta.json`` describes the sweep. Plans are kept
beside them in ``solutions/`` in contest format. An interrupted sweep keeps every finished row and
``resume`` skips them. ``portfolio.report`` reads these files and nothing else.

Layout: :mod:`.plan` (tasks from instances x configurations x seeds), :mod:`.task` (one task in a
supervised child), :mod:`.storage` (run folder, rows, resume), :mod:`.parallel` (joblib loky or
Dask), :mod:`.progress` (the live display), :mod:`.environment` (machine and versions stamped on
rows), :mod:`.features` (the instances' features on every row, once per instance per sweep),
:mod:`.sweep` (:func:`run_sweep` ties them together).
"""

from .environment import git_revision, machine_info, package_versions
from .parallel import DASK_CONNECT_TIMEOUT
from .plan import (PLUGINS_ENV, PORTFOLIO_CONFIGURATION, BenchError, Configuration, Instance, Task,
                   expand_instances, instance_name, parse_seeds, plan_tasks, portfolio_workers,
                   resolve_configurations, resolve_instances)
from .progress import FAILED_STATUSES, SweepProgress
from .storage import FORMAT_VERSION, META, RESULTS, SOLUTIONS, prepare_folder, row_key
from .sweep import SweepResult, run_sweep
from .task import GRACE_MIN, run_task, solve_task, warm_up

__all__ = ["DASK_CONNECT_TIMEOUT", "FAILED_STATUSES", "FORMAT_VERSION", "GRACE_MIN", "META",
           "PLUGINS_ENV", "PORTFOLIO_CONFIGURATION", "RESULTS", "SOLUTIONS", "BenchError",
           "Configuration", "Instance", "SweepProgress", "SweepResult", "Task", "expand_instances",
           "git_revision", "instance_name", "machine_info", "package_versions", "parse_seeds",
           "plan_tasks", "portfolio_workers", "prepare_folder", "resolve_configurations",
           "resolve_instances", "row_key", "run_sweep", "run_task", "solve_task", "warm_up"]
