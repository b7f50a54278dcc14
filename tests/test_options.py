"""``RunOptions`` and ``ClusterOptions`` (portfolio/options.py): the runner's defaults, checked when
made with one line naming the field, frozen, and the only way settings reach the runner."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from portfolio.errors import ProblemError
from portfolio.options import DEFAULT_POLICY, ClusterOptions, RunOptions


def test_the_defaults_are_the_runners():
    """A plain run does nothing the caller did not ask for: no presolve, no scoring of every plan,
    the fallback plan and early stop on, every core, a share of the RAM per backend."""
    options = RunOptions()
    assert (options.presolve, options.exhaustive, options.fallback, options.early_stop) == (
        False, False, True, True)
    assert (options.workers, options.seed, options.start, options.warm_start) == (None, 0, None, None)
    assert (options.memory_limit, options.policy, options.extra_seeds, options.honour_demand) == (
        "default", DEFAULT_POLICY, True, True)
    assert options.time_limit == 60.0 and options.cluster is None
    assert dict(options.cpu_weights) == {}   # equal shares
    assert options.adaptive is False   # the adaptive rule (runner/focus.py): off until measured


def test_the_api_defaults_are_the_clis():
    """``portfolio.solve``'s keywords default to what ``portfolio solve`` does (presolve, every plan
    of a tiny instance scored), and the rest of its run options to the object's own defaults."""
    from portfolio.api import solve

    defaults = {k: p.default for k, p in inspect.signature(solve).parameters.items()}
    assert defaults["presolve"] is True and defaults["exhaustive"] is True
    fields = {f.name: f.default for f in dataclasses.fields(RunOptions)}
    for name in ("time_limit", "workers", "seed", "early_stop", "memory_limit", "deterministic",
                 "work"):
        assert defaults[name] == fields[name], name


def test_deterministic_mode_defaults_and_work_implies_it():
    """The time limit is the safety net in deterministic mode (generous unless given); a work
    budget means nothing to a timed run, so giving one asks for deterministic mode."""
    from portfolio.options import DEFAULT_WORK, DETERMINISTIC_TIME_LIMIT, TIME_LIMIT

    assert RunOptions().work_budget is None and RunOptions().time_limit == TIME_LIMIT
    det = RunOptions(deterministic=True)
    assert det.time_limit == DETERMINISTIC_TIME_LIMIT and det.work_budget == DEFAULT_WORK
    assert RunOptions(deterministic=True, time_limit=5).time_limit == 5.0
    implied = RunOptions(work=5000)
    assert implied.deterministic and implied.work_budget == 5000
    assert implied.time_limit == DETERMINISTIC_TIME_LIMIT


def test_frozen_and_float_time():
    options = RunOptions(10)
    assert options.time_limit == 10.0 and isinstance(options.time_limit, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 3   # type: ignore[misc]
    assert dataclasses.replace(options, seed=3).seed == 3


@pytest.mark.parametrize("fields, message", [
    (dict(time_limit=0), "time_limit: expected a positive number of seconds, got 0"),
    (dict(time_limit=float("inf")), "time_limit: expected a positive number of seconds"),
    (dict(time_limit=True), "time_limit: expected a positive number of seconds"),
    (dict(time_limit="60"), "time_limit: expected a positive number of seconds"),
    (dict(start="now"), "start: expected a time.monotonic() value"),
    (dict(seed=1.5), "seed: expected an integer, got 1.5"),
    (dict(workers=0), "workers: expected a positive integer, got 0"),
    (dict(workers=True), "workers: expected a positive integer, got True"),
    (dict(memory_limit="4G"), "memory_limit: expected bytes (a positive integer), None or \"default\""),
    (dict(memory_limit=0), "memory_limit: expected bytes"),
    (dict(policy="fifo"), "policy: expected one of share, pin, slices, got 'fifo'"),
    (dict(cluster="tcp://x:1"), "cluster: expected ClusterOptions, got str"),
    (dict(work=0), "work: expected a positive integer number of work units, got 0"),
    (dict(work=-3), "work: expected a positive integer number of work units, got -3"),
    (dict(work="abc"), "work: expected a positive integer number of work units, got 'abc'"),
    (dict(work=2.5), "work: expected a positive integer number of work units, got 2.5"),
    (dict(work=True), "work: expected a positive integer number of work units, got True"),
    (dict(deterministic="yes"), "deterministic: expected True or False, got 'yes'"),
    (dict(deterministic=True, cluster=ClusterOptions(workers=2)),
     "deterministic: not supported in a cluster solve"),
    (dict(objective="memory"), "objective: expected one of cost, peak, got 'memory'"),
    (dict(objective="peak", deterministic=True), "objective: 'peak' is not supported in deterministic"),
    (dict(objective="peak", cluster=ClusterOptions(workers=2)),
     "objective: 'peak' is not supported in a cluster solve"),
    (dict(cpu_weights={"toulbar2": 0}), "cpu_weights: expected {backend: positive weight}"),
    (dict(cpu_weights={"toulbar2": True}), "cpu_weights: expected {backend: positive weight}"),
    (dict(cpu_weights=[("toulbar2", 2.0)]), "cpu_weights: expected {backend: positive weight}"),
    (dict(adaptive="yes"), "adaptive: expected True or False"),
])
def test_a_bad_value_names_its_field(fields, message):
    with pytest.raises(ProblemError, match="^" + re.escape(message)):
        RunOptions(**fields)


@pytest.mark.parametrize("fields, message", [
    (dict(), "dask_scheduler or dask_workers: give one for a cluster solve"),
    (dict(scheduler="tcp://a:1", workers=2), "dask_scheduler and dask_workers exclude each other"),
    (dict(workers=-1), "dask_workers: expected a positive integer, got -1"),
    (dict(scheduler=8786), "dask_scheduler: expected an address such as tcp://HOST:PORT, got 8786"),
    (dict(workers=2, transfer="copy"), "dask_problem: expected one of auto, path, scatter, got 'copy'"),
    (dict(workers=2, unreachable="retry"), "dask_unreachable: expected one of local, fail"),
])
def test_a_bad_cluster_value_names_its_option(fields, message):
    with pytest.raises(ProblemError, match="^" + re.escape(message)):
        ClusterOptions(**fields)


def test_cluster_options_nest():
    cluster = ClusterOptions(workers=2)
    options = RunOptions(30, cluster=cluster)
    assert options.cluster.transfer == "auto" and options.cluster.unreachable == "local"
    assert hash(cluster) == hash(ClusterOptions(workers=2))


def test_the_runner_takes_the_object_only(bundled_example):
    """``run_portfolio`` has no loose settings left: its third argument is the object, and the rest
    are the run's hooks."""
    from portfolio.io import load_problem
    from portfolio.runner import run_portfolio

    params = inspect.signature(run_portfolio).parameters
    assert list(params) == ["problem", "backends", "options", "on_update", "presolved", "hold",
                            "keep_open"]
    with pytest.raises(TypeError, match="options: expected RunOptions"):
        run_portfolio(load_problem(bundled_example), [], 5.0)
