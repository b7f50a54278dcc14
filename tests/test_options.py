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


def test_the_api_defaults_are_the_clis():
    """``portfolio.solve``'s keywords default to what ``portfolio solve`` does (presolve, every plan
    of a tiny instance scored), and the rest of its run options to the object's own defaults."""
    from portfolio.api import solve

    defaults = {k: p.default for k, p in inspect.signature(solve).parameters.items()}
    assert defaults["presolve"] is True and defaults["exhaustive"] is True
    for name in ("time_limit", "workers", "seed", "early_stop", "memory_limit"):
        assert defaults[name] == getattr(RunOptions(), name), name


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
