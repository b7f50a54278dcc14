"""Leaderboards from ``portfolio bench`` results: contest points, reference teams, gaps, plots.

This package reads result files (``runs/NAME/results.jsonl`` and ``meta.json``, through
:mod:`portfolio.results`) and the shipped contest data, and knows nothing of solving: a run from
another machine or from last year renders the same. ``leaderboard`` reads runs and scores them (the
contest rules are described there), ``render`` draws a leaderboard as a table, markdown, CSV or JSON,
``plots`` draws convergence and points charts. Everything public is importable from here.
"""

from .leaderboard import (
    FAILED,
    META,
    RESULTS,
    Cell,
    Entry,
    InstanceInfo,
    Leaderboard,
    Outcome,
    ReportError,
    Row,
    RunData,
    build,
    contest_entries,
    contest_points,
    entries_from_runs,
    load_run,
    min_costs,
    outcome_of,
    points,
    score,
)
from .plots import plot_runs, write_plots
from .render import fmt_cost, render_csv, render_markdown, render_table, to_json

__all__ = [
    "FAILED", "META", "RESULTS", "Cell", "Entry", "InstanceInfo", "Leaderboard", "Outcome",
    "ReportError", "Row", "RunData", "build", "contest_entries", "contest_points", "entries_from_runs",
    "fmt_cost", "load_run", "min_costs", "outcome_of", "plot_runs", "points", "render_csv",
    "render_markdown", "render_table", "score", "to_json", "write_plots",
]
