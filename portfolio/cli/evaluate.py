"""``portfolio evaluate``: the exact cost and feasibility of a plan."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from ..evaluate import SolutionError, evaluate
from ..io import read_solution
from .app import EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .common import _emit_json, _read, console


def _render_evaluation(ev_dict: dict, title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    feasible = ev_dict["feasible"]
    table.add_row("cost", f"{ev_dict['cost']:,}")
    table.add_row("feasible", "[green]yes[/]" if feasible else "[red]NO[/]")
    limit = ev_dict["usage_limit"]
    table.add_row("peak usage", f"{ev_dict['peak_usage']:,} at t={ev_dict['peak_time']}" +
                  ("" if limit is None else f"  (limit {limit:,})"))
    if ev_dict["margin"] is not None:
        table.add_row("margin", f"{ev_dict['margin']:,} at t={ev_dict['tightest_time']}")
    if not feasible:
        table.add_row("violations", f"{ev_dict['violated_time_points']:,} time points, first at "
                      f"t={ev_dict['first_violation_time']}")
    forb = ev_dict["forbidden_node_choices"] + ev_dict["forbidden_edge_entries"]
    table.add_row("forbidden choices", ("[red]" if forb else "") +
                  f"{ev_dict['forbidden_node_choices']} node strategies, "
                  f"{ev_dict['forbidden_edge_entries']} edge entries")
    console.print(table)


@cli.command(name="evaluate")
@click.argument("problem", type=click.Path())
@click.argument("solution", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
def evaluate_cmd(problem: str, solution: str, as_json: bool) -> None:
    """Check SOLUTION on PROBLEM: exact cost, feasibility, peak memory, forbidden choices.

    PROBLEM may be an XLA request; SOLUTION is then in the request's node order. SOLUTION is a JSON list, a result file of `portfolio solve --json`, or contest output whose last
    non-empty line is `[s0, s1, ...]`. Exit code 0 when feasible, 1 when infeasible, 2 when malformed.
    """
    conversion, _ = _read(problem)
    prob = conversion.problem
    sol = read_solution(solution)
    try:
        if conversion.maps_nodes:  # a request with followers: the plan is in its own node order
            sol = conversion.restrict(sol)
        ev = evaluate(prob, sol)
    except SolutionError as exc:
        raise UserError(f"{solution}: {exc}") from None
    if as_json:
        _emit_json({"problem": prob.name, **ev.to_dict()})
    else:
        _render_evaluation(ev.to_dict(), f"{prob.name}: {solution}")
    sys.exit(EXIT_OK if ev.feasible else EXIT_NO_SOLUTION)
