"""``portfolio bench``: a sweep to runs/NAME/ (``portfolio report`` renders it: :mod:`.report`)."""

from __future__ import annotations

import sys

import click
from .app import UserError, cli
from .backends import option_flags, reads_plugins
from .common import console


@cli.command()
@click.argument("instances", nargs=-1, required=True)
@click.option("--backends", "-b",
              help="Comma-separated configurations: a backend run alone, or a set run together "
                   "as one portfolio, a+b+c (named as written) or NAME=a+b+c; a member takes "
                   "options in brackets, b[NAME=VALUE,...]; 'portfolio' in a set is the default set; "
                   "LABEL=cmd:COMMAND runs a contest-style solver ({file} {timeout}: docs/bench.md).")
@click.option("--portfolio", "use_portfolio", is_flag=True,
              help="Run all available backends together as one configuration, 'portfolio'.")
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True),
              help="Seconds per task, loading included (with --contest-timeouts: the fallback for "
                   "non-contest instances). Default 60.")
@click.option("--contest-timeouts", is_flag=True, help="Each contest benchmark's own limit (60-300 s).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs of each (instance, configuration, seed).")
@click.option("--seeds", default="0", show_default=True, help="Seeds: 0,1,2 or 0-4.")
@click.option("--jobs", "-j", type=click.IntRange(min=1),
              help="Tasks at once here (default 1). With --dask-scheduler the cluster's threads decide.")
@click.option("--name", help="Run folder name under --runs-dir (default: bench-DATE-TIME).")
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--resume", is_flag=True, help="Finish an interrupted run: skip its finished tasks.")
@click.option("--force", is_flag=True, help="Start the run folder over (the old one is kept, renamed).")
@click.option("--dask-scheduler", metavar="tcp://HOST:PORT", help="Run the tasks on this Dask cluster.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@click.option("--deterministic", is_flag=True,
              help="Every task in deterministic mode (docs/determinism.md): the same plan for the "
                   "same instance, seed and work whatever the load; the time limit is then the "
                   "safety net only (default 600 s). Rows record work and plan_hash.")
@click.option("--work", type=click.IntRange(min=1), metavar="N",
              help="Work units of each deterministic task (implies --deterministic; default: the "
                   "runner's, about 60 s of the default portfolio on the reference machine).")
@option_flags
@reads_plugins
def bench(instances: tuple[str, ...], backends: str | None, use_portfolio: bool,
          time_limit: float | None, contest_timeouts: bool, repeat: int, seeds: str, jobs: int | None,
          name: str | None, runs_dir: str, resume: bool, force: bool, dask_scheduler: str | None,
          quiet: bool, deterministic: bool, work: int | None, assignments: tuple[str, ...],
          config: tuple[str, ...]) -> None:
    """Sweep INSTANCES (files, folders, globs) x solver configurations x seeds; results to runs/NAME/.

    Every task runs the portfolio runner (each plan verified by the exact evaluator); rows stream to
    runs/NAME/results.jsonl as tasks finish. Render them with `portfolio report runs/NAME`.
    Configurations alternate: every configuration of an (instance, seed) runs before the next seed.

    Options: a member takes them in brackets, `-b 'toulbar2[warm_follow=last]+localsearch'`, and
    `portfolio` in a set is the default set: `-b 'last=portfolio+toulbar2[warm_follow=last]'`;
    --option and --config (repeatable, merged in order) give them to every configuration. The
    brackets of `portfolio` itself are run options: `-b 'on=portfolio[adaptive=true],off=portfolio'`,
    `-b 'sel=portfolio[selector=FILE],portfolio'` (a `portfolio learn` selector applied per task).

    Config files as configurations: `-b 'a=@A.toml,b=@B.toml'` runs each file's [portfolio]
    backends (else the default set, with its add_to_default) with its options.

    Another checkout's code: `-b 'before=portfolio@../main,after=portfolio'` runs the configuration
    `before` with the code of the checkout ../main (its .venv/bin/python when it has one), or of a
    Python interpreter given instead of the folder; rows record which code ran.

    Any contest-style solver: `-b 'winner=cmd:./iopddl {file} {timeout}'` runs the command once per
    task ({file}: plain JSON, {file_gz}: the file as given, {timeout}: seconds, {seed}); its last
    stdout line that is not a '#' comment is its plan, verified here; killed 5 s past the limit.
    """
    from ..api.bench_selection import selector_step
    from ..bench import BenchError, parse_seeds, run_sweep
    from ..bench.plan import split_configurations

    from ..options import DETERMINISTIC_TIME_LIMIT

    if time_limit is None and not contest_timeouts:
        time_limit = DETERMINISTIC_TIME_LIMIT if deterministic or work is not None else 60.0
    try:
        names = split_configurations(backends or "")
        result = run_sweep(list(instances), backends=names, portfolio=use_portfolio,
                           time_limit=time_limit, contest_timeouts=contest_timeouts,
                           seeds=parse_seeds(seeds), repeat=repeat, jobs=jobs, name=name,
                           runs_dir=runs_dir, resume=resume, force=force,
                           dask_scheduler=dask_scheduler, console=None if quiet else console,
                           command=["portfolio", *sys.argv[1:]], assignments=assignments,
                           config=list(config), deterministic=deterministic, work=work,
                           selector_step=selector_step)
    except BenchError as exc:
        raise UserError(str(exc)) from None
    if result.moved_old_to:
        console.print(f"the previous run folder was kept as {result.moved_old_to}")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(result.statuses.items())) or "nothing new"
    console.print(f"{result.finished} task(s) run ({counts}), {result.skipped} already done; "
                  f"results in {result.folder / 'results.jsonl'}", highlight=False)
    if result.interrupted:
        console.print(f"[yellow]interrupted[/]: finished tasks are kept; continue with "
                      f"`portfolio bench ... --name {result.folder.name} --resume`", highlight=False)
        click.echo(str(result.folder))
        sys.exit(130)
    console.print(f"next: portfolio report {result.folder}", highlight=False)
    click.echo(str(result.folder))
    if result.failed:
        _tell_failures(result.failures)
        sys.exit(EXIT_TASKS_FAILED)


EXIT_TASKS_FAILED = 1
"""The sweep ran, but some task failed (error, crashed, timeout): its rows and errors are kept."""


def _tell_failures(failures: list[dict], shown: int = 5) -> None:
    """The failed tasks on stderr, one line per distinct error (the first line of its text)."""
    by_error: dict[str, list[dict]] = {}
    for f in failures:
        first = (f["error"].strip().splitlines() or [f["status"]])[0]
        by_error.setdefault(f"{f['status']}: {first}", []).append(f)
    earlier = sum(f["earlier"] for f in failures)
    console.print(f"[red]{len(failures)} task(s) failed[/]"
                  + (f" ({earlier} in earlier sessions; delete their lines to run them again)"
                     if earlier else "") + "; `portfolio report` shows them too:", highlight=False)
    for text, group in list(by_error.items())[:shown]:
        where = ", ".join(f"{f['instance']}/{f['configuration']} s{f['seed']}" for f in group[:3])
        more = f" and {len(group) - 3} more" if len(group) > 3 else ""
        console.print(f"  {where}{more}: {text}", highlight=False, soft_wrap=True)
    if len(by_error) > shown:
        console.print(f"  ... and {len(by_error) - shown} other error(s)", highlight=False)
