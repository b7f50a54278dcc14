"""Issue 34's target for plugin authors: a new plugin written from docs/plugins.md alone, in a fresh
virtual environment, passes the guide's smoke test and ``portfolio check-plugin``, and a plugin that
raises shows its whole traceback with ``--debug``.

The venv is made with ``python -m venv --without-pip`` (no network, no build): a ``.pth`` file adds
this environment's site-packages with ``site.addsitedir`` (so the installed portfolio, editable or
not, and its entry points are found there), and the new plugin is registered, uninstalled, through
``PORTFOLIO_PLUGINS`` as section 5 of the guide shows.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Only what docs/plugins.md documents: the hook (section 1), Backend/BackendMeta/Capabilities,
# time_left and the clock rule (section 2), safe_plan as the safe start (section 3), evaluate.
HOOK = '''
from portfolio.hookspecs import hookimpl

from .backend import MineBackend, RaisingBackend


@hookimpl
def portfolio_backends() -> list:
    return [MineBackend(), RaisingBackend()]
'''

BACKEND = '''
import time

import numpy as np

from portfolio.backend import Backend, BackendMeta, Capabilities, SolveResult, Status, time_left
from portfolio.evaluate import delta_cost, evaluate
from portfolio.runner.fallback import safe_plan


class MineBackend(Backend):
    name = "mine"
    description = "Safe start, then improving single-node moves that keep memory feasible"
    capabilities = Capabilities(anytime=True)
    meta = BackendMeta(engines=("numpy",), default=False)

    def solve(self, problem, deadline, seed, warm_start, report):
        stop = time.monotonic() + time_left(deadline)
        rng = np.random.default_rng(seed)
        plan = safe_plan(problem, max(0.05, 0.25 * (stop - time.monotonic())))
        best = evaluate(problem, plan)
        if not best.feasible:
            return SolveResult(Status.NO_SOLUTION, note="no start plan fits in memory")
        report(plan, "start")
        improved = True
        while improved and time.monotonic() < stop:
            improved = False
            for node in rng.permutation(problem.num_nodes).tolist():
                if time.monotonic() >= stop:
                    break
                for s in range(int(problem.strategy_counts[node])):
                    if delta_cost(problem, plan, node, s) < 0:
                        trial = plan.copy()
                        trial[node] = s
                        ev = evaluate(problem, trial)
                        if ev.feasible:
                            plan, best, improved = trial, ev, True
                            report(plan, "move")
        return SolveResult(Status.FEASIBLE, plan, note=f"cost {best.cost}")


class RaisingBackend(Backend):
    name = "mine-raises"
    description = "Raises from a helper, to see the traceback"
    meta = BackendMeta(default=False)

    def solve(self, problem, deadline, seed, warm_start, report):
        return self._helper(problem)

    def _helper(self, problem):
        raise ValueError(f"helper failed on {problem.num_nodes} nodes")
'''


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """(python of a fresh venv, environment with the new plugin registered)."""
    root = tmp_path_factory.mktemp("guide")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    target = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(target, "parent-environment.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    package = root / "mine" / "mine_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(HOOK))
    (package / "backend.py").write_text(textwrap.dedent(BACKEND))
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "PYTHONPATH", "VIRTUAL_ENV", "PORTFOLIO_PLUGINS")}
    env.update(PYTHONPATH=str(root / "mine"), PORTFOLIO_PLUGINS="mine_plugin", COLUMNS="140")
    return python, env


def _portfolio(fresh, *args: str) -> subprocess.CompletedProcess:
    python, env = fresh
    return subprocess.run([str(python), "-m", "portfolio", *args], env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300)


def test_a_new_plugin_is_listed_from_a_fresh_venv(fresh):
    proc = _portfolio(fresh, "backends", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["backends"]}
    assert rows["mine"]["available"] and rows["mine"]["default"] is False
    assert str(fresh[0].parent.parent) not in rows["greedy"]["loaded_from"]  # the parent's portfolio


def test_the_smoke_test_runs_the_new_plugin(fresh):
    proc = _portfolio(fresh, "solve", "--backends", "mine", "-t", "4", "--no-exhaustive")
    assert proc.returncode == 0, proc.stderr
    assert "by mine" in proc.stderr and "none started" not in proc.stderr
    row = next(line for line in proc.stderr.splitlines() if "mine" in line and "cost " in line)
    assert "feasible" in row, proc.stderr   # its row: status and its own note


@pytest.mark.slow
def test_the_new_plugin_passes_check_plugin(fresh):
    proc = _portfolio(fresh, "check-plugin", "mine", "-t", "3")
    assert proc.returncode == 0, proc.stderr
    assert "check-plugin mine: no breach" in proc.stderr


def test_a_raising_plugins_traceback_shows_with_debug(fresh):
    proc = _portfolio(fresh, "solve", "--backends", "mine-raises,mine", "-t", "4",
                      "--no-exhaustive", "--debug")
    assert proc.returncode == 0, proc.stderr
    assert "traceback of mine-raises" in proc.stderr
    assert "in _helper" in proc.stderr and "ValueError: helper failed on 8 nodes" in proc.stderr
    checked = _portfolio(fresh, "check-plugin", "mine-raises", "-t", "3", "--json")
    assert checked.returncode == 1
    outcome = json.loads(checked.stdout)["backends"][0]["instances"][0]
    assert "in _helper" in outcome["traceback"]
    assert outcome["breaches"][0]["check"] == "runs"
