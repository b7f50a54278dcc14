"""``portfolio tradeoff``: the cost of a plan at a range of memory budgets, as a table, saved under
runs/ like a bench run (``portfolio report`` reads it), with ``--plot`` and ``--json``."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import ProblemError
from .app import EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .backends import option_flags
from .common import _emit_json, console

BUDGETS_HELP = ("Comma-separated budgets: integers in the problem's memory units, or fractions of "
                "its limit written with a point or a percent sign (0.9,1.0,1.1 or 90%,110%). "
                "Default: --points budgets from the least peak found to the peak of the cheapest "
                "plan, plus the file's limit when it lies between.")


def tradeoff_table(doc: dict) -> Any:
    """The rich table of a tradeoff document: one row per budget, the file's limit marked."""
    from rich.table import Table

    bound = doc["least_peak_bound"]["value"]
    table = Table(title=f"{doc['problem']}: cost against memory (certified least peak "
                        f"{'none' if bound is None else f'{bound:,}'})")
    for name in ("budget", "cost", "bound", "status", "peak", "found at", ""):
        table.add_column(name, justify="right" if name in ("budget", "cost", "bound", "peak")
                         else "left")
    fmt = lambda x: "-" if x is None else f"{x:,}"  # noqa: E731
    for r in doc["rows"]:
        style = {"optimal": "green", "infeasible": "magenta", "none": "yellow"}.get(r["status"], "")
        found = "" if r["found_at"] in (None, r["budget"]) else fmt(r["found_at"])
        table.add_row(fmt(r["budget"]), fmt(r["cost"]), fmt(r["bound"]),
                      f"[{style}]{r['status']}[/]" if style else r["status"], fmt(r["peak"]),
                      found, "<- the file's limit" if r["own_limit"] else "",
                      style="bold" if r["own_limit"] else None)
    return table


@cli.command()
@click.argument("problem", type=click.Path())
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True),
              help="Seconds for the whole tradeoff, split over its budgets. Default 60.")
@click.option("--budgets", help=BUDGETS_HELP)
@click.option("--points", type=click.IntRange(min=2), default=8, show_default=True,
              help="Budgets of the default range.")
@click.option("--backends", "-b", help="Comma-separated backend names (default: the default set).")
@click.option("--workers", "-w", type=click.IntRange(min=1), help="Cores the backends share.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the rows as one JSON document.")
@click.option("--plot", is_flag=True, help="Draw the cost curve (PNG, SVG) into the run's plots/.")
@click.option("--name", help="Run folder under --runs-dir (default: tradeoff-INSTANCE-DATE-TIME); "
              "an existing one is refused.")
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--no-save", is_flag=True, help="Do not save the rows under --runs-dir.")
@click.option("--quiet", "-q", is_flag=True, help="No table on stderr.")
@option_flags
def tradeoff(problem: str, time_limit: float | None, budgets: str | None, points: int,
             backends: str | None, workers: int | None, seed: int, as_json: bool, plot: bool,
             name: str | None, runs_dir: str, no_save: bool, quiet: bool,
             assignments: tuple[str, ...], config: str | None) -> None:
    """Solve PROBLEM at a range of memory budgets under one time limit and print the cost at each
    (verified plans, lower bounds, the file's own limit marked; docs/budgets.md).

    The curve is monotone: a plan that fits a budget fits every larger one, so each budget takes
    the cheapest plan found that fits it. Saved under --runs-dir like a bench run
    (`portfolio report runs/NAME` shows it, `--plot` draws it).
    """
    from ..api.tradeoff import tradeoff as run

    if plot and no_save:
        raise UserError("--plot draws into the saved run's folder: drop --no-save")

    def told(point: Any) -> None:
        if not quiet:
            console.print(f"budget {point.budget:,}: {point.status}"
                          + ("" if point.cost is None else f", cost {point.cost:,}")
                          + f" ({point.seconds:.1f} s)", highlight=False)

    try:
        doc = run(problem, time_limit=time_limit, budgets=budgets, points=points,
                  backends=backends, seed=seed, workers=workers,
                  runs_dir=None if no_save else runs_dir, name=name, plot=plot,
                  command=["portfolio", *sys.argv[1:]], on_point=told, config=config,
                  assignments=assignments)
    except ProblemError as exc:
        raise UserError(str(exc)) from None
    if not quiet:
        console.print(tradeoff_table(doc))
        if doc.get("folder"):
            console.print(f"saved: {doc['folder']} (portfolio report {doc['folder']})",
                          highlight=False)
        if doc.get("plots"):
            console.print(f"plots: {', '.join(doc['plots'])}", highlight=False)
    if as_json:
        _emit_json(doc)
    elif doc.get("folder"):
        click.echo(doc["folder"])
    sys.exit(EXIT_OK if any(r["plan"] is not None for r in doc["rows"]) else EXIT_NO_SOLUTION)
