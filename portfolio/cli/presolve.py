"""``portfolio presolve``: the exact reductions of an instance, one switch per family."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.table import Table

from .app import EXIT_NO_SOLUTION, EXIT_OK, cli
from .common import _emit_json, _read, _refuse_overwrite, console

_PRESOLVE_FLAGS = (
    ("forbidden", "remove strategies of node cost 10**18"),
    ("arc-consistency", "remove strategies without an allowed partner on some edge"),
    ("functional", "fold nodes determined by a neighbour (functional edges) into it"),
    ("edge-tables", "sum parallel edges, fold row/column minima, delete all-zero edges"),
    ("single", "fold single-strategy nodes into neighbours, offset and capacity"),
    ("dominance", "remove dominated and duplicate strategies"),
    ("memory-free", "eliminate memory-free nodes of degree 0, 1 and 2"),
    ("time-points", "keep only maximal-clique time points that can be violated"),
    ("memory-bounds", "remove strategies that overflow memory in every plan"),
)


def _presolve_options(fn: Any) -> Any:
    for name, what in reversed(_PRESOLVE_FLAGS):
        fn = click.option(f"--no-{name}", f"no_{name.replace('-', '_')}", is_flag=True,
                          help=f"Do not {what}.")(fn)
    return fn


@cli.command(name="presolve")
@click.argument("problem", type=click.Path())
@click.option("--write", "write_path", type=click.Path(),
              help="Write the reduced problem here (extended JSON, gzip when the name ends in .gz).")
@click.option("--force", is_flag=True, help="Overwrite the --write file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@_presolve_options
def presolve_cmd(problem: str, write_path: str | None, force: bool, as_json: bool, **flags: bool) -> None:
    """Reduce PROBLEM exactly and show its size before and after each reduction.

    Every plan of the reduced problem maps back to a plan of the original with the same cost and
    feasibility; an optimal reduced plan maps to an optimal one. Exit code 0, or 1 when a reduction
    proves that no feasible plan avoids forbidden choices.

    --write uses an extension of the contest format (the contest format cannot hold several
    intervals per node, capacity over time or a constant cost):
    {"format": "iopddl-portfolio-extended/1", "problem": {"name": ..., "nodes": {"intervals":
    [[[start, end], ...] per node], "costs": [[...] per node], "usages": [[[usage per strategy] per
    interval] per node]}, "edges": {"nodes": [[u, v], ...], "costs": [[...], ...]}, "capacity":
    {"times": [...], "values": [...]}, "cost_offset": N}}. Capacity values[k] holds from times[k]
    until times[k+1]; before times[0] usage is unlimited. `info`, `solve` and `evaluate` read such a
    file like a contest file (its plans are plans of the reduced problem).
    """
    from ..presolve import presolve, write_extended

    _refuse_overwrite(write_path, force)
    conversion, load_s = _read(problem)
    prob = conversion.problem
    switches = {name.replace("-", "_"): not flags[f"no_{name.replace('-', '_')}"]
                for name, _ in _PRESOLVE_FLAGS}
    pre = presolve(prob, **switches)
    # the proof names nodes of the problem as read: in the file's numbering for the user
    infeasible = conversion.naming.rewrite(pre.infeasible, prob.num_nodes)
    report = {"problem": prob.name, "load_seconds": round(load_s, 3), **pre.report,
              "infeasible": infeasible}
    if write_path and pre.reduced is not None:
        write_extended(pre.reduced, write_path)
        report["written"] = str(write_path)
    if as_json:
        _emit_json(report)
    else:
        table = Table(title=f"presolve {prob.name}  ({problem})", title_justify="left")
        for col in ("", "before", "after"):
            table.add_column(col, justify="right" if col else "left")
        after = pre.report["after"] or {}
        for key in ("nodes", "free_nodes", "strategies", "edges", "edge_entries", "intervals",
                    "time_points"):
            table.add_row(key.replace("_", " "), f"{pre.report['before'][key]:,}",
                          f"{after[key]:,}" if key in after else "-")
        console.print(table)
        counts = Table(title="reductions", show_header=False, title_justify="left")
        counts.add_column(style="bold")
        counts.add_column(justify="right")
        for key, value in pre.report["reductions"].items():
            counts.add_row(key.replace("_", " "), f"{value:,}")
        console.print(counts)
        if pre.report.get("magnitude_guard"):
            console.print("[yellow]costs too large for exact folding: cost-combining reductions off[/]")
        if pre.infeasible:
            console.print(f"[magenta]infeasible:[/] {infeasible}", highlight=False)
        else:
            console.print(f"offset {pre.offset:,}; {pre.report['rounds']} rounds in "
                          f"{pre.report['seconds']:.2f} s" +
                          (f"; wrote {write_path}" if write_path else ""), highlight=False)
    sys.exit(EXIT_NO_SOLUTION if pre.infeasible else EXIT_OK)
