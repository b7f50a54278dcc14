"""``portfolio solve`` and ``iopddl``: one portfolio run under a deadline (clock, signals, loading,
the answer line and table)."""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import click

from ..clock import CLOCKS, EXEC_GAP, command_start
from ..cpuload import cpu_record, load_average, starved
from ..errors import ProblemError
from ..exhaustive import MAX_PLANS
from ..io import format_contest
from ..options import DEFAULT_POLICY, DEFAULT_WORK, DETERMINISTIC_TIME_LIMIT, RunOptions
from ..problem import Problem
from .app import EXIT_BAD_INPUT, EXIT_NO_SOLUTION, EXIT_OK, UserError, _Command, cli
from .backends import _select_backends, option_flags, reads_plugins
from .cluster import cluster_from, cluster_options
from .common import _refuse_overwrite, bundled_example, console

CLOCK_HELP = ("What the time limit counts from: 'program', this program's start; 'process', the "
              "creation of its process (earlier when a shell ran other commands and then exec'd it, "
              "as in `bash -c \"cd x && iopddl f 60\"`).")
NO_EXHAUSTIVE_HELP = (f"Do not settle an instance of at most {MAX_PLANS:,} plans by scoring every "
                      f"plan; run the backends on it as on any other.")
DETERMINISTIC_HELP = ("The same plan for the same problem, seed and --work, whatever the load or the "
                      "number of cores: backends count work units instead of seconds and exchange "
                      "plans at fixed points; the time limit is only the safety net (default "
                      f"{DETERMINISTIC_TIME_LIMIT:g} s). Backends that do not support it are left out "
                      "(named with -b: refused). See docs/determinism.md.")
WORK_HELP = (f"Work units of a deterministic run, split among its backends in proportion to their "
             f"declared work_share (localsearch and toulbar2 3, bound, cpsat and maxsat 1, greedy "
             f"and minusage 0.1); one unit is about a millisecond of one core. Implies "
             f"--deterministic. Default {DEFAULT_WORK:,}: with the default portfolio on the "
             f"reference 2-core machine, quiet, 34-74 s by instance (A 34, N 57, S 61, K 64, M 74 "
             f"s; docs/benchmarks/determinism.md); the wall grows with the machine's load, the "
             f"plan does not change.")


def outside_text(outside: list[dict]) -> str:
    """The outside backends of a run as one phrase: ``example (portfolio-example-plugin 0.1.0,
    via entry point), mine (via object (mod.Mine))``."""
    def one(o: dict) -> str:
        where = " ".join(filter(None, (o.get("distribution"), o.get("version"))))
        return f"{o['name']} ({where + ', ' if where else ''}via {o['via']})"

    return ", ".join(one(o) for o in outside)


def deterministic_options(command: Any) -> Any:
    """``--deterministic`` and ``--work``, for ``solve`` and ``iopddl``."""
    command = click.option("--work", type=click.IntRange(min=1), metavar="N", help=WORK_HELP)(command)
    return click.option("--deterministic", is_flag=True, help=DETERMINISTIC_HELP)(command)


def _presolve_message(prob: Problem, info: dict | None, quiet: bool) -> None:
    """Tell the user what presolve (run under the deadline in a child process) did."""
    if not info:
        return
    if "error" in info:
        console.print(f"[yellow]warning:[/] presolve not used, backends got the original problem: "
                      f"{info['error']}", highlight=False, soft_wrap=True)
    elif info.get("note"):
        console.print(f"[yellow]presolve:[/] {info['note']}", highlight=False, soft_wrap=True)
    elif not quiet and "nodes" in info:
        console.print(f"presolve: {prob.num_nodes:,} nodes -> {info['nodes']:,} "
                      f"({info['free_nodes']:,} free), {info['edges']:,} edges, {info['seconds']:.2f} s")


