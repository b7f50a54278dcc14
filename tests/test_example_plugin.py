"""The example third-party plugin (plugins/example-plugin): loads, lists, solves, installs as a package.

Nothing here installs into the running environment: the packaging test installs into a temporary
``--target`` folder and runs the CLI with that folder on PYTHONPATH, where importlib.metadata finds
the plugin's entry point just as it would in site-packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, bundled_example_path, reference_cost, skip_or_fail
from portfolio.evaluate import evaluate
from portfolio.io import load_problem
from portfolio.registry import Registry
from portfolio.options import RunOptions
from portfolio.runner import run_portfolio
from portfolio.testing import PortfolioCli

PLUGIN = REPO / "plugins" / "example-plugin"
OPTIMUM = 305  # of the bundled example


def _plugin(cli: PortfolioCli, folder: Path, named: bool = True, **extra: str) -> PortfolioCli:
    """Commands importing from ``folder`` (the plugin's source, or a pip target), with the plugin
    registered through ``PORTFOLIO_PLUGINS`` when ``named`` (else through its entry point)."""
    return cli.configured(path=[folder], plugins="portfolio_example_plugin" if named else None,
                          env=extra, timeout=60)


def _backend_rows(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return {row["name"]: row for row in json.loads(proc.stdout)["backends"]}


def test_backend_wins_a_portfolio_run_in_process(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    import portfolio_example_plugin

    backend = Registry(plugins=[portfolio_example_plugin], load_entry_points=False).get("example")
    result = run_portfolio(load_problem(bundled_example_path()), [backend],
                           RunOptions(time_limit=2.0))
    run = result.runs["example"]
    assert run.status.value == "feasible" and result.winner == "example"
    assert result.cost == OPTIMUM
    assert reference_cost(json.loads(bundled_example_path().read_text()),
                          result.solution.tolist()) == OPTIMUM


def test_listed_when_named_in_portfolio_plugins_without_installing(portfolio_cli):
    rows = _backend_rows(_plugin(portfolio_cli, PLUGIN).run("backends", "--json"))
    assert rows["example"]["available"] is True
    assert {"anytime", "warm_start", "reduced"} <= set(rows["example"]["capabilities"])


def test_the_plugins_own_tests_pass():
    # As its README says: `python -m pytest` in the plugin's folder, no install (its pyproject sets
    # pytest's pythonpath).
    env = PortfolioCli().environment()   # this environment, no terminal size, no plugin named
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
                          cwd=PLUGIN, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_installed_package_is_listed_and_solves(tmp_path, portfolio_cli):
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the repository.
    src = shutil.copytree(PLUGIN, tmp_path / "src", ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-input",
                          "--disable-pip-version-check", "--target", str(target), str(src)],
                         capture_output=True, text=True, timeout=300)
    if pip.returncode != 0 and "No matching distribution found for setuptools" in pip.stderr:
        skip_or_fail("pip cannot fetch setuptools for the isolated build (offline?)",
                     "pip must reach an index")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    cli = _plugin(portfolio_cli, target, named=False)

    rows = _backend_rows(cli.run("backends", "--json"))
    assert rows["example"]["package"] == "portfolio-example-plugin"
    assert rows["example"]["version"] == "0.1.0" and rows["example"]["available"] is True

    out = tmp_path / "result.json"
    proc = cli.run("solve", "--backends", "example", "-t", "3", "--json", "-q", "-o", out,
                   "--no-exhaustive")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["winner"] == "example" and doc["feasible"] is True
    assert [r["status"] for r in doc["backends"]] == ["feasible"]

    check = cli.run("evaluate", bundled_example_path(), out, "--json")
    assert check.returncode == 0, check.stderr
    ev = json.loads(check.stdout)
    assert ev["feasible"] is True and ev["cost"] == doc["cost"]
    assert evaluate(load_problem(bundled_example_path()), doc["solution"]).cost == doc["cost"]


def test_the_guides_smoke_test_runs_the_plugin(portfolio_cli):
    # docs/plugins.md, section 1: on the bundled example the runner would settle the 8 nodes by
    # scoring every plan; --no-exhaustive makes the example backend run, and its row says so.
    cli = _plugin(portfolio_cli, PLUGIN, COLUMNS="160")
    proc = cli.run("solve", "--backends", "example", "-t", "3", "--no-exhaustive")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stderr.splitlines() if "example" in line and "rounds" in line)
    assert "feasible" in row, proc.stderr
    assert "by example" in proc.stderr
    assert f"{OPTIMUM}" in proc.stderr

    settled = cli.run("solve", "--backends", "example", "-t", "3")
    assert settled.returncode == 0, settled.stderr
    assert "none started (example)" in settled.stderr
    assert "to run them anyway: --no-exhaustive" in settled.stderr
