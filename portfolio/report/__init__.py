"""Leaderboards from ``portfolio bench`` results: contest points, reference teams, gaps, plots.

This package reads result files (``runs/NAME/results.jsonl`` and ``meta.json``, through
:mod:`portfolio.results`) and the shipped contest data, and knows nothing of solving: a run from
another machine or from last year renders the same. ``leaderboard`` reads runs and scores them (the
contest rules are described there), ``render`` draws a leaderboard as a table, markdown, CSV or JSON,
``compact`` the same turned around for narrow terminals, ``tidy`` the per-task CSV, ``anytime``
rescores rows at an earlier time from their incumbent traces (time to target, primal integral),
``seeds`` the bootstrap intervals and paired counts, ``profile`` the performance profile,
``colors`` a stable colour per configuration, ``plots`` the pictures; ``tradeoff`` and
``tradeoff_plot`` show a ``portfolio tradeoff`` run (its table, the marginal price of memory, its
curve) instead of a leaderboard; ``oracle`` the virtual best and single best rows (``--oracle``),
``aslib`` an ASlib scenario of the runs (``--aslib``). Everything public is importable from here,
the tradeoff's, ``oracle``'s and ``aslib``'s from their modules.
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
from .anytime import cost_at, primal_integral, rescore_row, time_to_proof, time_to_target
from .colors import colours
from .compact import render_compact
from .plots import plot_runs, write_plots
from .profile import Profile, profile_of, profile_table
from .render import fmt_cost, render_csv, render_markdown, render_table, to_json
from .seeds import Pairing, bootstrap_interval, paired
from .tidy import render_tidy_csv, task_rows

__all__ = [
    "FAILED", "META", "RESULTS", "Cell", "Entry", "InstanceInfo", "Leaderboard", "Outcome",
    "ReportError", "Row", "RunData", "build", "contest_entries", "contest_points", "entries_from_runs",
    "fmt_cost", "load_run", "min_costs", "outcome_of", "plot_runs", "points", "render_csv",
    "render_markdown", "render_table", "score", "to_json", "write_plots",
    "cost_at", "primal_integral", "rescore_row", "time_to_proof", "time_to_target", "colours",
    "render_compact", "Profile", "profile_of", "profile_table", "Pairing", "bootstrap_interval",
    "paired", "render_tidy_csv", "task_rows",
]
