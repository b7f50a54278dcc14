"""Leaderboards from ``portfolio bench`` results: contest points, reference teams, gaps, plots.

This module reads result files (``runs/NAME/results.jsonl`` and ``meta.json``) and the shipped contest
data, and knows nothing of solving: a run from another machine or from last year renders the same.

Scoring follows the contest rules: on each instance a row scores ``min_cost / its_cost``, where the
minimum is over the rows being compared (a missing, infeasible, failed or late answer scores 0), and
the total is the sum over instances. Baseline rows (XLA, with ``--reference contest``) are scored but
never set the minimum, as in the official results. With repeated runs (seeds, ``--repeat``) a cell
holds several outcomes: its cost is their mean (± standard deviation), its points are the mean of
the outcomes' points, and the minimum is over every single outcome.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Optional, Sequence

from .data import contest
from .results import read_rows

if TYPE_CHECKING:  # rich loads only when a table is drawn
    from rich.table import Table

RESULTS = "results.jsonl"
META = "meta.json"

FAILED = frozenset({"error", "crashed", "timeout", "late"})
"""Row statuses that score 0 even if a cost is present (a late answer would not have been read)."""


class ReportError(ValueError):
    """Unreadable or empty input: one line for the user."""


# ------------------------------------------------------------------------------------------ reading
@dataclass
class RunData:
    name: str
    folder: Path
    rows: list[dict]
    bad_lines: int = 0
    meta: dict = field(default_factory=dict)


def load_run(path: str | Path) -> RunData:
    """A run folder (with ``results.jsonl``) or a results file itself."""
    p = Path(path)
    results = p / RESULTS if p.is_dir() else p
    folder = p if p.is_dir() else p.parent
    if not results.is_file():
        raise ReportError(f"{path}: no {RESULTS} here (expected a `portfolio bench` run folder)")
    rows, bad = read_rows(results)
    complete = [r for r in rows if "instance" in r and "configuration" in r]
    bad += len(rows) - len(complete)
    rows = complete
    meta: dict = {}
    if (folder / META).is_file():
        try:
            meta = json.loads((folder / META).read_text())
        except (OSError, json.JSONDecodeError):
            meta = {}
    name = meta.get("name") or (folder.name if p.is_dir() else p.stem)
    # the same task twice (files concatenated by hand): the later line wins
    unique: dict[tuple, dict] = {}
    for row in rows:
        unique[(row["instance"], row["configuration"], row.get("seed", 0), row.get("repeat", 0))] = row
    return RunData(str(name), folder, list(unique.values()), bad, meta)


# ------------------------------------------------------------------------------------------ model
@dataclass
class Outcome:
    cost: Optional[int]       # the cost that scores, or None (failed / infeasible / missing)
    status: str
    trial: tuple = ()         # (seed, repeat) for run rows
    row: Optional[dict] = None


@dataclass
class Entry:
    """A leaderboard row: a solver configuration from a run, or a reference team."""

    label: str
    kind: str                                        # "run", "team" or "baseline"
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    run: Optional[str] = None


@dataclass
class Cell:
    n: int = 0
    n_ok: int = 0
    cost_mean: Optional[float] = None
    cost_std: Optional[float] = None
    cost_min: Optional[int] = None
    points: float = 0.0
    points_std: Optional[float] = None
    status: str = "missing"
    is_best: bool = False
    gap_lb: Optional[float] = None
    gap_own: Optional[float] = None   # mean certified gap (cost - the run's own bound) / cost
    vs_best_known: Optional[float] = None


@dataclass
class Row:
    label: str
    kind: str
    run: Optional[str]
    cells: dict[str, Cell]
    total: float
    total_std: Optional[float]
    vs_best_known: Optional[float]
    rank: Optional[int] = None


@dataclass
class InstanceInfo:
    name: str
    label: str
    time_limit: Optional[float]
    min_cost: Optional[int]
    best_known: Optional[int]
    best_known_by: Optional[str]
    lower_bound: Optional[int]
    lower_bound_source: Optional[str]


@dataclass
class Leaderboard:
    instances: list[InstanceInfo]
    rows: list[Row]
    runs: list[str]
    reference: Optional[str] = None
    notes: list[str] = field(default_factory=list)

    def instance(self, name: str) -> InstanceInfo:
        return next(i for i in self.instances if i.name == name)


def outcome_of(row: dict) -> Outcome:
    status = str(row.get("status", "?"))
    cost = row.get("cost")
    ok = bool(row.get("feasible")) and cost is not None and status not in FAILED
    return Outcome(int(cost) if ok else None, status if ok or status != "feasible" else "infeasible",
                   (row.get("seed", 0), row.get("repeat", 0)), row)


def entries_from_runs(runs: Sequence[RunData]) -> list[Entry]:
    """One entry per (run, configuration); labels get the run's name when configurations collide."""
    configs: dict[tuple[int, str], RunData] = {}
    for i, run in enumerate(runs):
        for row in run.rows:
            configs.setdefault((i, row["configuration"]), run)
    counts = Counter(config for _, config in configs)
    entries: dict[tuple[int, str], Entry] = {}
    for (i, config), run in configs.items():
        label = config if counts[config] == 1 else f"{run.name}/{config}"
        if counts[config] > 1 and sum(r.name == run.name for r in runs) > 1:
            label = f"{run.name}#{i + 1}/{config}"  # the same run given twice
        entries[(i, config)] = Entry(label, "run", {}, run.name)
    for i, run in enumerate(runs):
        for row in run.rows:
            entries[(i, row["configuration"])].outcomes.setdefault(row["instance"], []).append(
                outcome_of(row))
    return list(entries.values())