class _Interrupted(Exception):
    """SIGINT/SIGTERM before the portfolio run started (during it, the runner handles them)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: object) -> None:
    raise _Interrupted(signum)


def _on_signals(handler: Any) -> dict:
    """Set ``handler`` (or a dict of handlers by signal) for SIGINT/SIGTERM; returns the old ones."""
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            old[sig] = signal.signal(sig, handler[sig] if isinstance(handler, dict) else handler)
        except (ValueError, OSError, KeyError):  # not the main thread (an in-process caller)
            pass
    return old


def _load_for_solve(path: str | Path, cost_scale: float = 1.0) -> tuple[Any, float]:
    """Load under the deadline, as ``portfolio.solve`` does (``json`` for small files, no numba),
    with the conversion (plans map back to the file's node order, costs to its units; its notes go
    to stderr)."""
    from .common import _read

    return _read(path, cost_scale)


def _warm_start(conversion: Any, warm_start: str | None, previous: str | None,
                node_map: str | None, cost_scale: float, quiet: bool,
                deterministic: bool = False) -> Any:
    """The run's warm start, as ``portfolio.solve``/``resolve`` take it (the same checks and
    lines): ``--warm-start`` (mapped from ``--previous``/``--node-map`` for a re-solve), else an
    XLA request's ``s_hint``; None without one."""
    from ..api.resolving import Remap
    from ..api.warm import given_warm_start

    given: Any = warm_start
    if warm_start is not None and (previous is not None or node_map is not None):
        given = Remap(warm_start, previous, node_map, cost_scale, what="warm start",
                      deterministic=deterministic)
    warm = given_warm_start(conversion, given)
    if warm is not None and warm.mapping is not None and not quiet:
        m = warm.mapping
        console.print(f"warm start ({warm.source}): mapped by {m['by']}: {m['kept']:,} of "
                      f"{m['nodes']:,} choices kept, {m['found_by_signature']:,} found again by "
                      f"signature, {m['open']:,} nodes left open for the repair",
                      highlight=False, soft_wrap=True)
    return warm


def run_solve(problem_path: str | Path, options: RunOptions, backends: str | None = None,
              output: str | None = None, as_json: bool = False, quiet: bool = False,
              force: bool = False, clock: str = "program", cost_scale: float = 1.0,
              warm_start: str | None = None, previous: str | None = None,
              node_map: str | None = None, debug: bool = False, explain: bool = True,
              config: Sequence[str] | str | None = None, assignments: Sequence[str] = (),
              selector: str | None = "default") -> int:
    """Run the portfolio on a problem file and report; returns the exit code.

    ``options`` says what the run does (its ``start`` is set here, from ``clock``); with
    ``options.cluster`` the solve runs on a Dask cluster (docs/distributed.md).

    ``clock`` says what the budget counts from (:mod:`portfolio.clock`): ``program``, this program's
    start, or ``process``, its process's creation (a shell that exec'd it included).

    ``warm_start`` is a plan file the run starts from (with ``previous``, the previous problem's
    file, and/or ``node_map``: a re-solve, the plan mapped onto this problem); an XLA request's
    ``s_hint`` otherwise. ``debug``: print the whole traceback of each backend that raised.

    SIGINT/SIGTERM end the run at once: the best verified plan is printed as usual and the exit code
    is 128 + the signal's number (130, 143).

    ``explain``: when no plan fits, say why (the memory paragraph on stderr, ``memory`` in --json;
    docs/budgets.md); ``iopddl`` does not. ``config`` and ``assignments`` (``--config``, one file
    or several merged in order, and ``--option``): the backends' options, checked before anything
    runs. ``selector`` (``--selector``): a selector file, ``default`` (the shipped one when the
    default uses it) or ``none`` (docs/selection.md).
    """
    late: list[int] = []
    handlers = _on_signals(_raise_interrupted)
    warm = (warm_start, previous, node_map)
    try:
        return _run_solve(problem_path, options, backends, output, as_json, quiet, force, late,
                          clock, cost_scale, warm, debug, explain, config, tuple(assignments),
                          selector)
    except _Interrupted as stop:
        _on_signals(lambda signum, frame: None)
        console.print(f"[yellow]interrupted[/] ({stop}) before any plan was found", highlight=False)
        click.echo("[]")
        return 128 + stop.signum
    finally:
        _on_signals(handlers)


