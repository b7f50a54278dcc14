"""``portfolio info``: the size, structure and memory tightness of an instance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import click
import numpy as np
from rich.table import Table

from ..leastpeak import least_usage_floor
from ..problem import FORBIDDEN, Problem
from .app import cli
from .common import _emit_json, _read, console

if TYPE_CHECKING:
    from ..adapters.conversion import Conversion


def problem_summary(problem: Problem, conversion: Optional[Conversion] = None) -> dict:
    """Size, structure and memory tightness of an instance; with the ``conversion`` it was read
    through, ``file`` says how the file's nodes became the problem's (None when they are the same).

    ``least_peak``: the certified floor of the least peak of a plan without forbidden choices (each
    live interval at its least usage among strategies whose node cost is not forbidden), with its
    time point: the ``trivial`` stage of the bound that ``portfolio solve`` explains an infeasible
    limit with (docs/budgets.md), which its later stages may raise."""
    counts = problem.strategy_counts
    times = problem.time_points
    floor = least_usage_floor(problem)
    limit = problem.usage_limit
    nonempty = problem.interval_end > problem.interval_start
    naming = None if conversion is None else conversion.naming
    return {
        "name": problem.name,
        "nodes": problem.num_nodes,
        "edges": problem.num_edges,
        "intervals": problem.num_intervals,
        "strategies": {
            "total": int(counts.sum()),
            "min": int(counts.min()) if len(counts) else 0,
            "mean": round(float(counts.mean()), 3) if len(counts) else 0.0,
            "max": int(counts.max(initial=0)),
        },
        "single_strategy_nodes": int(np.count_nonzero(counts == 1)),
        "forbidden_node_strategies": int(np.count_nonzero(problem.node_costs == FORBIDDEN)),
        "edge_table_entries": int(len(problem.edge_costs)),
        "forbidden_edge_entries": int(np.count_nonzero(problem.edge_costs == FORBIDDEN)),
        "edge_arity": {str(a): int(c) for a, c in zip(*np.unique(problem.edge_arity, return_counts=True))},
        "time_horizon": ([int(problem.interval_start.min()), int(problem.interval_end.max())]
                         if problem.num_intervals else [0, 0]),
        "zero_length_intervals": int(np.count_nonzero(~nonempty)),
        "distinct_time_points": int(len(times)),
        "usage_limit": limit,
        "least_peak": {"value": floor.value, "time": floor.time, "method": "trivial",
                       "why": floor.why if naming is None else naming.rewrite(floor.why)},
        "memory_tightness": (floor.value / limit) if limit and floor.value is not None else None,
        "file": _file_summary(conversion),
    }


def _file_summary(conversion: Optional[Conversion]) -> Optional[dict]:
    """The file's own node count and what reading it folded (a request: followers into their
    leaders, alias pairs into edges), or None when its nodes and edges are the problem's."""
    if conversion is None or conversion.naming.is_identity:
        return None
    naming = conversion.naming
    aliases = 0 if naming.edge_source is None else int(np.count_nonzero(naming.edge_source < 0))
    return {"nodes": naming.file_nodes,
            "followers": naming.file_nodes - conversion.problem.num_nodes,
            "alias_edges": aliases, "named": naming.names is not None}


def _limit_text(problem: Problem) -> str:
    """'unlimited', or how the capacity of an extended (presolved) problem varies over time."""
    cap = problem.capacity
    if cap.is_unlimited:
        return "unlimited"
    return (f"varies over time: {len(cap.values):,} pieces from t={int(cap.times[0]):,}, "
            f"{int(cap.values.min()):,} to {int(cap.values.max()):,}")


@cli.command()
@click.argument("problem", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
@click.option("--features", "with_features", is_flag=True,
              help="Also compute the instance features (docs/features.md; presolve included) "
                   "and how long each step took.")
def info(problem: str, as_json: bool, with_features: bool) -> None:
    """Show the size, structure and memory tightness of PROBLEM (contest or extended JSON, or an
    XLA request: .pb, .binpb, .textproto, .txtpb)."""
    conversion, seconds = _read(problem)
    prob = conversion.problem
    summary = problem_summary(prob, conversion)
    summary["load_seconds"] = round(seconds, 3)
    if with_features:
        from .features import features_summary

        summary["features"] = features_summary(prob, seconds)
    if as_json:
        _emit_json(summary)
        return
    table = Table(title=f"{summary['name']}  ({problem})", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    s = summary["strategies"]
    tight = summary["memory_tightness"]
    least = summary["least_peak"]
    if least["value"] is None:
        least_text = f"none: no plan without forbidden choices ({least['why']})"
    else:
        least_text = (f"at least {least['value']:,}" + ("" if least["time"] is None else
                                                         f" at t={least['time']:,}")
                      + "  (certified, trivial stage: each live interval at its least usage "
                        "over strategies not forbidden)")
    rows = [
        ("nodes", f"{summary['nodes']:,}" + _file_text(summary["file"])),
        ("edges", f"{summary['edges']:,}  (arity: " +
         ", ".join(f"{k}: {v:,}" for k, v in summary["edge_arity"].items()) + ")"),
        ("strategies", f"{s['total']:,} total; per node min {s['min']} / mean {s['mean']} / max {s['max']}"),
        ("single-strategy nodes", f"{summary['single_strategy_nodes']:,}"),
        ("forbidden node strategies", f"{summary['forbidden_node_strategies']:,}"),
        ("edge table entries", f"{summary['edge_table_entries']:,} "
         f"({summary['forbidden_edge_entries']:,} forbidden)"),
        ("time horizon", f"[{summary['time_horizon'][0]:,}, {summary['time_horizon'][1]:,})"),
        ("distinct time points", f"{summary['distinct_time_points']:,} "
         f"({summary['zero_length_intervals']:,} zero-length intervals)"),
        ("usage limit", _limit_text(prob) if summary["usage_limit"] is None else f"{summary['usage_limit']:,}"),
        ("least peak", least_text),
        ("memory tightness", "n/a" if tight is None else f"{tight:.3f}  (least peak / limit)"),
        ("load time", f"{seconds:.2f} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    if with_features:
        from .features import features_table

        console.print(features_table(summary["features"]))


def _file_text(file: Optional[dict]) -> str:
    """``  (the file's 4 nodes: 1 follower folded into its leader)`` for a request."""
    if not file:
        return ""
    said = []
    if file["followers"]:
        s = "s" if file["followers"] > 1 else ""
        said.append(f"{file['followers']:,} follower{s} folded into {'their' if s else 'its'} leader{s}")
    if file["alias_edges"]:
        said.append(f"{file['alias_edges']:,} alias pair{'s' if file['alias_edges'] > 1 else ''} "
                    f"as edges")
    return f"  (the file's {file['nodes']:,} nodes" + (f": {', '.join(said)})" if said else ")")