def contest_entries(instances: Iterable[str]) -> list[Entry]:
    """The 2025 contest's teams and XLA as entries, on the given (contest-named) instances."""
    matched = {name: contest.match(name) for name in instances}
    out = []
    for team, costs in contest.team_costs().items():
        kind = "baseline" if team == contest.BASELINE else "team"
        entry = Entry(team, kind)
        for name, bench in matched.items():
            if bench is None:
                continue
            cost = costs.get(bench.letter)
            entry.outcomes[name] = [Outcome(cost, "contest" if cost is not None else "no answer")]
        out.append(entry)
    return out


# ------------------------------------------------------------------------------------------ scoring
def _std(values: Sequence[float]) -> Optional[float]:
    return statistics.stdev(values) if len(values) > 1 else None


def min_costs(entries: Sequence[Entry], instances: Sequence[str]) -> dict[str, Optional[int]]:
    """Per instance, the lowest scoring cost of any single outcome of a non-baseline entry."""
    out: dict[str, Optional[int]] = {}
    for name in instances:
        costs = [o.cost for e in entries if e.kind != "baseline"
                 for o in e.outcomes.get(name, []) if o.cost is not None]
        if not costs:  # only baselines answered: they set the minimum after all
            costs = [o.cost for e in entries for o in e.outcomes.get(name, []) if o.cost is not None]
        out[name] = min(costs) if costs else None
    return out


def points(min_cost: Optional[int], cost: Optional[int]) -> float:
    """Contest points of one answer: ``min_cost / cost`` (0 without an answer)."""
    if cost is None or min_cost is None:
        return 0.0
    if cost == 0:
        return 1.0
    return min_cost / cost


def contest_points(table: Mapping[str, Mapping[str, Optional[int]]],
                   baselines: Iterable[str] = ()) -> dict[str, float]:
    """Total points per team for a ``{team: {benchmark: cost or None}}`` table (the contest rules)."""
    base = set(baselines)
    entries = [Entry(team, "baseline" if team in base else "team",
                     {b: [Outcome(c, "")] for b, c in costs.items()}) for team, costs in table.items()]
    instances = sorted({b for costs in table.values() for b in costs})
    board = score(entries, instances)
    return {row.label: row.total for row in board.rows}