def _say(line: str) -> None:
    """A line about the cluster, on stderr."""
    console.print(f"[yellow]{line}[/]", highlight=False, soft_wrap=True)


def _run_solve(problem_path: str | Path, options: RunOptions, backends: str | None,
               output: str | None, as_json: bool, quiet: bool, force: bool, late: list[int],
               clock: str, cost_scale: float, warm_files: tuple = (None, None, None),
               debug: bool = False, explain: bool = True,
               config: Sequence[str] | str | None = None, assignments: tuple = (),
               selector: str | None = "default") -> int:
    from ..api import run
    from ..api.selecting import open_selector
    from ..progress import LiveProgress

    start, before = command_start(clock)
    load_start = load_average()
    options = replace(options, start=start)
    time_limit = options.time_limit
    if before >= EXEC_GAP and not quiet:
        console.print(f"clock: the process existed {before:.1f} s before this program started (a "
                      f"shell exec'd it); the {time_limit:g} s budget counts from the "
                      + ("process's creation (--clock process)" if clock == "process"
                         else "program's start"), highlight=False, soft_wrap=True)
    _refuse_overwrite(output, force)
    picked = _select_backends(backends, time_limit, options.deterministic, config, assignments)
    chosen = picked.backends
    options = replace(options, backend_options=picked.options, config=picked.config)
    selector_used = open_selector(selector)   # a bad file: one line, exit 2, before loading
    session = None
    if options.cluster is not None:
        from ..distributed.session import open_session

        session = open_session(options.cluster, problem_path, chosen, options, cost_scale, say=_say)
    try:
        conversion, load_s = _load_for_solve(problem_path, cost_scale)
        prob = conversion.problem
        selection = None
        if selector_used is not None:
            picked, options, selection = _selected(selector_used, prob, picked, options,
                                                   backends, config, assignments)
            chosen = picked.backends
        warm = _warm_start(conversion, *warm_files, cost_scale, quiet, options.deterministic)
        if warm is not None:
            options = replace(options, warm_start=warm.plan)
        naming = conversion.naming
        conversion = conversion if conversion.in_file_terms else None
        if quiet:
            result = run(prob, chosen, options, cluster=session, explain=explain, naming=naming)
        else:
            with LiveProgress(console) as progress:
                result = run(prob, chosen, options, on_update=progress, cluster=session,
                             explain=explain, naming=naming)
        cluster_doc = None if session is None else session.finish(result)
        _on_signals(lambda signum, frame: late.append(signum))  # the answer is printed whatever comes
        if debug:
            _print_tracebacks(result)
        cpu = cpu_record([r.to_dict() for r in result.runs.values()],
                         (result.schedule or {}).get("cores", 1), result.elapsed, load_start,
                         load_average())
        return _report(result, problem_path, time_limit, options.seed, output, as_json, quiet, late,
                       prob, load_s, conversion, cluster_doc, warm, picked, cpu, selection)
    finally:
        if session is not None:  # the answer is out: end the cluster side before the budget's end
            session.close()


def _selected(selector: Any, prob: Problem, picked: Any, options: RunOptions,
              backends: str | None, config: Sequence[str] | str | None,
              assignments: tuple) -> tuple:
    """The run's backends and options with the selector applied (docs/selection.md: the user's
    --backends win, their options lie over the schedule's), and the selection's record."""
    from ..api.selecting import UserChoice, config_names_backends, select_run
    from ..api.solving import choose
    from .backends import _warn

    user = UserChoice(backends=backends is not None or config_names_backends(config))
    picked, options, record = select_run(selector, prob, picked, options, user=user,
                                         config=config, assignments=assignments, warn=_warn,
                                         choose=choose)
    return picked, options, record


