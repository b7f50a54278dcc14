"""``portfolio evaluate``: the exact cost and feasibility of a plan, in the file's own terms.

A plan of an XLA request is read in the request's node order, and everything the report names is
in the request's terms too (:class:`~portfolio.adapters.naming.NodeNaming`): the nodes at the peak
(a follower with its own usage), the forbidden choices (a node by its index and instruction name,
an alias pair as ``alias k``), and the cost in the request's units beside the scaled integer one.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
import numpy as np
from rich.table import Table

from ..adapters.naming import entry_label
from ..evaluate import Evaluation, SolutionError, as_solution, evaluate, forbidden_choices
from ..io import read_solution
from .app import EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .common import _emit_json, _read, console

if TYPE_CHECKING:
    from ..adapters.conversion import Conversion

NAMED = 5
"""Forbidden choices named one by one (of each kind); the counts say how many there are."""


def _render_evaluation(ev_dict: dict, title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    feasible = ev_dict["feasible"]
    table.add_row("cost", f"{ev_dict['cost']:,}")
    request = ev_dict.get("request")
    if request is not None and (request["cost_scale"] != 1 or request["cost_error_bound"]):
        table.add_row("request cost", f"{request['cost']:.10g}  (scale {request['cost_scale']:g}, "
                                      f"rounding within {request['cost_error_bound']:.3g})")
    table.add_row("feasible", "[green]yes[/]" if feasible else "[red]NO[/]")
    limit = ev_dict["usage_limit"]
    table.add_row("peak usage", f"{ev_dict['peak_usage']:,} at t={ev_dict['peak_time']}" +
                  ("" if limit is None else f"  (limit {limit:,})"))
    if ev_dict.get("peak_nodes"):
        table.add_row("at the peak", "nodes " + ", ".join(f"{entry_label(n)}: {n['usage']:,}"
                                               for n in ev_dict["peak_nodes"]))
    if ev_dict["margin"] is not None:
        table.add_row("margin", f"{ev_dict['margin']:,} at t={ev_dict['tightest_time']}")
    if not feasible:
        table.add_row("violations", f"{ev_dict['violated_time_points']:,} time points, first at "
                      f"t={ev_dict['first_violation_time']}")
    forb = ev_dict["forbidden_node_choices"] + ev_dict["forbidden_edge_entries"]
    table.add_row("forbidden choices", ("[red]" if forb else "") +
                  f"{ev_dict['forbidden_node_choices']} node strategies, "
                  f"{ev_dict['forbidden_edge_entries']} edge entries")
    for item in ev_dict.get("forbidden", []):
        table.add_row("", _forbidden_text(item))
    console.print(table)


def _forbidden_text(item: dict) -> str:
    if "node" in item:
        return f"node {entry_label(item)}: strategy {item['strategy']}"
    if item["nodes"] is None:
        return f"{item['kind']} {item['index']}"
    return (f"{item['kind']} {item['index']} on nodes {', '.join(map(str, item['nodes']))}: "
            f"strategies {', '.join(map(str, item['strategies']))}")


def plan_report(conversion: Conversion, solution: Any, ev: Evaluation) -> dict:
    """What the report adds to the evaluation, in the file's terms: ``peak_nodes`` (the largest
    users at the peak), ``forbidden`` (the first forbidden choices, named) and, for a file in other
    units or numbering (a request), ``request`` (its node count, the cost in its units)."""
    from ..memory.peak import peak_report

    prob, naming = conversion.problem, conversion.naming
    sol = as_solution(prob, solution)
    report = peak_report(prob, sol, naming=naming)
    nodes, edges = forbidden_choices(prob, sol)
    file_plan = conversion.expand(sol)
    forbidden: list[dict] = [{**naming.group(int(v)), "strategy": int(sol[v])}
                             for v in nodes[:NAMED].tolist()]
    for e in edges[:NAMED].tolist():
        doc = naming.edge(e, prob)
        plan = file_plan if naming.edge_source is not None else sol
        doc["strategies"] = None if doc["nodes"] is None else [int(plan[v]) for v in doc["nodes"]]
        forbidden.append(doc)
    out: dict = {"peak_nodes": report.to_dict()["top_nodes"], "forbidden": forbidden}
    if conversion.in_file_terms:
        out["request"] = {"nodes": len(conversion.node_of), "cost_scale": conversion.cost_scale,
                          "cost": conversion.request_cost(ev.cost),
                          "cost_error_bound": conversion.cost_error_bound}
    return out


@cli.command(name="evaluate")
@click.argument("problem", type=click.Path())
@click.argument("solution", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
@click.option("--cost-scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="For an XLA request: multiply its costs by this before "
              "rounding them to integers, as `portfolio solve --cost-scale` does.")
def evaluate_cmd(problem: str, solution: str, as_json: bool, cost_scale: float) -> None:
    """Check SOLUTION on PROBLEM: exact cost, feasibility, peak memory and who makes it,
    forbidden choices.

    PROBLEM may be an XLA request; SOLUTION is then in the request's node order, and the report
    names nodes by the request's indices and instruction names. SOLUTION is a JSON list, a result
    file of `portfolio solve --json`, or contest output whose last non-empty line is
    `[s0, s1, ...]`. Exit code 0 when feasible, 1 when infeasible, 2 when malformed.
    """
    conversion, _ = _read(problem, cost_scale)
    prob = conversion.problem
    sol = read_solution(solution)
    try:
        if conversion.maps_nodes:  # a request with followers: the plan is in its own node order
            sol = conversion.restrict(sol)
        ev = evaluate(prob, sol)
    except SolutionError as exc:
        raise UserError(f"{solution}: {exc}") from None
    doc = {"problem": prob.name, **ev.to_dict(), **plan_report(conversion, np.asarray(sol), ev)}
    if as_json:
        _emit_json(doc)
    else:
        _render_evaluation(doc, f"{prob.name}: {solution}")
    sys.exit(EXIT_OK if ev.feasible else EXIT_NO_SOLUTION)
