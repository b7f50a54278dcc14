"""Helpers for a plugin's own tests (as pytest ships ``pytester``): the check of
``portfolio check-plugin`` as a function and as an assertion; the command line run as a real
process (:class:`PortfolioCli`, and the pytest fixture ``portfolio_cli``); a CPU hog
(:func:`cpu_hog`), to show that a deterministic backend answers the same on a loaded machine.

    from portfolio.testing import assert_backend_passes
    from my_plugin import MyBackend

    def test_my_backend_keeps_the_contract():
        assert_backend_passes(MyBackend())      # an object: no install needed

    # conftest.py: the fixture (pytest imports this module as a plugin)
    pytest_plugins = ["portfolio.testing"]

    def test_my_backend_from_the_command_line(portfolio_cli):
        done = portfolio_cli.configured(plugins="my_plugin", path=[MY_PLUGIN_FOLDER]).run(
            "solve", "-b", "mine", "-t", "5", "--json")
        assert done.returncode == 0, done.stderr

POSIX only (the check runs the real runner: forked workers).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from .plugincheck import CHECKS, CheckReport, check_backend

__all__ = ["CHECKS", "CheckReport", "CliResult", "PortfolioCli", "assert_backend_passes",
           "check_backend", "cpu_hog"]

PathLike = Union[str, Path]


def assert_backend_passes(target: Union[str, Any], **options: Any) -> CheckReport:
    """:func:`check_backend` (same arguments), raising ``AssertionError`` with the check's tables
    when it found a breach; returns the report otherwise."""
    report = check_backend(target, **options)
    if not report.ok:
        raise AssertionError(f"{len(report.breaches)} breach(es) of the backend contract:\n"
                             + report.text())
    return report


# ------------------------------------------------------------------------------------------ CPU hog
@contextmanager
def cpu_hog(processes: int = 1, settle: float = 0.2) -> Iterator[list[subprocess.Popen]]:
    """``processes`` interpreters spinning on the CPU for the duration of the block (one takes one
    core: on a two-core machine, half of what a run under test would get), started ``settle``
    seconds before the block and killed after it, whatever happens inside."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL) for _ in range(processes)]
    try:
        time.sleep(settle)
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


# ------------------------------------------------------------------------------------------ commands
class CliResult(subprocess.CompletedProcess):
    """A finished command: ``args``, ``returncode``, ``stdout`` and ``stderr`` (text), and the
    wall-clock ``seconds`` it took from its start."""

    def __init__(self, args: list, returncode: int, stdout: str, stderr: str,
                 seconds: float) -> None:
        super().__init__(args, returncode, stdout, stderr)
        self.seconds = seconds


UNSET_VARIABLES = ("COLUMNS", "LINES", "PORTFOLIO_PLUGINS", "PORTFOLIO_CONFIG")
"""Left out of a command's environment: no terminal size (deterministic output, as in a pipe), no
plugin module and no config file the caller's shell happened to name (``plugins`` says which
modules; ``env={"PORTFOLIO_CONFIG": ...}`` gives a config)."""