def _selection_line(record: dict) -> str:
    """One line on what the selector chose, for stderr."""
    schedule = record.get("schedule")
    if schedule is None:
        return f"selector: not used ({record.get('why')})"
    predicted = record.get("predicted", {}).get(schedule["name"])
    said = (f"selector: {schedule['spec']}, predicted score "
            f"{predicted:.4f}, features {1000 * record['features_seconds']:.0f} ms")
    return said if record.get("applied") else f"{said}; not applied: {record.get('why')}"


def _print_tracebacks(result: Any) -> None:
    """``--debug``: the whole traceback of every backend that raised (the table shows the last
    line), and of a callback of the run's that raised, on stderr, before the table."""
    from rich.markup import escape

    if result.callback_error is not None:
        console.print(f"[red]traceback of {result.callback_error['hook']}[/]:", highlight=False)
        console.print(result.callback_error["traceback"], highlight=False, soft_wrap=True,
                      markup=False)
    for run in result.runs.values():
        if run.traceback:
            console.print(f"[red]traceback of {escape(run.name)}[/] ({escape(run.note)}):",
                          highlight=False, soft_wrap=True)
            console.print(run.traceback, highlight=False, soft_wrap=True, markup=False)


def _report(result: Any, problem_path: str | Path, time_limit: float, seed: int,
            output: str | None, as_json: bool, quiet: bool, late: list[int], prob: Problem,
            load_s: float, conversion: Any, cluster_doc: dict | None, warm: Any = None,
            picked: Any = None, cpu: dict | None = None,
            selection: dict | None = None) -> int:
    """The table on stderr, the answer line (or --json) on stdout, --output; the exit code.
    ``picked`` (:class:`portfolio.api.solving.Chosen`): the outside backends that took part and
    ``PORTFOLIO_PLUGINS``, named in the output and recorded. ``cpu``: what the backends got
    against their due and the load (:mod:`portfolio.cpuload`)."""
    from ..progress import final_table
    from ..runner.warmstart import report_text

    doc = result.to_dict()
    if warm is not None:
        doc["warm_start"] = warm.describe(result.warm_start)
    if cluster_doc is not None:
        doc["cluster"] = cluster_doc
    outside = [] if picked is None else picked.took_part(result)
    if selection is not None:
        doc["selection"] = selection
    doc.update(problem_path=str(problem_path), load_seconds=round(load_s, 3), seed=seed,
               presolve=result.presolve, outside_backends=outside,
               plugins_env=None if picked is None else picked.plugins_env, cpu=cpu)
    _presolve_message(prob, result.presolve, quiet)
    plan = result.solution
    if conversion is not None:  # an XLA request: the plan in its own node order, its own units
        plan = None if plan is None else conversion.expand(plan)
        doc["solution"] = None if plan is None else plan.tolist()
        doc["request"] = {"nodes": len(conversion.node_of), "cost_scale": conversion.cost_scale,
                          "cost": None if result.cost is None else conversion.request_cost(result.cost),
                          "cost_error_bound": conversion.cost_error_bound}
    answer = format_contest(plan)
    write_error = None
    if output:
        try:
            Path(output).write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as exc:  # the plan is printed below all the same
            write_error = f"{output}: could not write the result: {exc.strerror or exc}"
    det = result.deterministic
    if not quiet:
        if selection is not None:
            console.print(_selection_line(selection), highlight=False, soft_wrap=True)
        console.print(final_table(result))
        if result.solution is not None:
            console.print(f"best: [bold]{result.cost:,}[/] by {result.winner} "
                          f"in {result.elapsed:.2f} s of {time_limit:g} s"
                          + (f"; {result.proof}" if result.proof else "")
                          + (f"; stopped early: {result.stopped_early}" if result.stopped_early else "")
                          + ("" if det is None else f"; deterministic, work {det['work']:,}, "
                             f"{det['points']} exchange points, plan {result.plan_hash}"),
                          highlight=False)
            if conversion is not None and (conversion.cost_scale != 1 or conversion.cost_error_bound):
                console.print(f"request cost: {doc['request']['cost']:.10g} (scale "
                              f"{conversion.cost_scale:g}, rounding within "
                              f"{conversion.cost_error_bound:.3g})", highlight=False)
            if result.bound_text():
                console.print(result.bound_text(), highlight=False)
        elif result.infeasible_proven_by:
            console.print(f"[magenta]infeasible[/] (claimed by {result.infeasible_proven_by})",
                          highlight=False)
        else:
            console.print("[yellow]no feasible plan found[/]")
        if result.memory is not None:
            console.print(f"[bold]memory:[/] {result.memory['text']}", highlight=False,
                          soft_wrap=True)
        if result.warm_start is not None:
            console.print(f"warm start ({warm.source if warm else 'given'}): "
                          f"{report_text(doc.get('warm_start') or result.warm_start)}",
                          highlight=False, soft_wrap=True)
        if outside:
            console.print(f"outside backends in this run: {outside_text(outside)}",
                          highlight=False, soft_wrap=True)
    if result.callback_error is not None:   # said even with --quiet: the run was cut short
        error = result.callback_error
        console.print(f"[red]error:[/] {error['hook']} raised {error['error']}; the run ended there "
                      f"with its best verified plan (--debug: the traceback)", highlight=False,
                      soft_wrap=True)
    if not quiet and starved(cpu):
        console.print(f"[yellow]note:[/] the backends got {cpu['cpu_seconds']:g} of the "
                      f"{cpu['cpu_due']:g} CPU seconds they were due (load average "
                      f"{cpu['load_start']} -> {cpu['load_end']} on {cpu['machine_cores']} cores): "
                      f"the machine was busy, and the plan may be worse than an idle machine's",
                      highlight=False, soft_wrap=True)
    if det is not None and not det["complete"]:  # said even with --quiet: the plan may differ
        console.print(f"[yellow]warning:[/] not the deterministic answer: {det['reason']}",
                      highlight=False, soft_wrap=True)
    click.echo(json.dumps(doc, indent=2) if as_json else answer)
    if write_error:
        click.echo(f"error: {write_error} (the plan is on stdout)", err=True)
        return EXIT_BAD_INPUT
    if result.interrupted or late:
        return 128 + (signal.Signals[result.interrupted] if result.interrupted else late[0])
    return EXIT_OK if result.solution is not None else EXIT_NO_SOLUTION


