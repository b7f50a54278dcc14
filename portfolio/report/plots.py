"""Plots of a leaderboard's runs, as PNG and SVG (matplotlib, the ``plot`` extra):

* ``convergence-INSTANCE``: how far the plan held at each time is above the reference (the best
  known cost, else the best in the report), in %, on a symmetric log axis so that configurations
  0.01 % apart stay apart; several seeds as their median with a min-max band; the 2025 winner's
  answer and each configuration's lower bound as visible lines; a second panel with the certified
  gap when some row has one (never an empty panel);
* ``points``: the total points of every row, with the bootstrap interval over seeds;
* ``profile``: the performance profile over every instance (:mod:`.profile`).

A tradeoff run's curve is :mod:`.tradeoff_plot`'s.

Files are named after the runs (``RUN-points.png``; ``RUN1+RUN2-...`` for several, ``-at60`` with
``--at``), so a report never overwrites another run's plots. Colours come from :mod:`.colors`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence

from ..data import contest
from .colors import BASELINE_GREY, TEAM_GREY, colours
from .leaderboard import Leaderboard, ReportError, load_run
from .profile import plot_profile, profile_of


MISSING = ("{flag} needs matplotlib, which is not installed here: pip install "
           "'iopddl-portfolio[plot]' (or leave out {flag})")
"""The one line a plot without matplotlib gets (matplotlib is the ``plot`` extra), naming the
flag the user gave."""


def require_matplotlib(flag: str = "--plot") -> None:
    """Raise :class:`ReportError` with ``MISSING`` for ``flag`` (the option that asked for a
    picture) when matplotlib cannot be imported: a command that will plot checks this first,
    before any long work."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ReportError(MISSING.format(flag=flag)) from None


def _pyplot(flag: str = "--plot"):
    require_matplotlib(flag)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def plot_stem(board: Leaderboard) -> str:
    """The file-name prefix of a report's plots: its runs, and the rescoring time."""
    stem = "+".join(_safe(r) for r in board.runs) or "report"
    return stem + (f"-at{board.at:g}" if board.at is not None else "")


def hardware_note(board: Leaderboard) -> str:
    """Where the runs ran, against the contest teams' machine (when they are in the picture)."""
    if not board.reference:
        return ""
    cpus = sorted({(r.get("machine") or {}).get("cpu_count") for run in board.run_data
                   for r in run.rows} - {None})
    limits = sorted({r.get("time_limit") for run in board.run_data for r in run.rows} - {None})
    here = (f"{'/'.join(map(str, cpus))} cores" if cpus else "unknown cores") + ", limits " + \
        (", ".join(f"{t:g} s" for t in limits[:4]) if limits else "unknown")
    return f"note: contest teams ran on 8 cores with the contest limits (60-300 s); these runs: {here}"


def _excess(cost: float, ref: float) -> float:
    """How far above the reference a cost is, in %."""
    return 100.0 * (cost / ref - 1.0)


def _held(row: dict, at: float) -> Optional[int]:
    held = [i["cost"] for i in row.get("incumbents") or [] if i["time"] <= at]
    return held[-1] if held else None