@dataclasses.dataclass(frozen=True)
class PortfolioCli:
    """Runs ``portfolio ...`` and ``iopddl ...`` as real processes, the way a user or a harness
    does: the console scripts installed beside this interpreter (so the package under test, an
    editable install's checkout included), no TTY on stdin, output captured as text.

    ``cwd``: the working directory (None: this process's); ``plugins``: plugin modules registered
    through ``PORTFOLIO_PLUGINS`` (comma-separated), importable from ``path`` (put before
    ``PYTHONPATH``, relative folders taken from this process's working directory); ``env``: more variables (a value of None removes one); ``timeout``: seconds
    after which a command is killed and ``subprocess.TimeoutExpired`` raised. Every setting can
    also be given to one call; :meth:`configured` makes a copy with others."""

    cwd: Optional[PathLike] = None
    plugins: Optional[str] = None
    path: Sequence[PathLike] = ()
    env: Mapping[str, Optional[str]] = dataclasses.field(default_factory=dict)
    timeout: float = 120.0

    def configured(self, **changes: Any) -> "PortfolioCli":
        """A copy with ``changes`` (``cwd``, ``plugins``, ``path``, ``env``, ``timeout``)."""
        return dataclasses.replace(self, **changes)

    @staticmethod
    def command(program: str = "portfolio") -> list[str]:
        """The console script ``program`` beside this interpreter, else on ``PATH``."""
        beside = Path(sys.executable).with_name(program)
        if beside.is_file():
            return [str(beside)]
        found = shutil.which(program)
        if found is None:
            raise FileNotFoundError(f"console script {program!r} is not installed beside "
                                    f"{sys.executable} nor on PATH: install iopddl-portfolio "
                                    f"into this environment (pip install -e .)")
        return [found]

    def environment(self, env: Optional[Mapping[str, Optional[str]]] = None) -> dict[str, str]:
        """This process's environment as a command gets it (see the class and
        ``UNSET_VARIABLES``), with ``env`` on top of the runner's own ``env``."""
        out = {k: v for k, v in os.environ.items() if k not in UNSET_VARIABLES}
        if self.plugins:
            out["PORTFOLIO_PLUGINS"] = self.plugins
        if self.path:
            out["PYTHONPATH"] = os.pathsep.join(   # relative folders: from this process's cwd
                [os.path.abspath(p) for p in self.path]
                + ([out["PYTHONPATH"]] if out.get("PYTHONPATH") else []))
        for key, value in {**self.env, **(env or {})}.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = str(value)
        return out

    def run(self, *args: Any, program: str = "portfolio", cwd: Optional[PathLike] = None,
            env: Optional[Mapping[str, Optional[str]]] = None,
            timeout: Optional[float] = None, stdin: Optional[str] = None) -> CliResult:
        """Run ``program *args`` to its end (``stdin``: text to feed it; none: no input)."""
        argv = self.command(program) + [str(a) for a in args]
        t0 = time.monotonic()
        done = subprocess.run(argv, input=stdin,
                              stdin=subprocess.DEVNULL if stdin is None else None,
                              capture_output=True, text=True, env=self.environment(env),
                              cwd=self.cwd if cwd is None else cwd,
                              timeout=self.timeout if timeout is None else timeout)
        return CliResult(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - t0)

    def iopddl(self, *args: Any, **options: Any) -> CliResult:
        """``iopddl *args`` (the contest drop-in), as :meth:`run` runs ``portfolio``."""
        return self.run(*args, program="iopddl", **options)

    def popen(self, *args: Any, program: str = "portfolio", cwd: Optional[PathLike] = None,
              env: Optional[Mapping[str, Optional[str]]] = None, **popen: Any) -> subprocess.Popen:
        """Start ``program *args`` without waiting (to signal it, or watch it run); stdout and
        stderr are pipes of text unless ``popen`` says otherwise (``subprocess.Popen``'s
        keywords). The caller ends it and reads it (``communicate``)."""
        options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
                                   "stderr": subprocess.PIPE, "text": True}
        options.update(popen)
        return subprocess.Popen(self.command(program) + [str(a) for a in args],
                                cwd=self.cwd if cwd is None else cwd, env=self.environment(env),
                                **options)


try:   # the fixture, for ``pytest_plugins = ["portfolio.testing"]``; pytest is a test extra
    import pytest
except ImportError:  # pragma: no cover -- outside a test environment the rest still works
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    @pytest.fixture
    def portfolio_cli(tmp_path: Path) -> PortfolioCli:
        """A :class:`PortfolioCli` working in the test's own ``tmp_path`` (as ``pytester`` does):
        whatever a command writes beside itself stays there."""
        return PortfolioCli(cwd=tmp_path)