@cli.command()
@click.argument("problem", required=False, type=click.Path())
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True),
              help="Wall-clock seconds for the whole command, loading included, counted from this "
              f"program's start (see --clock). Default 60; with --deterministic "
              f"{DETERMINISTIC_TIME_LIMIT:g}, the safety net only.")
@click.option("--backends", "-b", help="Comma-separated backend names (default: all available).")
@click.option("--workers", "-w", type=click.IntRange(min=1), help="Cores the backends share "
              "(default: all this process may use); every backend starts whatever the number.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for randomised backends.")
@click.option("--output", "-o", type=click.Path(), help="Write the result JSON here.")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or tables on stderr.")
@click.option("--no-presolve", is_flag=True, help="Give every backend the original problem.")
@click.option("--no-early-stop", is_flag=True, help="Run to the deadline even when the answer is "
              "proven or an exact backend claims it optimal.")
@click.option("--schedule", "policy", type=click.Choice(["share", "pin", "slices"]),
              help="How backends share the cores when there are more than cores (default: share).")
@click.option("--ignore-demand", is_flag=True, help="Give backends that declare a low CPU demand "
              "(exact backends in LNS mode) a normal share anyway (for comparisons).")
@click.option("--adaptive/--no-adaptive", default=RunOptions.adaptive, show_default=True,
              help="Move the cores within the run toward the backends that improve the incumbent "
              "(above a floor for every backend), or keep each backend's share as it started.")
