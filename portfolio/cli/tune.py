"""``portfolio tune``: algorithm configuration of the portfolio on your instances (docs/tune.md);
the result is a TOML config for ``solve --config``, the run under runs/NAME for ``report``."""

from __future__ import annotations

import sys
from typing import Optional

import click

from ..errors import ProblemError
from .app import UserError, cli
from .backends import config_flag, reads_plugins
from .common import console

EXIT_INTERRUPTED = 130


@cli.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True), required=True,
              help="Seconds per run (loading included); in deterministic mode the safety net.")
@click.option("--backends", "-b", help="The backend set to tune (comma-separated; default: the "
              "default set). Each may be switched off, at least one stays on.")
@click.option("--seeds", default="2", show_default=True,
              help="Seeds per instance: a count K (0..K-1) or a list, 0,3,7 or 0-4.")
@click.option("--seed", type=int, default=0, show_default=True, help="The tuner's own seed.")
@click.option("--trials", type=click.IntRange(min=1),
              help="Configurations to try, the default first (default: 20 unless --hours).")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True),
              help="Tune for this long instead of a number of trials.")
@click.option("--name", help="Run folder under --runs-dir (default: tune-DIGEST of the settings, "
              "so the same command finds and resumes its run).")
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--deterministic", is_flag=True, help="Every run in deterministic mode: no timing "
              "noise, the same configuration for the same seed whatever the load.")
@click.option("--work", type=click.IntRange(min=1), help="Work units per run (implies "
              "--deterministic; docs/determinism.md).")
@click.option("--dask-scheduler", metavar="tcp://HOST:PORT", help="Run the evaluations on this "
              "Dask cluster.")
@click.option("--dask-workers", type=click.IntRange(min=1), metavar="N",
              help="Start a local Dask cluster of N workers for the evaluations.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Evaluations at once on this machine (each run shares the cores).")
@click.option("--validate", multiple=True, metavar="FILES",
              help="Instances (files, folders, globs; repeatable) on which default and tuned "
                   "are run and reported after the tune.")
@click.option("--space", type=click.Path(dir_okay=False), metavar="FILE.toml",
              help="Narrow or fix parts of the space (docs/tune.md).")
@click.option("--quiet", "-q", is_flag=True, help="No live view.")
@config_flag
@reads_plugins
def tune(files: tuple[str, ...], time_limit: float, backends: Optional[str], seeds: str,
         seed: int, trials: Optional[int], hours: Optional[float], name: Optional[str],
         runs_dir: str, deterministic: bool, work: Optional[int], dask_scheduler: Optional[str],
         dask_workers: Optional[int], jobs: int, validate: tuple[str, ...],
         space: Optional[str], quiet: bool, config: tuple[str, ...]) -> None:
    """Tune the backend options and the backend set on FILES (files, folders, globs).

    The default configuration runs first; then Optuna proposes configurations, each raced on the
    (instance, seed) pairs against the best so far, dropped (after 3 pairs at least) and adopted
    only when a paired test says so at level 0.05, ties broken by how early good plans came. The
    score is the mean over the pairs of cost / reference (the contest's best known, else the best
    seen). Prints
    the written config's path (runs/NAME/tuned.toml) on stdout: `portfolio solve --config` takes
    it. Ctrl-C keeps every finished run; the same command resumes. `portfolio report runs/NAME`
    shows the trials, the incumbent over time and default against tuned.

    With --config (repeatable, merged in order): its [portfolio] backends are the set when neither
    --backends nor --space names one, its add_to_default joins the default set, and the options it
    sets stay fixed at its values in the configurations the tuner proposes, as --space values do
    (a --space entry for the same option wins).
    """
    from ..api.tuning import tune as run
    from ..tuning.progress import TuneProgress

    if trials is not None and hours is not None:
        raise UserError("--trials and --hours exclude each other: give one")
    progress = None if quiet else TuneProgress(console)
    try:
        outcome = run(list(files), time_limit=time_limit,
                      backends=backends.split(",") if backends else None, seeds=seeds, seed=seed,
                      trials=trials, hours=hours, name=name, runs_dir=runs_dir,
                      deterministic=deterministic, work=work, dask_scheduler=dask_scheduler,
                      dask_workers=dask_workers, jobs=jobs, validate=list(validate), space=space,
                      progress=progress, command=["portfolio", *sys.argv[1:]],
                      config=list(config))
    except ProblemError as exc:
        raise UserError(str(exc)) from None
    if outcome.summary is not None and not quiet:
        from ..report.tune import summary_table

        console.print(summary_table(outcome.summary))
    if outcome.interrupted:
        console.print(f"[yellow]interrupted[/]: every finished run is kept in {outcome.folder}; "
                      f"the same command resumes", highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    console.print(f"config: {outcome.config}; next: portfolio report {outcome.folder}",
                  highlight=False)
    click.echo(str(outcome.config))
