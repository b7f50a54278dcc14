"""Every command of the README runs as written (issue 15 item 8), so the README cannot drift again.

The ```bash blocks are extracted and each command line is run in a scratch folder laid out like a
checkout next to ``../shared/benchmarks`` (a small instance under a contest name plus the contest's
``example.json``, as in the real folder), with ``problem.json``, ``problem.json.gz`` and ``plan.txt``
at hand. Only the limits are made small, by the substitutions in :data:`SMALLER` (each one keeps the
command's meaning). The quick-start install lines (fresh venv, pip) are what ``.ci/run`` runs verbatim
in CI; here they are only checked to be the ones ``.ci/run`` runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, bundled_example_path

README = REPO / "README.md"

SMALLER = [
    (re.compile(r"(-t|--time-limit) 60\b"), r"\1 4"),             # solve budgets
    (re.compile(r"^(iopddl \S+) 60\b"), r"\1 5"),                  # the contest drop-in's timeout
    (re.compile(r"--nodes 30000\b"), "--nodes 300"),               # generate
]
"""(pattern, replacement) applied to each command; `portfolio solve` without a limit gets -t 4."""


DOCS = [(README, None), (REPO / "docs" / "bench.md", 1)]
"""Documents whose ```bash blocks are run: all of them, or the first N (docs/bench.md's second block
needs a Dask cluster)."""


def readme_commands() -> list[str]:
    lines = []
    for path, first in DOCS:
        blocks = re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S)[:first]
        lines += [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def is_install(command: str) -> bool:
    return "pip install" in command or "-m venv" in command


def smaller(command: str) -> str:
    for pattern, replacement in SMALLER:
        command = pattern.sub(replacement, command)
    if command.startswith("portfolio solve") and not re.search(r"(-t|--time-limit) ", command):
        command += " -t 4"
    return command


def test_readme_has_the_commands_we_run():
    commands = readme_commands()
    assert any(c.startswith("portfolio bench") for c in commands)
    assert any(c.startswith("iopddl ") for c in commands)
    ci = (REPO / ".ci" / "run").read_text()
    for command in filter(is_install, commands):  # the quick start, run verbatim by CI
        assert command in ci, f"README quick start {command!r} is not what .ci/run runs"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A scratch 'checkout' next to a small '../shared/benchmarks'."""
    from portfolio.generate import generate_problem
    from portfolio.io import load_problem, write_problem

    root = tmp_path_factory.mktemp("readme")
    bench = root / "shared" / "benchmarks"
    bench.mkdir(parents=True)
    write_problem(generate_problem(12, strategies=3, seed=1), bench / "asplos-2025-iopddl-A.json.gz")
    shutil.copy(bundled_example_path(), bench / "example.json")
    work = root / "work"
    work.mkdir()
    shutil.copy(bundled_example_path(), work / "problem.json")
    write_problem(load_problem(bundled_example_path()), work / "problem.json.gz")
    plan = load_problem(bundled_example_path()).min_usage_strategies
    (work / "plan.txt").write_text("[" + ", ".join(str(int(s)) for s in plan) + "]\n")
    return work


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in readme_commands() if not is_install(c)])
def test_readme_command_runs(checkout, command):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "PORTFOLIO_PLUGINS")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    run = smaller(command)
    proc = subprocess.run(["bash", "-c", run], cwd=checkout, capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=240)
    assert proc.returncode == 0, f"{run}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
