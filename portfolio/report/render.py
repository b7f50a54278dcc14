"""Rendering a leaderboard: a rich table, markdown, CSV and JSON."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Optional

from .leaderboard import Cell, Leaderboard, Row
from .machine import MARK

if TYPE_CHECKING:  # rich loads only when a table is drawn
    from rich.table import Table


def fmt_cost(cost: Optional[float], short: bool = False) -> str:
    if cost is None:
        return "-"
    if short and abs(cost) >= 1e8:
        mantissa, exponent = f"{cost:.4e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{cost:,}" if isinstance(cost, int) else f"{int(round(cost)):,}"


def spread_text(cell: Cell) -> str:
    """The half-range of a cell's costs over its seeds, in % of the median: readable at any size."""
    if cell.cost_min is None or cell.cost_max is None or cell.cost_max == cell.cost_min \
            or not cell.cost_median:
        return ""
    half = 100 * (cell.cost_max - cell.cost_min) / 2 / cell.cost_median
    if half < 0.01:
        return " ±<0.01%"
    return f" ±{half:.2f}%" if half < 10 else f" ±{half:,.0f}%"


def _cost_text(cell: Cell, short: bool) -> str:
    """The median cost, its spread over seeds, and how many of them answered."""
    if cell.n_ok == 0:
        return cell.status
    text = fmt_cost(cell.cost_median, short) + spread_text(cell)
    if cell.n_ok < cell.n:
        text += f" ({cell.n_ok}/{cell.n} ok)"
    return text


def starved_mark(cell: Cell) -> str:
    """`` †`` when a task of the cell was starved of CPU (the note under the table says which)."""
    return f" {MARK}" if cell.starved else ""


def _points_text(value: float, std: Optional[float]) -> str:
    return f"{value:.3f}" + ("" if std is None or std < 5e-4 else f" ±{std:.3f}")


def total_text(row: Row) -> str:
    """The total points, and its 95 % bootstrap interval over seeds when there are several."""
    if row.total_interval is None:
        return f"{row.total:.3f}"
    lo, hi = row.total_interval
    return f"{row.total:.3f} [{lo:.2f}, {hi:.2f}]"


def _rank_text(row: Row) -> str:
    if row.rank is not None:
        return str(row.rank)
    return "ref" if row.kind == "reference" else "base"


def pct(value: Optional[float]) -> str:
    """A gap as a percentage; past +1000 % as the cost / bound ratio (forbidden-entry costs)."""
    if value is None:
        return "-"
    if value > 10:
        ratio = 1 + value
        if ratio < 1e5:
            return f"x{ratio:,.0f}"
        mantissa, exponent = f"{ratio:.1e}".split("e")
        return f"x{mantissa}e{int(exponent)}"
    if abs(value) < 5e-5:
        return "0.00%" if value == 0 else ("+<0.01%" if value > 0 else "-<0.01%")
    return f"{100 * value:+.2f}%"


_pct = pct


def render_table(board: Leaderboard):
    """A rich renderable: the leaderboard and the per-instance facts (gaps, bounds)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    has_known = any(i.best_known is not None for i in board.instances)
    title = "leaderboard: " + ", ".join(board.runs)
    if board.at is not None:
        title += f", rescored at {board.at:g} s"
    if board.reference:
        title += f"  (with the {board.reference} reference)"
    table = Table(title=title, title_justify="left",
                  caption="points per instance = min cost / cost (0: no valid answer); cells: "
                          "median cost ± half its range over seeds, mean points; total: 95 % "
                          "bootstrap interval over seeds", caption_justify="left")
    table.add_column("#", justify="right")
    table.add_column("configuration", no_wrap=True)
    table.add_column("n", justify="right")
    for info in board.instances:
        table.add_column(info.label, justify="right")
    table.add_column("points", justify="right", style="bold")
    if has_known:
        table.add_column("vs best known", justify="right")
    for row in board.rows:
        style = "" if row.kind == "run" else "dim"
        cells = []
        for info in board.instances:
            cell = row.cells[info.name]
            text = (_cost_text(cell, short=True) + "\n" + _points_text(cell.points, cell.points_std)
                    + starved_mark(cell))
            if cell.is_best:
                cells.append(Text(text, style="bold green"))
            elif cell.n_ok == 0:
                cells.append(Text(text, style="red" if row.kind == "run" else "dim"))
            else:
                cells.append(Text(text, style=style))
        extra = [f"{row.vs_best_known:.3f}" if row.vs_best_known is not None else "-"] if has_known else []
        table.add_row(_rank_text(row), Text(row.label, style="bold" if row.kind == "run" else "dim"),
                      str(row.trials), *cells, total_text(row), *extra)
    facts = Table(title="instances", title_justify="left")
    for col in ("", "instance", "time limit s", "min cost here", "best known", "lower bound"):
        facts.add_column(col, justify="left" if col in ("", "instance") else "right")
    for info in board.instances:
        known = "-" if info.best_known is None else f"{info.best_known:,} ({info.best_known_by})"
        lb = "-" if info.lower_bound is None else f"{info.lower_bound:,} ({info.lower_bound_source})"
        facts.add_row(info.label if info.label != info.name else "", info.name,
                      "-" if info.time_limit is None else f"{info.time_limit:g}",
                      fmt_cost(info.min_cost), known, lb)
    parts = [table, facts]
    bounded = [i for i in board.instances if i.lower_bound]
    runs = [r for r in board.rows if r.kind == "run"]
    if bounded and runs:
        parts.append(_gap_table("gap of the median cost to the lower bound", bounded, runs,
                                "gap_lb"))
    own = [i for i in board.instances if any(r.cells[i.name].gap_own is not None for r in runs)]
    if own:
        parts.append(_gap_table("certified gap: (cost - the run's own lower bound) / cost", own,
                                runs, "gap_own"))
    parts += [Text(f"paired: {p.text()}") for p in board.pairings]
    parts += [Text(f"note: {n}", style="dim") for n in board.notes]
    return Group(*parts)


def _gap_table(title: str, instances: list, runs: list, gap: str) -> Table:
    """One row per configuration, one column per instance: the cells' ``gap`` attribute in %."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("configuration")
    for info in instances:
        table.add_column(info.label, justify="right")
    for row in runs:
        table.add_row(row.label, *[_pct(getattr(row.cells[i.name], gap)) for i in instances])
    return table


