"""``portfolio learn RUNS... -o selector.json``: a selector trained from bench runs, and its
leave-one-instance-out cross-validation (``--cv``; docs/selection.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import click

from .app import UserError, cli
from .common import _refuse_overwrite, console

LEARN_MARGIN = 0.003
"""``--margin``'s default: :data:`portfolio.selection.selector.MARGIN` (why there), written here
so that the command line does not import the selection package to show its help."""

CANDIDATES_HELP = ("Comma-separated configuration names to choose among (default: every "
                   "configuration of the runs that ran on at least --min-graphs graphs).")


def _cheap_features_of(path: str) -> Optional[dict]:
    """The cheap features of the instance file at ``path`` (None when it does not load): for
    rows made before bench rows carried features."""
    from ..features import cheap_features
    from ..io import load_problem

    if not Path(path).is_file():
        return None
    try:
        return cheap_features(load_problem(path))
    except Exception:  # noqa: BLE001 -- a file that no longer loads: its instance is left out
        return None


def _score(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.4f}"


def _graph(name: str) -> str:
    from ..data import contest

    bench = contest.match(name)
    return name if bench is None else bench.letter


def cv_table(cv: Any) -> Any:
    """The cross-validation as a rich table: per graph and budget the selector's pick and its
    score, the virtual best, the single best and the default, and the two gaps."""
    from rich.table import Table

    table = Table(title="leave-one-instance-out cross-validation (mean score per cell)",
                  title_justify="left")
    heads = [("graph", "left"), ("budget", "right"), ("selected", "left"), ("score", "right"),
             ("virtual best", "left"), ("score", "right"),
             (f"single best ({cv.single_best or '-'})", "right"),
             (f"default ({cv.default or '-'})", "right"), ("VB - default", "right"),
             ("VB - selected", "right")]
    for head, justify in heads:
        table.add_column(head, justify=justify)
    for r in cv.rows:
        table.add_row(_graph(r.instance), f"{r.budget:g} s", r.selected or "-",
                      _score(r.selected_score), r.virtual_best, _score(r.virtual_best_score),
                      _score(r.single_best_score), _score(r.default_score),
                      _score(None if r.default_score is None
                             else r.virtual_best_score - r.default_score),
                      _score(None if r.selected_score is None
                             else r.virtual_best_score - r.selected_score))
    return table


def summary_line(summary: dict) -> str:
    """The cross-validation's means in one line."""
    if not summary.get("cells"):
        return "cross-validation: none (it needs two graphs or more)"
    said = (f"cross-validation over {summary['cells']} cells: selector {_score(summary['selector'])}, "
            f"virtual best {_score(summary['virtual_best'])}, single best "
            f"{_score(summary['single_best'])}, default {_score(summary['default'])}")
    if summary.get("gap_default") is not None:
        closed = summary.get("closed")
        said += (f"; gap to the virtual best: default {_score(summary['gap_default'])}, selector "
                 f"{_score(summary['gap_selector'])} over {summary['paired_cells']} cells"
                 + ("" if closed is None else f" ({100 * closed:.0f} % of it closed)"))
    return said


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--output", "-o", type=click.Path(), help="Write the selector here (JSON).")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@click.option("--cv", is_flag=True, help="Print the leave-one-instance-out cross-validation "
              "table (its summary is printed and stored in the selector file in any case).")
@click.option("--json", "as_json", is_flag=True, help="Print the cross-validation as JSON on "
              "stdout.")
@click.option("--candidates", help=CANDIDATES_HELP)
@click.option("--default", "default_name", default="portfolio", show_default=True,
              help="The configuration that stands for today's default run (the "
              "cross-validation's reference; ties in the choice go to it).")
@click.option("--min-graphs", type=click.IntRange(min=1), default=2, show_default=True,
              help="A configuration is a candidate when it ran on this many graphs.")
@click.option("--trees", type=click.IntRange(min=1), default=32, show_default=True,
              help="Trees of each candidate's random forest.")
@click.option("--seed", type=int, default=0, show_default=True, help="The forests' seed.")
@click.option("--margin", type=click.FloatRange(min=0, max=1, max_open=True), default=LEARN_MARGIN,
              show_default=True,
              help="Leave the --default candidate only for one predicted better by more than "
                   "this (a score difference; the seed noise of the training runs).")
def learn(runs: tuple[str, ...], output: Optional[str], force: bool, cv: bool, as_json: bool,
          candidates: Optional[str], default_name: str, min_graphs: int, trees: int,
          seed: int, margin: float) -> None:
    """Train a selector from bench RUNS (run folders): per candidate configuration, a model of
    its mean score from the instance's cheap features and the time limit; `portfolio solve
    --selector FILE` runs the candidate predicted best (docs/selection.md).

    Scores are the contest's (the best known or best seen cost / the cost, 0 without a plan).
    Rows without features get them from their instance files. Needs scikit-learn (pip install
    'iopddl-portfolio[learn]'); applying a selector does not.
    """
    from ..selection import SelectorError
    from ..selection.crossval import cross_validate
    from ..selection.dataset import read_training
    from ..selection.fit import learn as fit

    if output is None and not cv and not as_json:
        raise UserError("nothing to do: give --output FILE and/or --cv (see `portfolio learn "
                        "--help`)")
    _refuse_overwrite(output, force)
    only = [c.strip() for c in candidates.split(",") if c.strip()] if candidates else None
    try:
        data = read_training(list(runs), _cheap_features_of, only, default_name, min_graphs)
        for note in data.notes:
            console.print(f"note: {note}", highlight=False, soft_wrap=True)
        result = cross_validate(data, trees, seed, margin)
        selector = fit(data, trees, seed, {**result.to_json(), "margin": margin},
                       margin) if output else None
    except SelectorError as exc:
        raise UserError(str(exc)) from None
    console.print(f"{len(data.cells)} cells ({len(data.instances)} graphs x budgets "
                  f"{', '.join(f'{b:g}' for b in data.budgets)} s), {len(data.candidates)} "
                  f"candidates: {', '.join(s.name for s in data.candidates)}",
                  highlight=False, soft_wrap=True)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    if cv:
        console.print(cv_table(result))
    console.print(summary_line(result.summary), highlight=False, soft_wrap=True)
    if selector is not None:
        Path(output).write_text(selector.dumps())
        console.print(f"selector written: {output} ({Path(output).stat().st_size:,} bytes)",
                      highlight=False)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    elif output:
        click.echo(output)
