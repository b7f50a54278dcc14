"""``portfolio info``: the size, structure and memory tightness of an instance."""

from __future__ import annotations

import click
import numpy as np
from rich.table import Table

from ..evaluate import min_usage_profile
from ..problem import FORBIDDEN, Problem
from .app import cli
from .common import _emit_json, _load, console


def problem_summary(problem: Problem) -> dict:
    """Size, structure and memory tightness of an instance."""
    counts = problem.strategy_counts
    times = problem.time_points
    floor = min_usage_profile(problem)
    peak_floor = int(floor.max()) if len(floor) else 0
    limit = problem.usage_limit
    nonempty = problem.interval_end > problem.interval_start
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
        "min_usage_peak": peak_floor,
        "memory_tightness": (peak_floor / limit) if limit else None,
    }


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
def info(problem: str, as_json: bool) -> None:
    """Show the size, structure and memory tightness of PROBLEM (contest or extended JSON, or an
    XLA request: .pb, .binpb, .textproto, .txtpb)."""
    prob, seconds = _load(problem)
    summary = problem_summary(prob)
    summary["load_seconds"] = round(seconds, 3)
    if as_json:
        _emit_json(summary)
        return
    table = Table(title=f"{summary['name']}  ({problem})", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    s = summary["strategies"]
    tight = summary["memory_tightness"]
    rows = [
        ("nodes", f"{summary['nodes']:,}"),
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
        ("min-usage peak", f"{summary['min_usage_peak']:,}"),
        ("memory tightness", "n/a" if tight is None else f"{tight:.3f}  (min-usage peak / limit)"),
        ("load time", f"{seconds:.2f} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
