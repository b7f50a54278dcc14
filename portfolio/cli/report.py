"""``portfolio report``: leaderboards, tidy CSV, anytime rescoring and plots of bench runs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import click
from rich.console import Console

from .app import UserError, cli
from .common import _emit_json, console

VIEWS = ("auto", "wide", "compact")


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--reference", type=click.Choice(["contest"]),
              help="Add the 2025 contest's teams and XLA as rows (contest instances only).")
@click.option("--at", "at", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Rescore every row as if its limit had been SECONDS, from its incumbent trace.")
@click.option("--configs", help="Only these configurations (comma-separated), compared among themselves.")
@click.option("--instances", help="Only these instances (names or contest letters, comma-separated).")
@click.option("--top", type=click.IntRange(min=0), metavar="N",
              help="Show only the N best contest teams (all of them still set the minimum).")
@click.option("--pair", metavar="A,B", help="Paired wins and losses of configuration A against B.")
@click.option("--oracle", is_flag=True,
              help="Add the virtual best (per instance, the best single-backend configuration) and "
                   "the single best (the best total of them) as reference rows.")
@click.option("--aslib", "aslib_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Also write the runs as an ASlib scenario to DIR (a new folder): docs/bench.md.")
@click.option("--view", type=click.Choice(VIEWS), default="auto", show_default=True,
              help="wide: configurations down, instances across; compact: turned around, for "
                   "narrow terminals; auto: compact when the wide table does not fit.")
@click.option("--csv", "csv_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the tidy per-task CSV (one row per task) to FILE ('-': stdout).")
@click.option("--target", type=click.FloatRange(min=1.0), default=1.01, show_default=True,
              help="The --csv column time_to_target: first time within this factor of the best known.")
@click.option("--plot", is_flag=True,
              help="Write convergence, points and profile plots (PNG, SVG) to RUN/plots/.")
@click.option("--profile", is_flag=True,
              help="The performance profile over every instance: a table, and its plot in RUN/plots/.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True, help="table: rich on stderr; the others on stdout.")
def report(runs: tuple[str, ...], reference: str | None, at: float | None, configs: str | None,
           instances: str | None, top: int | None, pair: str | None, view: str,
           csv_file: str | None, target: float, plot: bool, profile: bool, fmt: str,
           oracle: bool = False, aslib_dir: str | None = None) -> None:
    """Leaderboard of bench RUNS (folders or results.jsonl files): costs, contest points, rank.

    Points on each instance are min_cost / cost over the rows compared; the total decides the rank.
    A `portfolio tradeoff` run is shown as its tradeoff table instead (cost at each budget, the
    cost saved per extra GiB), and --plot draws its curve. A `portfolio tune` run is shown as its
    trials, the incumbent over tuning time and default against tuned.
    """
    from ..report import ReportError, build, plot_runs, render_csv, render_markdown, to_json
    from ..report.tidy import render_tidy_csv

    if csv_file and csv_file != "-" and Path(csv_file).exists():
        raise UserError(f"{csv_file}: the file exists; remove it or give another name")
    asked = {"--reference": reference, "--at": at, "--configs": configs, "--instances": instances,
             "--top": top, "--pair": pair, "--csv": csv_file, "--profile": profile or None,
             "--oracle": oracle or None, "--aslib": aslib_dir,
             "--view": None if view == "auto" else view}
    if _tradeoff_runs(runs):
        _report_tradeoffs(runs, [k for k, v in asked.items() if v is not None], plot, fmt)
        return
    if _tune_runs(runs):
        _report_tunes(runs, [k for k, v in asked.items() if v is not None and k != "--csv"] +
                      (["--plot"] if plot else []), fmt, csv_file)
        return
    try:
        board = build(list(runs), reference, at=at, configs=_names(configs),
                      instances=_names(instances), top=top, pair=_names(pair),
                      extra_rows=_oracle() if oracle else None)
        kinds = ("convergence", "points", "profile") if plot else ("profile",) if profile else ()
        written = plot_runs(list(runs), board, kinds=kinds,
                            flag="--plot" if plot else "--profile") if kinds else []
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if aslib_dir:
        from .aslib import write_aslib

        write_aslib(board, aslib_dir)
    if csv_file:
        text = render_tidy_csv(board, target)
        if csv_file == "-":
            click.echo(text, nl=False)
        else:
            Path(csv_file).write_text(text, encoding="utf-8")
            console.print(f"tidy CSV: {text.count(chr(10)) - 1} task rows in {csv_file}", highlight=False)
    if fmt == "table":
        _print_table(board, view)
        if profile or plot:
            from ..report.profile import profile_of, profile_table

            console.print(profile_table(profile_of(board)))
    elif fmt == "markdown":
        click.echo(render_markdown(board), nl=False)
    elif fmt == "csv" and csv_file != "-":
        click.echo(render_csv(board), nl=False)
    elif fmt == "json":
        _emit_json(to_json(board))
    if written:
        console.print(f"plots: {len(written)} files in {written[0].parent}", highlight=False)


def _oracle():
    from ..report.oracle import reference_entries

    return reference_entries


def _print_table(board, view: str) -> None:
    """The wide table when it fits (or is asked for), else the compact one; in a log or a file
    (not a terminal) the wide table at its natural width."""
    from ..report.compact import choose_view

    renderable, width = choose_view(board, view, console.width, console.is_terminal)
    out = console if width is None else Console(stderr=True, width=width)
    out.print(renderable)


def _runs_of_kind(runs: tuple[str, ...], is_kind: Callable[[object], bool], kind: str) -> bool:
    """Whether RUNS are all of ``kind`` (`portfolio tradeoff` or `portfolio tune` runs); a mix with
    bench runs is refused (a leaderboard would rank budgets or trials as competing solvers)."""
    from ..report import ReportError, load_run

    try:
        kinds = {str(r): is_kind(load_run(r)) for r in runs}
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if len(set(kinds.values())) > 1:
        one = next(r for r, k in kinds.items() if k)
        other = next(r for r, k in kinds.items() if not k)
        raise UserError(f"{one} is a {kind} run and {other} a bench run: report them separately")
    return all(kinds.values())


def _tradeoff_runs(runs: tuple[str, ...]) -> bool:
    from ..report.tradeoff import is_tradeoff

    return _runs_of_kind(runs, is_tradeoff, "tradeoff")


def _report_tradeoffs(runs: tuple[str, ...], refused: list[str], plot: bool, fmt: str) -> None:
    """Each tradeoff run's table (or markdown, CSV, JSON) and, with --plot, its curve in its
    folder's plots/."""
    from ..report import ReportError
    from ..report.tradeoff import load_tradeoff, tradeoff_csv, tradeoff_markdown, tradeoff_table

    if refused:
        raise UserError(f"{', '.join(refused)}: not for a tradeoff run ({runs[0]}); it takes "
                        f"--plot and --format")
    try:
        docs = [load_tradeoff(r) for r in runs]
        written = []
        if plot:
            from ..report.tradeoff_plot import write_tradeoff_plot

            for doc in docs:
                written += write_tradeoff_plot(doc, Path(doc["folder"]) / "plots")
    except ReportError as exc:
        raise UserError(str(exc)) from None
    for doc in docs:
        if fmt == "table":
            console.print(tradeoff_table(doc))
        elif fmt == "markdown":
            click.echo(tradeoff_markdown(doc))
    if fmt == "csv":
        click.echo(tradeoff_csv(docs), nl=False)
    elif fmt == "json":
        _emit_json(docs[0] if len(docs) == 1 else docs)
    if written:
        console.print(f"plots: {', '.join(str(p) for p in written)}", highlight=False)


