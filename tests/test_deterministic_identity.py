"""Deterministic mode's identity (issue 47, item 2): every input that can change the plan is in it
(the run options, the warm start's content, the backends and their options, the installed plugins
and their versions, ``PORTFOLIO_PLUGINS``), so two runs of the same problem with the same identity
give the same plan; the API and the CLI give the same plan for the same identity; the variables the
commands read are named in their ``--help`` and recorded with their runs."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

import det_backends as db
from conftest import TESTS
from portfolio.api import solve
from portfolio.cli import _iopddl, cli
from portfolio.generate import generate_problem
from portfolio.identity import plan_identity
from portfolio.io import write_problem
from portfolio.options import RunOptions
from portfolio.testing import UNSET_VARIABLES, PortfolioCli


@pytest.fixture(scope="module")
def small():
    return generate_problem(150, seed=1)


def _digest(options: RunOptions, backends=None, values=None) -> str:
    backends = [db.NodeSearch()] if backends is None else backends
    return plan_identity(options, backends, values or {})["identity"]


BASE = RunOptions(deterministic=True, work=4_000, presolve=True, exhaustive=True)


@pytest.mark.parametrize("flip", [
    {"presolve": False}, {"exhaustive": False}, {"early_stop": False}, {"fallback": False},
    {"seed": 1}, {"work": 5_000}, {"warm_start": np.zeros(150, dtype=np.int64)},
    {"adaptive": True}, {"cpu_weights": {"det-node": 2.0}}])
def test_each_run_option_that_can_change_the_plan_changes_the_identity(flip):
    assert _digest(replace(BASE, **flip)) != _digest(BASE)


@pytest.mark.parametrize("same", [
    {"workers": 1}, {"workers": 2}, {"time_limit": 30.0}, {"policy": "slices"},
    {"memory_limit": None}, {"honour_demand": False}, {"extra_seeds": False},
    {"config": "x.toml"}, {"start": 12.5}])
def test_what_moves_only_when_things_run_leaves_the_identity_alone(same):
    """The cores, the safety net, the scheduling and the memory cap decide when, never what (a
    backend ended for memory or by the safety net makes the run incomplete instead)."""
    assert _digest(replace(BASE, **same)) == _digest(BASE)


def test_the_warm_start_counts_by_its_content_and_cold_only_beside_it():
    one, two = np.zeros(150, dtype=np.int64), np.ones(150, dtype=np.int64)
    warm = replace(BASE, warm_start=one)
    assert _digest(replace(BASE, warm_start=list(one))) == _digest(warm)   # content, not type
    assert _digest(replace(BASE, warm_start=two)) != _digest(warm)
    assert _digest(replace(warm, cold=())) != _digest(warm)
    assert _digest(replace(warm, cold=("det-node",))) != _digest(replace(warm, cold=()))
    assert _digest(replace(BASE, cold=())) == _digest(BASE)   # no warm start: cold changes nothing


def test_the_backends_their_options_and_the_installed_plugins_count(monkeypatch):
    assert _digest(BASE, [db.NodeSearch(), db.EdgeSearch()]) != _digest(BASE)
    found = plan_identity(BASE, [db.NodeSearch()], {})
    assert found["inputs"]["backends"] == {"det-node": "det_backends.NodeSearch"}
    monkeypatch.delenv("PORTFOLIO_PLUGINS", raising=False)
    before = _digest(BASE)
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "det_backends")
    with_env = plan_identity(BASE, [db.NodeSearch()], {})
    assert with_env["identity"] != before
    modules = with_env["inputs"]["installed"]["PORTFOLIO_PLUGINS"]
    assert list(modules) == ["det_backends"] and len(modules["det_backends"]) == 16
    dists = with_env["inputs"]["installed"]["distributions"]
    assert dists["iopddl-portfolio"]   # every distribution with backends, and its version


def test_a_plugin_distributions_version_changes_the_identity(monkeypatch):
    import portfolio.identity as identity

    before = _digest(BASE)
    real = identity.installed_plugins

    def bumped() -> dict:
        out = real()
        out["distributions"] = {**out["distributions"], "some-plugin": "2.0"}
        return out

    monkeypatch.setattr(identity, "installed_plugins", bumped)
    assert _digest(BASE) != before


# ------------------------------------------------------------------------------ end to end
def test_presolve_changes_the_identity_of_a_run(small):
    """The issue's example in small: the same identity, with and without presolve, gave B two
    plans (5,713,512 and 6,059,503)."""
    on = solve(small, backends="greedy,minusage", work=200)
    off = solve(small, backends="greedy,minusage", work=200, presolve=False)
    assert on.deterministic["complete"] and off.deterministic["complete"]
    assert on.deterministic["identity"] != off.deterministic["identity"]
    assert on.deterministic["inputs"]["run"]["presolve"] is True
    assert off.deterministic["inputs"]["run"]["presolve"] is False


def test_two_warm_starts_give_two_identities(small):
    first = solve(small, backends="greedy,minusage", work=200)
    plan = list(first.plan)
    other = list(small.min_usage_strategies)
    a = solve(small, backends="greedy,minusage", work=200, warm_start=plan)
    b = solve(small, backends="greedy,minusage", work=200, warm_start=other)
    assert a.deterministic["identity"] != b.deterministic["identity"]
    assert a.deterministic["identity"] != first.deterministic["identity"]


def test_the_api_and_the_cli_give_the_same_plan_for_the_same_identity(small, tmp_path,
                                                                       portfolio_cli):
    path = tmp_path / "small.json"
    write_problem(small, path)
    cli_run = portfolio_cli.configured(plugins="det_backends", path=[TESTS], timeout=120).run(
        "solve", path, "--work", "6000", "-b", "det-node,det-edge", "--json", "-q")
    assert cli_run.returncode == 0, cli_run.stderr
    doc = json.loads(cli_run.stdout)
    import os

    os.environ["PORTFOLIO_PLUGINS"] = "det_backends"
    try:
        api = solve(str(path), backends="det-node,det-edge", work=6000)
    finally:
        os.environ.pop("PORTFOLIO_PLUGINS")
    assert doc["deterministic"]["complete"] and api.deterministic["complete"]
    assert doc["deterministic"]["identity"] == api.deterministic["identity"]
    assert doc["plan_hash"] == api.plan_hash and doc["solution"] == api.plan


# ------------------------------------------------------------------------------ the variables
def test_the_suites_commands_do_not_inherit_a_config_from_the_shell(monkeypatch):
    assert "PORTFOLIO_CONFIG" in UNSET_VARIABLES
    monkeypatch.setenv("PORTFOLIO_CONFIG", "/somewhere/mine.toml")
    assert "PORTFOLIO_CONFIG" not in PortfolioCli().environment()


@pytest.mark.parametrize("command", ["solve", "bench", "tradeoff", "tune", "backends",
                                     "check-plugin", "warmup"])
def test_every_command_that_reads_the_plugin_variable_names_it_in_its_help(command):
    out = CliRunner().invoke(cli, [command, "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert "PORTFOLIO_PLUGINS" in out.output, out.output


def test_iopddl_names_both_variables_it_reads():
    out = CliRunner().invoke(_iopddl, ["--help"], env={"COLUMNS": "200"})
    assert "PORTFOLIO_PLUGINS" in out.output and "PORTFOLIO_CONFIG" in out.output
    assert "only variable" not in out.output


def test_a_run_records_the_plugin_variable(small, tmp_path, portfolio_cli):
    path = tmp_path / "small.json"
    write_problem(small, path)
    done = portfolio_cli.configured(plugins="det_backends", path=[TESTS]).run(
        "solve", path, "-t", "5", "-b", "greedy", "--json", "-q")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["plugins_env"] == "det_backends"
    plain = portfolio_cli.run("solve", path, "-t", "5", "-b", "greedy", "--json", "-q")
    assert json.loads(plain.stdout)["plugins_env"] is None