@click.option("--memory-limit", metavar="SIZE", help="Memory cap per backend (everything it starts "
              "included), e.g. 4G or 512M; 'none' for no cap. Default: 3/4 of the RAM divided by "
              "the number of backends, at least 1G. A backend over it is ended; the others go on.")
@click.option("--clock", type=click.Choice(CLOCKS), default="program", show_default=True,
              help=CLOCK_HELP)
@click.option("--no-exhaustive", is_flag=True, help=NO_EXHAUSTIVE_HELP)
@click.option("--cost-scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="For an XLA request: multiply its costs by this before "
              "rounding them to integers (keeps fractional costs' precision).")
@click.option("--warm-start", "warm_start", metavar="PLAN", type=click.Path(),
              help="Start from the plan in PLAN (a JSON list, a `portfolio solve --json` result, or "
              "contest output; in PROBLEM's node order). The answer is never worse; a plan that is "
              "forbidden or over the memory limit is repaired first. Default: an XLA request's "
              "s_hint.")
@click.option("--previous", metavar="OLD", type=click.Path(),
              help="Re-solve: PLAN is a plan of the problem file OLD; it is mapped onto PROBLEM "
              "(by instruction name for XLA requests that carry them, else by index; a changed "
              "strategy list by the strategies' cost and memory) and repaired where needed.")
@click.option("--node-map", metavar="MAP", type=click.Path(),
              help="Re-solve: a JSON list giving, per node of PROBLEM, its node's index in PLAN "
              "(-1: a new node), for problems of different sizes without names.")
@click.option("--debug", is_flag=True, help="Print the whole traceback of each backend that "
              "raised (the table shows its last line; --json has it per backend as 'traceback'), "
              "and of a run's callback that raised ('callback_error').")
@click.option("--objective", type=click.Choice(["cost", "peak"]), default="cost",
              show_default=True, help="cost: the cheapest plan under the memory limit. peak: the "
              "plan with the least peak memory (ties broken by cost), whatever the limit, with its "
              "certified lower bound (docs/budgets.md).")
@click.option("--selector", metavar="FILE", default="default", show_default=True,
              help="A selector file (`portfolio learn`): the backends, options and CPU weights "
              "chosen from the problem's cheap features and the time limit; 'none' for no "
              "selector; 'default', the shipped one when the default uses it. --backends wins "
              "over it, --option and --config lie over its options (docs/selection.md).")