def _tune_runs(runs: tuple[str, ...]) -> bool:
    from ..report.tune import is_tune

    return _runs_of_kind(runs, is_tune, "tune")


def _report_tunes(runs: tuple[str, ...], refused: list[str], fmt: str,
                  csv_file: str | None) -> None:
    """Each tune run's trials, incumbent trace and default against tuned (or markdown, JSON);
    ``--csv FILE`` and ``--format csv``: one row per trial."""
    from ..report import ReportError
    from ..report.tune import (load_tune, summary_table, trace_table, trials_table, tune_csv,
                               tune_json, tune_markdown, tune_summary)

    if refused:
        raise UserError(f"{', '.join(refused)}: not for a tune run ({runs[0]}); it takes --csv "
                        f"and --format")
    try:
        docs = [load_tune(r) for r in runs]
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if csv_file or fmt == "csv":
        text = tune_csv(docs)
        if csv_file and csv_file != "-":
            Path(csv_file).write_text(text, encoding="utf-8")
            console.print(f"tune CSV: {text.count(chr(10)) - 1} trial rows in {csv_file}",
                          highlight=False)
        else:
            click.echo(text, nl=False)
        if fmt == "csv":
            return
    for doc in docs:
        if fmt == "table":
            console.print(trials_table(doc))
            console.print(trace_table(doc))
            console.print(summary_table(tune_summary(doc)))
            if doc["config"]:
                console.print(f"config: {doc['config']}", highlight=False)
        elif fmt == "markdown":
            click.echo(tune_markdown(doc))
    if fmt == "json":
        click.echo(tune_json(docs[0] if len(docs) == 1 else {"runs": docs}))