def _cell(outcomes: list[Outcome], min_cost: Optional[int], best_known: Optional[int],
          lower_bound: Optional[int]) -> Cell:
    if not outcomes:
        return Cell()
    costs = [o.cost for o in outcomes if o.cost is not None]
    pts = [points(min_cost, o.cost) for o in outcomes]
    cell = Cell(n=len(outcomes), n_ok=len(costs), points=sum(pts) / len(pts), points_std=_std(pts))
    if costs:
        # exact (an int) when the outcomes agree: costs reach 10**21, past a float's 53 bits
        cell.cost_mean = costs[0] if len(set(costs)) == 1 else sum(costs) / len(costs)
        cell.cost_std = _std([float(c) for c in costs])
        cell.cost_min = min(costs)
        cell.is_best = min_cost is not None and cell.cost_min == min_cost
        if lower_bound:
            cell.gap_lb = (cell.cost_mean - lower_bound) / lower_bound
        own = [_own_gap(o) for o in outcomes]
        own = [g for g in own if g is not None]
        if own:
            cell.gap_own = sum(own) / len(own)
    if best_known is not None:
        cell.vs_best_known = sum(points(best_known, o.cost) for o in outcomes) / len(outcomes)
    bad = Counter(o.status for o in outcomes if o.cost is None)
    if not costs:
        cell.status = bad.most_common(1)[0][0]
    elif bad:
        cell.status = f"{len(costs)}/{len(outcomes)} ok"
    else:
        cell.status = "ok"
    return cell


def _own_gap(o: Outcome) -> Optional[float]:
    """The certified gap ``(cost - bound) / cost`` of one result row, from its own bound."""
    lb = (o.row or {}).get("lower_bound")
    if o.cost is None or lb is None or o.cost <= 0:
        return None
    return (o.cost - int(lb)) / o.cost


def _labels(instances: Sequence[str]) -> dict[str, str]:
    """Short column labels: the contest letter for contest benchmarks, else the name."""
    labels = {}
    for name in instances:
        bench = contest.match(name)
        labels[name] = bench.letter if bench is not None else name
    if len(set(labels.values())) != len(labels):
        return {name: name for name in instances}
    return labels


def _lower_bounds(entries: Sequence[Entry], instances: Sequence[str], mins: Mapping[str, Optional[int]],
                  notes: list[str]) -> dict[str, tuple[Optional[int], Optional[str]]]:
    out = {}
    for name in instances:
        best, source = None, None
        bench = contest.match(name)
        if bench is not None and bench.lower_bound is not None:
            best, source = bench.lower_bound, "contest, approx."
        lowest = mins.get(name)
        for e in entries:
            for o in e.outcomes.get(name, []):
                lb = (o.row or {}).get("lower_bound")
                if lb is None:
                    continue
                if lowest is not None and lb > lowest:
                    notes.append(f"{name}: ignored the lower bound {lb:,} claimed in {e.label}: "
                                 f"above the cost {lowest:,} verified in this report")
                    continue
                if best is None or lb > best:
                    best, source = int(lb), e.label
        out[name] = (best, source)
    return out


def _rank(rows: list[Row]) -> None:
    ranked = sorted((r for r in rows if r.kind != "baseline"), key=lambda r: -r.total)
    place, previous = 0, None
    for i, row in enumerate(ranked, 1):
        if previous is None or not math.isclose(row.total, previous, rel_tol=1e-12, abs_tol=1e-12):
            place, previous = i, row.total
        row.rank = place


def score(entries: Sequence[Entry], instances: Sequence[str], runs: Sequence[str] = (),
          reference: Optional[str] = None, notes: Optional[list[str]] = None) -> Leaderboard:
    """Score every entry on ``instances``; rows come out in rank order (baselines by total)."""
    notes = list(notes or [])
    instances = list(instances)
    mins = min_costs(entries, instances)
    labels = _labels(instances)
    bounds = _lower_bounds(entries, instances, mins, notes)
    infos = []
    for name in instances:
        bench = contest.match(name)
        limits = {o.row.get("time_limit") for e in entries for o in e.outcomes.get(name, [])
                  if o.row is not None and o.row.get("time_limit") is not None}
        infos.append(InstanceInfo(
            name, labels[name], next(iter(limits)) if len(limits) == 1 else None, mins[name],
            None if bench is None else bench.best_known_cost,
            None if bench is None else bench.best_known_by,
            *bounds[name]))
    rows = []
    for e in entries:
        cells = {}
        for info in infos:
            cells[info.name] = _cell(e.outcomes.get(info.name, []), info.min_cost, info.best_known,
                                     info.lower_bound)
        total = sum(c.points for c in cells.values())
        trials = sorted({o.trial for outs in e.outcomes.values() for o in outs if o.trial},
                        key=lambda t: tuple(map(str, t)))
        total_std = None
        if len(trials) > 1:
            per_trial = []
            for trial in trials:
                per_trial.append(sum(points(info.min_cost, next(
                    (o.cost for o in e.outcomes.get(info.name, []) if o.trial == trial), None))
                    for info in infos))
            total_std = _std(per_trial)
        known = [c.vs_best_known for c in cells.values() if c.vs_best_known is not None]
        rows.append(Row(e.label, e.kind, e.run, cells, total, total_std,
                        sum(known) if known else None))
    _rank(rows)
    rows.sort(key=lambda r: (-r.total, r.kind == "baseline", r.label))
    return Leaderboard(infos, rows, list(runs), reference, notes)