@option_flags
@deterministic_options
@cluster_options
@reads_plugins
def solve(problem: str | None, time_limit: float | None, backends: str | None,
          workers: int | None, seed: int, output: str | None, force: bool, as_json: bool,
          quiet: bool, no_presolve: bool, no_early_stop: bool, policy: str | None,
          ignore_demand: bool, adaptive: bool, memory_limit: str | None, clock: str,
          no_exhaustive: bool,
          cost_scale: float, warm_start: str | None, previous: str | None, node_map: str | None,
          objective: str, deterministic: bool, work: int | None, debug: bool,
          dask_scheduler: str | None,
          dask_workers: int | None, dask_problem: str, dask_unreachable: str,
          assignments: tuple[str, ...], config: tuple[str, ...], selector: str) -> None:
    """Find the cheapest feasible plan for PROBLEM (default: the bundled example).

    PROBLEM is contest or extended JSON, or an XLA AutoShardingSolverRequest (.pb, .binpb,
    .textproto, .txtpb); for a request the plan is in the request's own node order.

    Backends run in parallel until one shared deadline; every plan is re-verified by the exact
    evaluator. The last stdout line is the plan `[s0, s1, ...]`, or `[]` when none was found.
    A tiny instance (the bundled example: 432 plans) is settled at once by scoring every plan,
    before any backend starts (see --no-exhaustive).

    The time limit counts from this program's start, loading included, also when a shell exec'd
    it after other commands (`bash -c "cd x && portfolio solve"`); `--clock process` counts from the
    creation of the process instead, as `iopddl` does.

    With --warm-start PLAN the run starts from a plan and never answers worse; with --previous OLD
    too it re-solves after a change, PLAN being OLD's plan (docs/api.md, "Warm starts and
    re-solves").

    With --dask-scheduler (or --dask-workers) the solve runs across a Dask cluster, one shard of the
    portfolio per worker; this machine keeps a local answer and verifies every shard's plan
    (docs/distributed.md).

    With --deterministic (or --work N) the same problem, seed and work give the same plan, bit for
    bit, with any number of cores, on a loaded or idle machine (docs/determinism.md); the
    final line on stderr names the plan's hash.

    Backend options: --option BACKEND.NAME=VALUE (repeatable) and --config FILE.toml (repeatable,
    merged in order); `portfolio backends --verbose` lists them. Every option in effect is in
    --json ("options"); so are the backends of other distributions that took part
    ("outside_backends", also named on stderr).
    """
    from ..runner.contain import parse_size

    cluster = cluster_from(dask_scheduler, dask_workers, dask_problem, dask_unreachable)
    if warm_start is None and (previous is not None or node_map is not None):
        raise UserError("--previous and --node-map map a previous plan: give it with --warm-start")
    try:
        cap: Any = "default" if memory_limit is None else parse_size(memory_limit)
    except ValueError as exc:
        raise UserError(f"--memory-limit: {exc}") from None
    options = RunOptions(time_limit, workers=workers, seed=seed, presolve=not no_presolve,
                         exhaustive=not no_exhaustive, early_stop=not no_early_stop,
                         policy=policy or DEFAULT_POLICY, memory_limit=cap,
                         honour_demand=not ignore_demand, adaptive=adaptive,
                         cluster=cluster,
                         deterministic=deterministic, work=work, objective=objective)
    sys.exit(run_solve(problem or bundled_example(), options, backends, output, as_json, quiet,
                       force, clock=clock, cost_scale=cost_scale, warm_start=warm_start,
                       previous=previous, node_map=node_map, debug=debug, config=config,
                       assignments=assignments, selector=selector))


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("problem", type=click.Path())
@click.argument("timeout", type=click.FloatRange(min=0, min_open=True))
@click.option("--clock", type=click.Choice(CLOCKS), default="process", show_default=True,
              help=CLOCK_HELP)
@click.option("--no-exhaustive", is_flag=True, help=NO_EXHAUSTIVE_HELP)
@deterministic_options
@cluster_options
def _iopddl(problem: str, timeout: float, clock: str, no_exhaustive: bool, deterministic: bool,
            work: int | None, dask_scheduler: str | None, dask_workers: int | None,
            dask_problem: str, dask_unreachable: str) -> None:
    """Contest drop-in: solve PROBLEM within TIMEOUT seconds; the last stdout line is the plan.

    TIMEOUT counts from the creation of this process, as a harness that times the whole command
    sees it: when a shell runs other commands and then execs `iopddl`, their time counts too
    (`--clock program` counts from this program's start instead, as `portfolio solve` does).
    With --deterministic (or --work N), TIMEOUT is the safety net of a deterministic run.
    Environment: PORTFOLIO_CONFIG may name a TOML config file, or several separated by the
    path separator (':'), merged in order (as `portfolio solve --config`, repeated);
    PORTFOLIO_PLUGINS names plugin modules registered without an install (docs/plugins.md). These
    are the two variables read.
    """
    import os

    from ..configure import CONFIG_ENV, env_config_paths

    try:
        cluster = cluster_from(dask_scheduler, dask_workers, dask_problem, dask_unreachable)
        options = RunOptions(timeout, presolve=True, exhaustive=not no_exhaustive, cluster=cluster,
                             deterministic=deterministic, work=work)
        code = run_solve(problem, options, quiet=True, clock=clock, explain=False,
                         config=env_config_paths(os.environ.get(CONFIG_ENV)))
    except ProblemError as exc:
        raise UserError(str(exc)) from None
    sys.exit(code)
