"""The compact leaderboard: instances down, configurations across, for narrow terminals.

The wide table (configurations down, instances across, cost and points per cell) needs about 14
columns per instance: 25 instances do not fit 100 columns. Turned around, an instance is one line and
a configuration one column of points, so 7 or 25 instances fit; configurations that do not fit the
width are left out (contest teams first, from the lowest rank), with a note naming how many.
A name is never cut inside a word: ``run/config`` breaks at the slash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .leaderboard import Leaderboard, Row
from .render import _rank_text, fmt_cost, pct, starved_mark, total_text

if TYPE_CHECKING:
    from rich.console import RenderableType

INSTANCE_WIDTH = 10
SHORT_STATUS = {"no answer": "-", "missing": "-", "no-solution": "none", "infeasible": "infeas.",
                "infeasible-proven": "infeas.", "bad-output": "bad out", "forbidden": "forbid."}


def _header(label: str) -> str:
    """A column header that wraps only between words: ``run/config`` becomes two lines."""
    return label.replace("/", "/\n")


def _width(label: str) -> int:
    return max(7, max(len(part) for part in _header(label).split("\n")) + 3)


def fitting_rows(board: Leaderboard, width: int) -> tuple[list[Row], int]:
    """The rows whose columns fit ``width``: runs first, then teams and baselines by rank."""
    budget = width - INSTANCE_WIDTH - 4
    runs = [r for r in board.rows if r.kind == "run"]
    others = [r for r in board.rows if r.kind != "run"]
    chosen: list[Row] = []
    for row in runs + others:
        need = _width(row.label)
        if budget - need < 0 and chosen:
            continue
        budget -= need
        chosen.append(row)
    kept = [r for r in board.rows if r in chosen]
    return kept, len(board.rows) - len(kept)


def render_compact(board: Leaderboard, width: int) -> "RenderableType":
    """The compact view: points per instance (best in bold), totals and ranks below, then the gaps
    to the lower bound in the same shape."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows, hidden = fitting_rows(board, width)
    title = "leaderboard: " + ", ".join(board.runs)
    if board.at is not None:
        title += f", at {board.at:g} s"
    table = Table(title=title, title_justify="left", caption="points = min cost / cost; total: "
                  "95 % bootstrap interval over seeds", caption_justify="left")
    table.add_column("instance", no_wrap=True, min_width=3)
    for row in rows:
        table.add_column(_header(row.label), justify="right", no_wrap=True, min_width=5,
                         style="" if row.kind == "run" else "dim")
    for info in board.instances:
        cells = []
        for row in rows:
            cell = row.cells[info.name]
            text = (f"{cell.points:.3f}" if cell.n_ok else SHORT_STATUS.get(cell.status, cell.status)
                    ) + starved_mark(cell)
            style = "bold green" if cell.is_best else ("red" if not cell.n_ok and row.kind == "run"
                                                       else "")
            cells.append(Text(text, style=style))
        table.add_row(info.label, *cells)
    table.add_section()
    table.add_row("points", *[total_text(r).split(" [")[0] for r in rows], style="bold")
    if any(r.total_interval for r in rows):
        table.add_row("95 %", *[("" if r.total_interval is None else
                                 f"{r.total_interval[0]:.2f}-{r.total_interval[1]:.2f}") for r in rows])
    table.add_row("n", *[str(r.trials) for r in rows])
    table.add_row("rank", *[_rank_text(r) for r in rows])
    parts: list = [table]
    runs = [r for r in rows if r.kind == "run"]
    bounded = [i for i in board.instances if i.lower_bound]
    if runs and bounded:
        gaps = Table(title="gap of the median cost to the lower bound", title_justify="left")
        gaps.add_column("instance", no_wrap=True)
        gaps.add_column("lower bound", justify="right", no_wrap=True)
        for row in runs:
            gaps.add_column(_header(row.label), justify="right", no_wrap=True)
        for info in bounded:
            gaps.add_row(info.label, fmt_cost(info.lower_bound, short=True),
                         *[pct(r.cells[info.name].gap_lb) for r in runs])
        parts.append(gaps)
    if hidden:
        parts.append(Text(f"note: {hidden} row(s) left out for the width ({width} columns); "
                          f"--top N, --configs or --view wide show others", style="dim"))
    labels = [i for i in board.instances if i.label != i.name]
    if labels:
        parts.append(Text("instances: " + ", ".join(f"{i.label} = {i.name}" for i in labels[:3])
                          + (" ..." if len(labels) > 3 else ""), style="dim"))
    for info in board.instances:
        if info.best_known_by and info.best_known_by.startswith("this report"):
            parts.append(Text(f"{info.label}: best known {fmt_cost(info.best_known)}: "
                              f"{info.best_known_by}", style="dim"))
    parts += [Text(f"paired: {p.text()}") for p in board.pairings]
    parts += [Text(f"note: {n}", style="dim") for n in board.notes]
    return Group(*parts)


def choose_view(board: Leaderboard, view: str, width: int, terminal: bool):
    """(renderable, width to print it at or None for the console's own): the wide table when it
    fits ``width`` or is asked for, else the compact one; off a terminal (a log, a file) the wide
    table at its natural width, unless the compact one is asked for."""
    from rich.console import Console
    from rich.measure import Measurement

    from .render import render_table

    wide = render_table(board)
    if view == "compact":
        return render_compact(board, width), None
    probe = Console(width=1000)
    natural = Measurement.get(probe, probe.options, wide).maximum
    if natural <= width:
        return wide, None
    if view == "wide" or not terminal:
        return wide, natural
    return render_compact(board, width), None
