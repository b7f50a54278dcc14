"""The package as users receive it (issue 24): a wheel built with ``python -m build`` installs into a
fresh environment and runs there: the built-in backends registered and loaded from site-packages
(the engines they are built on with them), the bundled example found, and, with site-packages
read-only, the JIT kernels cached in the user's cache folder. Extras named in the README exist.

Slow (a build, a venv, an install and part of a warmup: about two minutes).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, fresh_checkout, skip_or_fail

NOBODY = 65534


def test_the_extras_the_readme_names_exist():
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    named = set(re.findall(r"pip install '(?:\.|iopddl-portfolio)\[(\w+)\]'", (REPO / "README.md").read_text()))
    assert named, "the README names no extra"
    assert named <= extras, f"README names extras {sorted(named - extras)} that pyproject lacks"


def _as_user(home: Path) -> tuple[list[str], dict]:
    """A command prefix and environment under which site-packages is read-only: another user when
    this is root (root ignores file modes), else this user after ``chmod``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "PORTFOLIO_PLUGINS", "NUMBA_CACHE_DIR", "VIRTUAL_ENV",
                        "PYTHONPATH", "PORTFOLIO_JIT_TRACE", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    if os.geteuid() == 0:
        os.chown(home, NOBODY, NOBODY)
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"], env
    return [], env


@pytest.mark.slow
def test_the_wheel_installs_and_runs_from_a_read_only_site(tmp_path):
    if os.geteuid() == 0 and subprocess.run(["which", "setpriv"], capture_output=True).returncode:
        skip_or_fail("running as root without setpriv: no way to make site-packages read-only",
                     "setpriv must be installed")
    repo = fresh_checkout(tmp_path)
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(repo)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = dist.glob("iopddl_portfolio-*.whl")

    # a folder another user can read (pytest's own tmp folder is private to this user)
    place = Path(tempfile.mkdtemp(prefix="portfolio-wheel-"))
    try:
        place.chmod(0o755)
        venv = place / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True,
                       capture_output=True, timeout=900)
        site = next((venv / "lib").glob("python3*/site-packages"))
        home = place / "home"
        home.mkdir()
        prefix, env = _as_user(home)
        if not prefix:
            subprocess.run(["chmod", "-R", "a-w", str(site)], check=True)

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([*prefix, str(venv / "bin" / "portfolio"), *args], cwd=home,
                                  env=env, capture_output=True, text=True, timeout=600,
                                  stdin=subprocess.DEVNULL)

        listed = run("backends", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {b["name"]: b for b in json.loads(listed.stdout)["backends"]}
        assert {"minusage", "greedy", "localsearch", "bound", "cpsat", "maxsat", "toulbar2",
                "mip"} <= set(rows)
        for name, row in rows.items():
            assert row["available"], (name, row["reason"])
            assert str(site) in row["loaded_from"], (name, row["loaded_from"])

        solved = run("solve", "--json", "-q")          # the bundled example, shipped in the wheel
        assert solved.returncode == 0, solved.stderr
        assert json.loads(solved.stdout)["cost"] == 305

        warm = run("warmup", "--backends", "minusage")  # the loader's and presolve's kernels
        assert warm.returncode == 0, warm.stderr
        assert "Traceback" not in warm.stderr and "warning" not in warm.stderr, warm.stderr
        cached = list((home / ".cache").rglob("*.nbi"))
        assert cached, f"no numba cache in the user's cache folder: {warm.stderr}"
        assert not list(site.rglob("*.nbi")), "numba wrote into the read-only site-packages"
        markers = list((home / ".cache" / "portfolio-jit").rglob("portfolio-compiled-presolve-*"))
        assert markers, "the compile marker of a read-only install belongs in the user's cache"
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(place)], check=False)
        subprocess.run(["rm", "-rf", str(place)], check=False)
