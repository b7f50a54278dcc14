"""``portfolio check-plugin NAME``: a backend (or every backend of a plugin) run through the contract
on a few small instances; the tables on stderr (or ``--json`` on stdout); exit 1 on any breach."""

from __future__ import annotations

import sys

import click

from .app import EXIT_OK, UserError, cli
from .backends import reads_plugins
from .common import _emit_json, console

EXIT_BREACH = 1
"""The exit code when the check found a breach (as a test runner's failure)."""


@cli.command(name="check-plugin")
@click.argument("name")
@click.option("--time-limit", "-t", type=click.FloatRange(min=2), default=5.0, show_default=True,
              help="Seconds per instance (the backend's deadline falls about 1.3 s before).")
@click.option("--memory-limit", metavar="SIZE", default="1G", show_default=True,
              help="Memory cap of the backend (everything it starts included); 'none' for no cap.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON on stdout.")
@reads_plugins
def check_plugin(name: str, time_limit: float, memory_limit: str, as_json: bool) -> None:
    """Run backend NAME (or every backend of the plugin NAME) through the contract of
    docs/plugins.md on four small instances: the bundled example, one whose least-memory plan takes
    forbidden entries, a generated one with tight memory, and one where no plan fits.

    A breach is named per check and instance: the plugin's registration (hook, names,
    available()), an exception or crash, a run past its deadline, output on stdout, a plan or
    message the runner refuses, a forbidden choice where a clean plan exists, a false claim
    (optimal, infeasible, a bound above a known cost). Exit 0 with no breach, 1 with one, 2 when
    NAME is unknown or cannot run here.
    """
    from ..errors import ProblemError
    from ..plugincheck import check_backend
    from ..plugincheck.report import renderables
    from ..runner.contain import parse_size

    try:
        cap = parse_size(memory_limit)
    except ValueError as exc:
        raise UserError(f"--memory-limit: {exc}") from None
    try:
        report = check_backend(name, time_limit=time_limit, memory_limit=cap)
    except ProblemError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        _emit_json(report.to_dict())
    else:
        for item in renderables(report):
            console.print(item, highlight=False)
    sys.exit(EXIT_OK if report.ok else EXIT_BREACH)