def _band(rows: list[dict], end: float) -> tuple[list[float], list, list, list]:
    """A common time grid and, at each time, the median, lowest and highest cost held over the
    rows (None before half the rows held a plan)."""
    times = sorted({0.0, end} | {i["time"] for r in rows for i in r.get("incumbents") or []})
    med, lo, hi = [], [], []
    for t in times:
        held = sorted(c for c in (_held(r, t) for r in rows) if c is not None)
        if len(held) * 2 < len(rows) or not held:
            med.append(None), lo.append(None), hi.append(None)
            continue
        med.append(held[(len(held) - 1) // 2]), lo.append(held[0]), hi.append(held[-1])
    return times, med, lo, hi


def _gap_points(row: dict) -> tuple[list[float], list[float]]:
    known = [g for g in row.get("gap_trace") or [] if g.get("cost") and g.get("bound") is not None]
    return [g["time"] for g in known], [100 * (g["cost"] - g["bound"]) / g["cost"] for g in known]


def _convergence(plt, board: Leaderboard, info, rows_by_label: dict[str, list[dict]],
                 palette: dict[str, str], note: str):
    ref = info.best_known if info.best_known is not None else info.min_cost
    if not ref:
        return None
    mine = {label: [r for r in rows if r["instance"] == info.name and r.get("incumbents")]
            for label, rows in rows_by_label.items()}
    mine = {label: rows for label, rows in mine.items() if rows}
    if not mine:
        return None
    gaps = {label: [_gap_points(r) for r in rows] for label, rows in mine.items()}
    has_gap = any(ts for series in gaps.values() for ts, _ in series)
    if has_gap:
        fig, (ax, gap_ax) = plt.subplots(2, 1, figsize=(7.5, 6.6), sharex=True,
                                         gridspec_kw={"height_ratios": [3, 2]})
    else:
        fig, ax = plt.subplots(figsize=(7.5, 4.4))
    values: list[float] = []
    late_values: list[float] = []   # held after a tenth of the limit: what the axis must show
    for label, rows in sorted(mine.items()):
        colour = palette.get(label, "0.4")
        end = max(float(r.get("time_limit") or r.get("elapsed") or 0) for r in rows)
        times, med, lo, hi = _band(rows, end)
        keep = [k for k, m in enumerate(med) if m is not None]
        ts = [times[k] for k in keep]
        ys = [_excess(med[k], ref) for k in keep]
        tag = f"{label} (median of {len(rows)})" if len(rows) > 1 else label
        ax.step(ts, ys, where="post", color=colour, lw=1.8, label=tag)
        if len(rows) > 1:
            ax.fill_between(ts, [_excess(lo[k], ref) for k in keep], [_excess(hi[k], ref) for k in keep],
                            step="post", color=colour, alpha=0.18, lw=0)
        values += ys
        late_values += [y for t, y in zip(ts, ys) if t >= 0.1 * end]
        bounds = [r["lower_bound"] for r in rows if r.get("lower_bound")]
        if bounds:
            y = _excess(max(bounds), ref)
            ax.axhline(y, color=colour, lw=1.1, ls=(0, (4, 3)), alpha=0.9,
                       label=f"{label}: lower bound ({y:+.3g} %)")
            values.append(y)
        if has_gap:
            for t_gap, g in gaps[label]:
                if t_gap:
                    gap_ax.step(t_gap + [end], g + [g[-1]], where="post", color=colour, lw=1.3,
                                alpha=0.85)
    ax.axhline(0.0, color="black", lw=1.0, ls=":",
               label="reference: " + ("best known" if info.best_known is not None else "best here"))
    bench = contest.match(info.name)
    if bench is not None and bench.first_place_cost:
        y = _excess(bench.first_place_cost, ref)
        if abs(y) < 1e4:   # (1st place on W answered with a forbidden-cost plan)
            ax.axhline(y, color="0.25", lw=1.3, ls="-.", label=f"2025 contest, 1st place ({y:+.3g} %)")
            values.append(y)
    nonzero = [abs(v) for v in values if v != 0]
    ax.set_yscale("symlog", linthresh=10 ** math.floor(math.log10(
        max(1e-5, min(min(nonzero, default=1.0) / 2, 1.0)))))
    settled = [v for v in values if v > 0] or [1.0]   # the top: the plans held late, not the first
    top = max(sorted(settled)[int(0.8 * (len(settled) - 1))], max(late_values, default=0)) * 4
    ax.set_ylim(min(min(values, default=0), 0) * 2 - 1e-9, top)
    ax.set_ylabel(f"cost above the {'best known' if info.best_known is not None else 'best here'}, %")
    ax.set_title(f"{info.name}: convergence ({board.runs[0] if len(board.runs) == 1 else 'runs'})")
    ax.set_xlim(left=0)
    if info.time_limit:
        ax.axvline(info.time_limit, color="grey", lw=0.8, ls="--")
    ax.legend(fontsize="x-small", loc="best")
    ax.grid(alpha=0.3)
    last = gap_ax if has_gap else ax
    last.set_xlabel("seconds since the task started (loading included)")
    if has_gap:
        gap_ax.set_ylabel("(cost - bound) / cost, %")
        gap_ax.set_yscale("symlog", linthresh=0.1)
        gap_ax.set_title("certified gap of the plan held (against the bound known then)",
                         fontsize="small")
        gap_ax.grid(alpha=0.3)
    if note:
        fig.text(0.01, 0.005, note, fontsize="x-small", color="0.35")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    return fig


def _points(plt, board: Leaderboard, palette: dict[str, str], note: str):
    fig, ax = plt.subplots(figsize=(7.5, 0.36 * len(board.rows) + 1.4))
    rows = list(reversed(board.rows))
    colour = [palette.get(r.label, TEAM_GREY if r.kind == "team" else BASELINE_GREY) for r in rows]
    ax.barh(range(len(rows)), [r.total for r in rows], color=colour)
    for y, row in enumerate(rows):
        if row.total_interval:
            lo, hi = row.total_interval
            ax.plot([lo, hi], [y, y], color="black", lw=1.2)
        text = f" {row.total:.3f}" + (f" (n={row.trials})" if row.trials > 1 else "")
        ax.text(row.total_interval[1] if row.total_interval else row.total, y, text, va="center",
                fontsize="small")
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    for tick, row in zip(ax.get_yticklabels(), rows):
        if row.kind == "run":
            tick.set_fontweight("bold")
    ax.set_xlim(right=max([r.total for r in rows] + [0.1]) * 1.22)
    ax.set_xlabel(f"contest points (sum over {len(board.instances)} instances of min cost / cost); "
                  f"bars: 95 % bootstrap over seeds", fontsize="small")
    ax.set_title("points: " + ", ".join(board.runs) + (f", at {board.at:g} s" if board.at else ""))
    ax.grid(axis="x", alpha=0.3)
    if note:
        fig.text(0.01, 0.005, note, fontsize="x-small", color="0.35")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    return fig


def write_plots(board: Leaderboard, out_dir: str | Path, kinds: Sequence[str] = (
        "convergence", "points", "profile")) -> list[Path]:
    """The plots of ``kinds`` for a board (its ``run_data`` rows), as PNG and SVG under ``out_dir``."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = plot_stem(board)
    labels = {e.label: e for e in board.entries if e.kind == "run"}
    shown = {r.label for r in board.rows}
    palette = colours([label for label in labels if label in shown])
    note = hardware_note(board)
    rows_by_label = {label: [o.row for outs in e.outcomes.values() for o in outs if o.row]
                     for label, e in labels.items() if label in shown}
    written: list[Path] = []
    if "convergence" in kinds:
        for info in board.instances:
            fig = _convergence(plt, board, info, rows_by_label, palette, note)
            if fig is not None:
                written += _save(plt, fig, out / f"{stem}-convergence-{_safe(info.label)}")
    if "points" in kinds:
        written += _save(plt, _points(plt, board, palette, note), out / f"{stem}-points")
    if "profile" in kinds:
        prof = profile_of(board)
        team_palette = dict(palette)
        for label in prof.ratios:
            team_palette.setdefault(label, "0.45")
        fig = plot_profile(plt, prof, team_palette,
                           f"performance profile: {', '.join(board.runs)}"
                           + (f", at {board.at:g} s" if board.at else ""), note)
        written += _save(plt, fig, out / f"{stem}-profile")
    return written


def _save(plt, fig, stem: Path) -> list[Path]:
    """Write ``fig`` as ``stem``.png and .svg and close it; the paths written."""
    paths = [stem.with_name(f"{stem.name}.{ext}") for ext in ("png", "svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def plot_runs(run_paths: Sequence[str | Path], board: Leaderboard,
              out_dir: Optional[str | Path] = None,
              kinds: Sequence[str] = ("convergence", "points", "profile"),
              flag: str = "--plot") -> list[Path]:
    """Plots of a leaderboard, under the first run's ``plots/`` folder (or ``out_dir``);
    ``flag``: the option that asked for them, named when matplotlib is missing."""
    _pyplot(flag)  # fail early and clearly without matplotlib
    folder = Path(out_dir) if out_dir else (
        board.run_data[0].folder if board.run_data else load_run(run_paths[0]).folder) / "plots"
    if not board.run_data:
        board.run_data = [load_run(p) for p in run_paths]
    return write_plots(board, folder, kinds)
