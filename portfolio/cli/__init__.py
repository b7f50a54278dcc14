"""The ``portfolio`` and ``iopddl`` commands: parse arguments, call the library, render results.

Human-readable output goes to stderr (rich); machine-readable output (contest solution lines, JSON)
goes to stdout, so ``portfolio solve x.json > plan.txt`` captures exactly the answer.
Exit codes: 0 success / feasible, 1 infeasible or no solution, 2 bad input or usage, 130 / 143
when SIGINT (Ctrl-C) / SIGTERM ended `solve` or `iopddl` early: the best verified plan found so far
is printed at once all the same (`[]` when there is none).

The package: ``app`` (the group, exit codes, one-line errors), ``common`` (what the commands share),
one module per command or family (``info``, ``evaluate``, ``solve`` with ``iopddl``, ``warmup``,
``backends``, ``check_plugin``, ``presolve``, ``generate``, ``convert``, ``bench``, ``report``, ``tradeoff``,
``tune``, ``learn``, ``shard``: a PyTorch model to a plan through :mod:`portfolio.frontends.torch`).
Importing it registers every command on the group; each module imports only light things at
load, the heavy ones (runner, presolve, registry, numba) inside its command.
"""

from __future__ import annotations

from . import (  # noqa: F401 -- register the commands
    bench, check_plugin, convert, evaluate, generate, info, learn, presolve, report, shard, tradeoff,
    tune,
    warmup,
)
from .app import EXIT_BAD_INPUT, EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .backends import _select_backends
from .common import bundled_example, console
from .info import problem_summary
from .solve import _iopddl, run_solve

__all__ = ["EXIT_BAD_INPUT", "EXIT_NO_SOLUTION", "EXIT_OK", "UserError", "_iopddl", "_select_backends",
           "bundled_example", "cli", "console", "iopddl_main", "main", "problem_summary", "run_solve"]


def main() -> None:
    """Entry point of the ``portfolio`` command."""
    cli(prog_name="portfolio")


def iopddl_main() -> None:
    """Entry point of the ``iopddl`` command."""
    _iopddl(prog_name="iopddl")
