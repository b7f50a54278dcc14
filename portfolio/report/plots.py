"""Plots of a leaderboard's runs: convergence per instance (with the certified gap when bounded)
and the points per configuration, as PNG and SVG. Needs matplotlib (the ``plot`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..data import contest
from .leaderboard import Leaderboard, ReportError, entries_from_runs, load_run


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
    written = write_plots(board, by_label, folder)
    for run in runs:   # a tradeoff run (portfolio tradeoff) gets its cost curve in its own folder
        if run.meta.get("kind") == "tradeoff" and run.rows:
            written += write_tradeoff_plot(run.rows, Path(out_dir) if out_dir else run.folder /
                                           "plots", run.rows[0]["instance"], run.meta.get("limit"))
    return written


def write_tradeoff_plot(rows: Sequence[dict], out_dir: str | Path, title: str,
                        limit: Optional[int] = None) -> list[Path]:
    """The cost at each budget of a tradeoff's rows (a step down as the budget grows), its lower
    bounds dashed, the file's own limit marked; PNG and SVG as ``tradeoff-TITLE``."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    done = sorted((r for r in rows if r.get("cost") is not None), key=lambda r: r["budget"])
    if done:
        budgets = [r["budget"] for r in done]
        ax.step(budgets, [r["cost"] for r in done], where="post", color="C0", lw=1.4,
                label="cost of the best plan that fits")
        ax.plot(budgets, [r["cost"] for r in done], ls="none", marker="o", ms=4, color="C0")
        costs = [r["cost"] for r in done]
        if min(costs) > 0 and max(costs) / min(costs) > 20:
            ax.set_yscale("log")
        bounded = [r for r in done if r.get("lower_bound") is not None]
        if bounded:
            ax.plot([r["budget"] for r in bounded], [r["lower_bound"] for r in bounded], ls="--",
                    marker=".", color="C1", lw=0.9, label="lower bound")
    for r in rows:
        if r.get("status") == "infeasible":
            ax.axvline(r["budget"], color="tab:red", lw=0.6, ls=":", alpha=0.7)
    if limit is not None:
        ax.axvline(limit, color="grey", lw=0.9, ls="--", label=f"the file's limit ({limit:,})")
    ax.set_xlabel("memory budget")
    ax.set_ylabel("cost")
    ax.set_title(f"{title}: cost against memory")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(plt, fig, out / f"tradeoff-{_safe(title)}")