def build(run_paths: Sequence[str | Path], reference: Optional[str] = None) -> Leaderboard:
    """Read runs and score them, joined with the contest's teams when ``reference == "contest"``."""
    runs = [load_run(p) for p in run_paths]
    notes = [f"{r.name}: skipped {r.bad_lines} unreadable line(s)" for r in runs if r.bad_lines]
    entries = entries_from_runs(runs)
    instances = sorted({name for e in entries for name in e.outcomes})
    if not instances:
        raise ReportError("no results in " + ", ".join(str(p) for p in run_paths))
    if reference is not None:
        if reference != "contest":
            raise ReportError(f"unknown reference {reference!r}; known: contest")
        matched = [n for n in instances if contest.match(n) is not None]
        if not matched:
            raise ReportError("--reference contest: none of the instances is a contest benchmark "
                              "(asplos-2025-iopddl-A ... -Y)")
        left = [n for n in instances if n not in matched]
        if left:
            notes.append("not contest benchmarks, left out of the comparison: " + ", ".join(left))
        instances = matched
        entries = entries + contest_entries(instances)
        notes.append("contest rows: each team's final answer in the 2025 contest (on the contest's own machine, "
                     "contest time limits); XLA is a baseline and does not set the minimum")
    return score(entries, instances, [r.name for r in runs], reference, notes)


# ------------------------------------------------------------------------------------------ rendering
def fmt_cost(cost: Optional[float], short: bool = False) -> str:
    if cost is None:
        return "-"
    if short and abs(cost) >= 1e8:
        mantissa, exponent = f"{cost:.4e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{cost:,}" if isinstance(cost, int) else f"{int(round(cost)):,}"


def _cost_text(cell: Cell, short: bool) -> str:
    if cell.n_ok == 0:
        return cell.status
    text = fmt_cost(cell.cost_mean, short)
    if cell.cost_std is not None and cell.cost_mean:
        text += f" ±{100 * cell.cost_std / cell.cost_mean:.2g}%"
    if cell.n_ok < cell.n:
        text += f" ({cell.n_ok}/{cell.n} ok)"
    return text


def _points_text(value: float, std: Optional[float]) -> str:
    return f"{value:.3f}" + ("" if std is None else f" ±{std:.3f}")


def _rank_text(row: Row) -> str:
    return "base" if row.rank is None else str(row.rank)


def _pct(value: Optional[float]) -> str:
    """A gap as a percentage; past +1000 % as the cost / bound ratio (forbidden-entry costs)."""
    if value is None:
        return "-"
    if value > 10:
        mantissa, exponent = f"{1 + value:.2e}".split("e")
        return f"x{mantissa}e{int(exponent)}"
    return f"{100 * value:+.2f}%"


