"""``portfolio.testing``'s helpers for a plugin's tests (and this suite's): the command runner and
its pytest fixture, and the CPU hog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from portfolio.testing import PortfolioCli, cpu_hog


def test_a_command_gets_this_environment_less_what_would_change_its_output(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "33")
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "from_the_shell")
    monkeypatch.setenv("PYTHONPATH", "/earlier")
    monkeypatch.setenv("PORTFOLIO_TEST_DROP", "x")
    monkeypatch.setenv("PORTFOLIO_TEST_KEEP", "kept")
    monkeypatch.chdir(tmp_path)
    cli = PortfolioCli(plugins="mine", path=["sub"], env={"PORTFOLIO_TEST_DROP": None,
                                                         "PORTFOLIO_TEST_ADD": "1"})
    env = cli.environment({"PORTFOLIO_TEST_CALL": "2"})
    assert "COLUMNS" not in env and "PORTFOLIO_TEST_DROP" not in env
    assert env["PORTFOLIO_PLUGINS"] == "mine" and env["PORTFOLIO_TEST_KEEP"] == "kept"
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "sub"), "/earlier"])
    assert (env["PORTFOLIO_TEST_ADD"], env["PORTFOLIO_TEST_CALL"]) == ("1", "2")
    assert "PORTFOLIO_PLUGINS" not in PortfolioCli().environment()   # the shell's is not passed on


def test_the_fixture_runs_the_installed_command_in_tmp_path(portfolio_cli, tmp_path):
    done = portfolio_cli.run("solve", "-q", "--json", "-o", "result.json")  # a relative file
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cost"] == 305            # the bundled example's optimum
    assert json.loads((tmp_path / "result.json").read_text())["cost"] == 305
    assert Path(done.args[0]) == Path(sys.executable).with_name("portfolio")
    assert 0 < done.seconds < 60
    missing = portfolio_cli.iopddl("missing.json", "5")
    assert missing.returncode == 2 and Path(missing.args[0]).name == "iopddl"
    assert [line for line in missing.stderr.splitlines() if line.strip()] == [
        line for line in missing.stderr.splitlines() if line.startswith("error:")] != []


def test_a_plugins_tests_get_the_fixture_by_naming_the_module(tmp_path):
    """docs/plugins.md, section 5: ``pytest_plugins = ["portfolio.testing"]`` in a conftest."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["portfolio.testing"]\n')
    (tmp_path / "test_mine.py").write_text(textwrap.dedent('''
        import json

        def test_backends(portfolio_cli, tmp_path):
            done = portfolio_cli.run("backends", "--json")
            assert done.returncode == 0, done.stderr
            assert "greedy" in {b["name"] for b in json.loads(done.stdout)["backends"]}
            assert portfolio_cli.cwd == tmp_path
    '''))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=PortfolioCli().environment())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_the_cpu_hog_runs_during_the_block_only():
    with cpu_hog(processes=2, settle=0.05) as hogs:
        assert len(hogs) == 2 and all(h.poll() is None for h in hogs)
        assert all(h.args[-1] == "while True: pass" for h in hogs)
    assert all(h.poll() is not None for h in hogs)
