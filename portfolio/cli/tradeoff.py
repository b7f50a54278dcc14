"""``portfolio tradeoff``: the cost of a plan at a range of memory budgets, as a table, saved under
runs/ like a bench run (``portfolio report`` reads it), with ``--plot`` and ``--json``."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import ProblemError
from .app import EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .backends import option_flags, reads_plugins
from .common import _emit_json, console

BUDGETS_HELP = ("Comma-separated budgets: integers in the problem's memory units, or fractions of "
                "its limit written with a point or a percent sign (0.9,1.0,1.1 or 90%,110%). "
                "Default: --points budgets gathered around the file's limit (0.9-1.5x, denser "
                "near it), with the least peak found and the unconstrained plan's peak as the ends.")


def _origin(point: Any) -> str:
    return {"unconstrained": "the no-limit run", "least-peak": "the least-peak plan"}.get(
        point.source, f"the run at budget {point.found_at:,}" if point.found_at else "another run")


def progress_line(point: Any) -> str:
    """What a budget's run found, or (``point.revised``) that a later, larger budget's run found a
    cheaper plan that fits it: the monotone rule takes that one, and the line says so, so that the
    last line of each budget and the table agree."""
    where = f"budget {point.budget:,}" + ("" if point.multiple is None else
                                          f" ({point.multiple:.3f}x the limit)")
    if point.revised and point.refuted:
        return f"{where}: now {point.cost:,}: {point.refuted}, and is taken"
    if point.revised:
        return (f"{where}: now {point.cost:,}: a cheaper plan of {_origin(point)} (peak "
                f"{point.peak:,}) fits it, and is taken")
    text = f"{where}: {point.status}" + ("" if point.cost is None else f", cost {point.cost:,}")
    if point.status == "infeasible" and point.proof:
        text += f" ({point.proof})"
    if point.claim:
        text += f" ({point.claim})"
    for false in point.false_bounds:
        text += f"; {false}: left out"
    if point.taken_over_run:
        own = "no plan" if point.run_cost is None else f"{point.run_cost:,}"
        text += (f"; the plan of {_origin(point)} (peak {point.peak:,}) fits and is cheaper than "
                 f"this run's answer ({own}): taken")
    return text + (f" ({point.seconds:.1f} s)" if point.seconds else "")


@cli.command()
@click.argument("problem", type=click.Path())
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True),
              help="Seconds for the whole tradeoff, split over its budgets. Default 60.")
@click.option("--budgets", help=BUDGETS_HELP)
@click.option("--points", type=click.IntRange(min=2), default=8, show_default=True,
              help="Default budgets in all, both ends included (the file's limit is always one).")
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
@reads_plugins
def tradeoff(problem: str, time_limit: float | None, budgets: str | None, points: int,
             backends: str | None, workers: int | None, seed: int, as_json: bool, plot: bool,
             name: str | None, runs_dir: str, no_save: bool, quiet: bool,
             assignments: tuple[str, ...], config: tuple[str, ...]) -> None:
    """Solve PROBLEM at a range of memory budgets under one time limit and print the cost at each
    (verified plans, lower bounds, the file's own limit marked; docs/budgets.md).

    The curve is monotone: a plan that fits a budget fits every larger one, so each budget takes
    the cheapest plan found that fits it (a progress line says when a larger budget's run gave
    one). The table adds each budget's multiple of the limit, its cost against the limit's, and
    the cost saved per extra GiB. Saved under --runs-dir like a bench run (`portfolio report
    runs/NAME` shows it, `--plot` draws it; --plot needs matplotlib, checked before solving).
    """
    from ..api.tradeoff import tradeoff as run

    if plot and no_save:
        raise UserError("--plot draws into the saved run's folder: drop --no-save")

    def told(point: Any) -> None:
        if not quiet:
            console.print(progress_line(point), highlight=False)

    try:
        doc = run(problem, time_limit=time_limit, budgets=budgets, points=points,
                  backends=backends, seed=seed, workers=workers,
                  runs_dir=None if no_save else runs_dir, name=name, plot=plot,
                  command=["portfolio", *sys.argv[1:]], on_point=told, config=list(config),
                  assignments=assignments)
    except ProblemError as exc:
        raise UserError(str(exc)) from None
    if not quiet:
        from ..report.tradeoff import tradeoff_table

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