def render_table(board: Leaderboard):
    """A rich renderable: the leaderboard and the per-instance facts (gaps, bounds)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    has_known = any(i.best_known is not None for i in board.instances)
    title = "leaderboard: " + ", ".join(board.runs)
    if board.reference:
        title += f"  (with the {board.reference} reference)"
    table = Table(title=title, title_justify="left",
                  caption="points per instance = min cost / cost (0: no valid answer); "
                          "cells: mean cost, points", caption_justify="left")
    table.add_column("#", justify="right")
    table.add_column("configuration")
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
            text = _cost_text(cell, short=True) + "\n" + _points_text(cell.points, cell.points_std)
            if cell.is_best:
                cells.append(Text(text, style="bold green"))
            elif cell.n_ok == 0:
                cells.append(Text(text, style="red" if row.kind == "run" else "dim"))
            else:
                cells.append(Text(text, style=style))
        extra = [f"{row.vs_best_known:.3f}" if row.vs_best_known is not None else "-"] if has_known else []
        table.add_row(_rank_text(row), Text(row.label, style="bold" if row.kind == "run" else "dim"),
                      *cells, _points_text(row.total, row.total_std), *extra)
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
        parts.append(_gap_table("gap of the mean cost to the lower bound", bounded, runs,
                                "gap_lb"))
    own = [i for i in board.instances if any(r.cells[i.name].gap_own is not None for r in runs)]
    if own:
        parts.append(_gap_table("certified gap: (cost - the run's own lower bound) / cost", own,
                                runs, "gap_own"))
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
            text = f"{_cost_text(cell, short=False)} ({_points_text(cell.points, cell.points_std)})"
            cells.append(f"**{text}**" if cell.is_best else text)
        label = row.label if row.kind == "run" else f"_{row.label}_"
        extra = [f"{row.vs_best_known:.3f}" if row.vs_best_known is not None else "-"] if has_known else []
        lines.append("| " + " | ".join([_rank_text(row), label, *cells,
                                        f"**{_points_text(row.total, row.total_std)}**", *extra]) + " |")
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
    for note in board.notes:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


def render_csv(board: Leaderboard) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    head = ["rank", "configuration", "kind", "run", "points", "points_std", "vs_best_known"]
    for info in board.instances:
        head += [f"{info.label}:cost", f"{info.label}:cost_std", f"{info.label}:points",
                 f"{info.label}:status", f"{info.label}:gap_lb"]
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
                    "" if c.gap_lb is None else f"{c.gap_lb:.6f}"]
        writer.writerow(out)
    return buf.getvalue()


def to_json(board: Leaderboard) -> dict:
    def cell(c: Cell) -> dict:
        return {"n": c.n, "ok": c.n_ok, "cost": c.cost_mean if c.n_ok != 1 else c.cost_min,
                "cost_std": c.cost_std, "cost_min": c.cost_min, "points": c.points,
                "points_std": c.points_std, "status": c.status, "best": c.is_best, "gap_lb": c.gap_lb,
                "vs_best_known": c.vs_best_known}

    return {
        "runs": board.runs,
        "reference": board.reference,
        "instances": [vars(i) for i in board.instances],
        "rows": [{"rank": r.rank, "configuration": r.label, "kind": r.kind, "run": r.run,
                  "points": r.total, "points_std": r.total_std, "vs_best_known": r.vs_best_known,
                  "cells": {name: cell(c) for name, c in r.cells.items()}} for r in board.rows],
        "notes": board.notes,
    }


# ------------------------------------------------------------------------------------------ plots
def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ReportError("--plot needs matplotlib: pip install 'iopddl-portfolio[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _gap_series(row: dict, final_bound: int) -> tuple[list[float], list[float]]:
    """(times, gaps in %) of a row: the gap as known at each time when the row has a ``gap_trace``
    (bounds sent during the run count from their time), else the final bound against every plan."""
    known = [g for g in row.get("gap_trace") or [] if g.get("cost") and g.get("bound") is not None]
    if known:
        return ([g["time"] for g in known],
                [100 * (g["cost"] - g["bound"]) / g["cost"] for g in known])
    return ([i["time"] for i in row["incumbents"]],
            [100 * (i["cost"] - final_bound) / i["cost"] for i in row["incumbents"]])


def write_plots(board: Leaderboard, entries_rows: Mapping[str, list[dict]], out_dir: str | Path) -> list[Path]:
    """Convergence per instance (cost / reference vs time, a line per run) and a points bar chart.

    ``entries_rows``: for each run configuration label, its result rows. Writes PNG and SVG.
    """
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    labels = [r.label for r in board.rows if r.kind == "run"]
    colors = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    for info in board.instances:
        ref = info.best_known if info.best_known is not None else info.min_cost
        if not ref:
            continue
        bounded = any(row.get("instance") == info.name and row.get("incumbents")
                      and row.get("lower_bound") for rows in entries_rows.values() for row in rows)
        if bounded:   # a second panel: the certified gap of the plan held at each time
            fig, (ax, gap_ax) = plt.subplots(2, 1, figsize=(7, 6.4), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 2]})
        else:
            fig, ax = plt.subplots(figsize=(7, 4.2))
        ratios: list[float] = []
        for label in labels:
            first = True
            for row in entries_rows.get(label, []):
                if row.get("instance") != info.name or not row.get("incumbents"):
                    continue
                times = [i["time"] for i in row["incumbents"]]
                costs = [i["cost"] / ref for i in row["incumbents"]]
                end = row.get("time_limit") or row.get("elapsed") or times[-1]  # the answer stands
                ax.step(times + [max(end, times[-1])], costs + [costs[-1]], where="post",
                        color=colors[label], alpha=0.85, lw=1.4, label=label if first else None)
                ax.plot(times, costs, ls="none", marker=".", ms=4, color=colors[label], alpha=0.85)
                ratios += costs
                lb = row.get("lower_bound")
                if lb and bounded:
                    ax.axhline(lb / ref, color=colors[label], lw=0.9, ls="--", alpha=0.7,
                               label=f"{label}: lower bound" if first else None)
                    gap_times, gaps = _gap_series(row, lb)
                    gap_ax.step(gap_times + [max(end, gap_times[-1])], gaps + [gaps[-1]], where="post",
                                color=colors[label], alpha=0.85, lw=1.4)
                first = False
        if not ratios:
            plt.close(fig)
            continue
        ax.axhline(1.0, color="black", lw=0.8, ls=":")
        bench = contest.match(info.name)
        if bench is not None and bench.first_place_cost and info.best_known:
            first_ratio = bench.first_place_cost / info.best_known
            if first_ratio < 10:  # (1st place on W answered with a forbidden-cost plan)
                ax.axhline(first_ratio, color="tab:red", lw=0.8, ls="--", alpha=0.6,
                           label="2025 contest, 1st place")
        ax.set_xlim(left=0)
        if max(ratios) / max(min(ratios), 1e-300) > 20:
            ax.set_yscale("log")
        what = "best known" if info.best_known is not None else "best cost in these runs"
        (gap_ax if bounded else ax).set_xlabel("seconds since the task started (loading included)")
        if bounded:
            gap_ax.set_ylabel("(cost - bound) / cost, %")
            gap_ax.set_yscale("symlog", linthresh=0.1)
            gap_ax.set_title("certified gap of the plan held (against the bound known then)",
                             fontsize="small")
            gap_ax.grid(alpha=0.3)
            gap_ax.set_xlim(left=0)
        ax.set_ylabel(f"cost / {what}")
        ax.set_title(f"{info.name}: convergence")
        if info.time_limit:
            ax.axvline(info.time_limit, color="grey", lw=0.8, ls="--")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        written += _save(plt, fig, out / f"convergence-{_safe(info.label)}")
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(board.rows) + 1.2))
    rows = list(reversed(board.rows))
    ax.barh([r.label for r in rows], [r.total for r in rows],
            xerr=[r.total_std or 0 for r in rows] if any(r.total_std for r in rows) else None,
            color=[colors.get(r.label, "0.6" if r.kind == "team" else "0.82") for r in rows])
    for y, row in enumerate(rows):
        ax.text(row.total, y, f" {row.total:.3f}", va="center", fontsize="small")
    for tick, row in zip(ax.get_yticklabels(), rows):
        if row.kind == "run":
            tick.set_fontweight("bold")
            tick.set_color(colors.get(row.label, "black"))
    ax.set_xlim(right=max([r.total for r in rows] + [0.1]) * 1.15)
    ax.set_xlabel(f"contest points (sum over {len(board.instances)} instances of min cost / cost)")
    ax.set_title("points: " + ", ".join(board.runs))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    written += _save(plt, fig, out / "points")
    return written


def _save(plt, fig, stem: Path) -> list[Path]:
    """Write ``fig`` as ``stem``.png and .svg and close it; the paths written."""
    paths = [stem.with_name(f"{stem.name}.{ext}") for ext in ("png", "svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def plot_runs(run_paths: Sequence[str | Path], board: Leaderboard,
              out_dir: Optional[str | Path] = None) -> list[Path]:
    """Plots for a leaderboard built from ``run_paths``, under the first run's ``plots/`` folder."""
    _pyplot()  # fail early and clearly without matplotlib
    runs = [load_run(p) for p in run_paths]
    by_label: dict[str, list[dict]] = {}
    for entry in entries_from_runs(runs):
        by_label[entry.label] = [o.row for outs in entry.outcomes.values() for o in outs if o.row]
    folder = Path(out_dir) if out_dir else runs[0].folder / "plots"
    return write_plots(board, by_label, folder)