def render_markdown(board: Leaderboard) -> str:
    has_known = any(i.best_known is not None for i in board.instances)
    head = ["#", "configuration", *[i.label for i in board.instances], "points"]
    if has_known:
        head.append("vs best known")
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---:", "---"] + ["---:"] * (len(head) - 2)) + "|"]
    for row in board.rows:
        cells = []
        for info in board.instances:
            cell = row.cells[info.name]
            text = (f"{_cost_text(cell, short=False)} ({_points_text(cell.points, cell.points_std)})"
                    + starved_mark(cell))
            cells.append(f"**{text}**" if cell.is_best else text)
        label = row.label if row.kind == "run" else f"_{row.label}_"
        extra = [f"{row.vs_best_known:.3f}" if row.vs_best_known is not None else "-"] if has_known else []
        lines.append("| " + " | ".join([_rank_text(row), label, *cells,
                                        f"**{total_text(row)}**", *extra]) + " |")
    lines += ["", "Cells: mean cost (contest points = min cost / cost); best per instance in bold.", ""]
    runs = [r for r in board.rows if r.kind == "run"]
    lines.append("| instance | time limit s | best known | lower bound | "
                 + " | ".join(f"gap {r.label}" for r in runs) + " |")
    lines.append("|---|" + "---:|" * (3 + len(runs)))
    for info in board.instances:
        known = "-" if info.best_known is None else f"{info.best_known:,} ({info.best_known_by})"
        lb = "-" if info.lower_bound is None else f"{info.lower_bound:,} ({info.lower_bound_source})"
        gaps = [_pct(r.cells[info.name].gap_lb) for r in runs]
        lines.append(f"| {info.name} | {'-' if info.time_limit is None else f'{info.time_limit:g}'} | "
                     f"{known} | {lb} | " + " | ".join(gaps) + " |")
    for p in board.pairings:
        lines += ["", f"Paired: {p.text()}"]
    for note in board.notes:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


def render_csv(board: Leaderboard) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    head = ["rank", "configuration", "kind", "run", "points", "points_std", "vs_best_known"]
    for info in board.instances:
        head += [f"{info.label}:cost", f"{info.label}:cost_std", f"{info.label}:points",
                 f"{info.label}:status", f"{info.label}:gap_lb", f"{info.label}:starved"]
    writer.writerow(head)
    for row in board.rows:
        out = [row.rank if row.rank is not None else "", row.label, row.kind, row.run or "",
               f"{row.total:.6f}", "" if row.total_std is None else f"{row.total_std:.6f}",
               "" if row.vs_best_known is None else f"{row.vs_best_known:.6f}"]
        for info in board.instances:
            c = row.cells[info.name]
            out += ["" if c.cost_mean is None else
                    (c.cost_mean if isinstance(c.cost_mean, int) else f"{c.cost_mean:.1f}"),
                    "" if c.cost_std is None else f"{c.cost_std:.1f}", f"{c.points:.6f}", c.status,
                    "" if c.gap_lb is None else f"{c.gap_lb:.6f}", c.starved]
        writer.writerow(out)
    return buf.getvalue()


def to_json(board: Leaderboard) -> dict:
    def cell(c: Cell) -> dict:
        return {"n": c.n, "ok": c.n_ok, "cost": c.cost_mean if c.n_ok != 1 else c.cost_min,
                "cost_std": c.cost_std, "cost_min": c.cost_min, "points": c.points,
                "points_std": c.points_std, "status": c.status, "best": c.is_best, "gap_lb": c.gap_lb,
                "vs_best_known": c.vs_best_known, "cost_median": c.cost_median,
                "cost_max": c.cost_max, "starved": c.starved}

    return {
        "runs": board.runs,
        "reference": board.reference,
        "instances": [vars(i) for i in board.instances],
        "rows": [{"rank": r.rank, "configuration": r.label, "kind": r.kind, "run": r.run,
                  "points": r.total, "points_std": r.total_std, "vs_best_known": r.vs_best_known,
                  "n": r.trials,
                  "points_interval": None if r.total_interval is None else list(r.total_interval),
                  "cells": {name: cell(c) for name, c in r.cells.items()}} for r in board.rows],
        "at": board.at,
        "pairings": [vars(p) | {"n": p.n} for p in board.pairings],
        "notes": board.notes,
    }
