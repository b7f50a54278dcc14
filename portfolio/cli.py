"""The ``portfolio`` and ``iopddl`` commands: parse arguments, call the library, render results.

Human-readable output goes to stderr (rich); machine-readable output (contest solution lines, JSON)
goes to stdout, so ``portfolio solve x.json > plan.txt`` captures exactly the answer.
Exit codes: 0 success / feasible, 1 infeasible or no solution, 2 bad input or usage, 130 / 143
when SIGINT (Ctrl-C) / SIGTERM ended `solve` or `iopddl` early: the best verified plan found so far
is printed at once all the same (`[]` when there is none).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .evaluate import SolutionError, evaluate, min_usage_profile
from .io import (
    ProblemFormatError,
    SolutionFormatError,
    format_contest,
    load_problem,
    read_solution,
    write_problem,
)
from .clock import CLOCKS, EXEC_GAP, command_start
from .exhaustive import MAX_PLANS
from .problem import FORBIDDEN, Problem

EXIT_OK, EXIT_NO_SOLUTION, EXIT_BAD_INPUT = 0, 1, 2

console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
"""Rich output on stderr; when stderr is a file or pipe (logs, CI), tables get 140 columns, not 80."""


class UserError(click.ClickException):
    """A problem with what the user gave us: one clear line, exit code 2, no traceback."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: Any = None) -> None:
        # Plain click output: one line however long (rich would wrap it at the terminal width).
        click.echo(f"error: {self.message}", err=True)


def _one_line(exc: click.UsageError) -> UserError:
    """A click usage error as one line (click's own shows usage, a hint and the error: three)."""
    where = exc.ctx.command_path if exc.ctx is not None else "the command"
    return UserError(f"{exc.format_message()} (see `{where} --help`)")


def _is_help(exc: click.UsageError) -> bool:
    return type(exc).__name__ == "NoArgsIsHelpError"  # click 8.2: no arguments shows the help


class _OneLineUsage:
    """Mixin for click commands and groups: usage errors become one-line :class:`UserError`."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)  # type: ignore[misc]
        except click.UsageError as exc:
            if _is_help(exc):
                raise
            raise _one_line(exc) from None


class _Command(_OneLineUsage, click.Command):
    """A command whose usage errors are one line."""


class _Group(_OneLineUsage, click.Group):
    """Turns our input errors and click's usage errors into one-line :class:`UserError` wherever a
    command raises them."""

    command_class = _Command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ProblemFormatError, SolutionFormatError, SolutionError) as exc:
            raise UserError(str(exc)) from None
        except click.UsageError as exc:
            if _is_help(exc):
                raise
            raise _one_line(exc) from None


def bundled_example() -> Path:
    """Path of the small example instance shipped inside the package."""
    return Path(str(resources.files("portfolio.data") / "example.json"))


def _load(path: str | Path) -> tuple[Problem, float]:
    t0 = time.perf_counter()
    problem = load_problem(path)
    return problem, time.perf_counter() - t0


def _emit_json(doc: dict) -> None:
    click.echo(json.dumps(doc, indent=2))


# ------------------------------------------------------------------------------------------ info
def problem_summary(problem: Problem) -> dict:
    """Size, structure and memory tightness of an instance."""
    counts = problem.strategy_counts
    times = problem.time_points
    floor = min_usage_profile(problem)
    peak_floor = int(floor.max()) if len(floor) else 0
    limit = problem.usage_limit
    nonempty = problem.interval_end > problem.interval_start
    return {
        "name": problem.name,
        "nodes": problem.num_nodes,
        "edges": problem.num_edges,
        "intervals": problem.num_intervals,
        "strategies": {
            "total": int(counts.sum()),
            "min": int(counts.min()) if len(counts) else 0,
            "mean": round(float(counts.mean()), 3) if len(counts) else 0.0,
            "max": int(counts.max(initial=0)),
        },
        "single_strategy_nodes": int(np.count_nonzero(counts == 1)),
        "forbidden_node_strategies": int(np.count_nonzero(problem.node_costs == FORBIDDEN)),
        "edge_table_entries": int(len(problem.edge_costs)),
        "forbidden_edge_entries": int(np.count_nonzero(problem.edge_costs == FORBIDDEN)),
        "edge_arity": {str(a): int(c) for a, c in zip(*np.unique(problem.edge_arity, return_counts=True))},
        "time_horizon": ([int(problem.interval_start.min()), int(problem.interval_end.max())]
                         if problem.num_intervals else [0, 0]),
        "zero_length_intervals": int(np.count_nonzero(~nonempty)),
        "distinct_time_points": int(len(times)),
        "usage_limit": limit,
        "min_usage_peak": peak_floor,
        "memory_tightness": (peak_floor / limit) if limit else None,
    }


def _limit_text(problem: Problem) -> str:
    """'unlimited', or how the capacity of an extended (presolved) problem varies over time."""
    cap = problem.capacity
    if cap.is_unlimited:
        return "unlimited"
    return (f"varies over time: {len(cap.values):,} pieces from t={int(cap.times[0]):,}, "
            f"{int(cap.values.min()):,} to {int(cap.values.max()):,}")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="iopddl-portfolio")
def cli() -> None:
    """Solver portfolio for the IOPDDL intra-operator parallelism (auto-sharding) problem."""


@cli.command()
@click.argument("problem", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
def info(problem: str, as_json: bool) -> None:
    """Show the size, structure and memory tightness of PROBLEM (.json or .json.gz)."""
    prob, seconds = _load(problem)
    summary = problem_summary(prob)
    summary["load_seconds"] = round(seconds, 3)
    if as_json:
        _emit_json(summary)
        return
    table = Table(title=f"{summary['name']}  ({problem})", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    s = summary["strategies"]
    tight = summary["memory_tightness"]
    rows = [
        ("nodes", f"{summary['nodes']:,}"),
        ("edges", f"{summary['edges']:,}  (arity: " +
         ", ".join(f"{k}: {v:,}" for k, v in summary["edge_arity"].items()) + ")"),
        ("strategies", f"{s['total']:,} total; per node min {s['min']} / mean {s['mean']} / max {s['max']}"),
        ("single-strategy nodes", f"{summary['single_strategy_nodes']:,}"),
        ("forbidden node strategies", f"{summary['forbidden_node_strategies']:,}"),
        ("edge table entries", f"{summary['edge_table_entries']:,} "
         f"({summary['forbidden_edge_entries']:,} forbidden)"),
        ("time horizon", f"[{summary['time_horizon'][0]:,}, {summary['time_horizon'][1]:,})"),
        ("distinct time points", f"{summary['distinct_time_points']:,} "
         f"({summary['zero_length_intervals']:,} zero-length intervals)"),
        ("usage limit", _limit_text(prob) if summary["usage_limit"] is None else f"{summary['usage_limit']:,}"),
        ("min-usage peak", f"{summary['min_usage_peak']:,}"),
        ("memory tightness", "n/a" if tight is None else f"{tight:.3f}  (min-usage peak / limit)"),
        ("load time", f"{seconds:.2f} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


# ------------------------------------------------------------------------------------------ evaluate
def _render_evaluation(ev_dict: dict, title: str) -> None:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    feasible = ev_dict["feasible"]
    table.add_row("cost", f"{ev_dict['cost']:,}")
    table.add_row("feasible", "[green]yes[/]" if feasible else "[red]NO[/]")
    limit = ev_dict["usage_limit"]
    table.add_row("peak usage", f"{ev_dict['peak_usage']:,} at t={ev_dict['peak_time']}" +
                  ("" if limit is None else f"  (limit {limit:,})"))
    if ev_dict["margin"] is not None:
        table.add_row("margin", f"{ev_dict['margin']:,} at t={ev_dict['tightest_time']}")
    if not feasible:
        table.add_row("violations", f"{ev_dict['violated_time_points']:,} time points, first at "
                      f"t={ev_dict['first_violation_time']}")
    forb = ev_dict["forbidden_node_choices"] + ev_dict["forbidden_edge_entries"]
    table.add_row("forbidden choices", ("[red]" if forb else "") +
                  f"{ev_dict['forbidden_node_choices']} node strategies, "
                  f"{ev_dict['forbidden_edge_entries']} edge entries")
    console.print(table)


@cli.command(name="evaluate")
@click.argument("problem", type=click.Path())
@click.argument("solution", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
def evaluate_cmd(problem: str, solution: str, as_json: bool) -> None:
    """Check SOLUTION on PROBLEM: exact cost, feasibility, peak memory, forbidden choices.

    SOLUTION is a JSON list, a result file of `portfolio solve --json`, or contest output whose last
    non-empty line is `[s0, s1, ...]`. Exit code 0 when feasible, 1 when infeasible, 2 when malformed.
    """
    prob, _ = _load(problem)
    sol = read_solution(solution)
    try:
        ev = evaluate(prob, sol)
    except SolutionError as exc:
        raise UserError(f"{solution}: {exc}") from None
    if as_json:
        _emit_json({"problem": prob.name, **ev.to_dict()})
    else:
        _render_evaluation(ev.to_dict(), f"{prob.name}: {solution}")
    sys.exit(EXIT_OK if ev.feasible else EXIT_NO_SOLUTION)


# ------------------------------------------------------------------------------------------ solve
def _refuse_overwrite(path: str | Path | None, force: bool) -> None:
    """Check an output path before any work (a solve must not end in a traceback at the write).

    Refuses to overwrite without ``--force`` and to write onto a folder; creates missing folders.
    """
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{path}: is a folder; give a file name")
    if p.exists() and not force:
        raise UserError(f"{path}: already exists; pass --force to overwrite it")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{path}: cannot create its folder: {exc.strerror or exc}") from None
    if not os.access(p.parent, os.W_OK):
        raise UserError(f"{path}: folder {p.parent} is not writable")


CLOCK_HELP = ("What the time limit counts from: 'program', this program's start; 'process', the "
              "creation of its process (earlier when a shell ran other commands and then exec'd it, "
              "as in `bash -c \"cd x && iopddl f 60\"`).")
NO_EXHAUSTIVE_HELP = (f"Do not settle an instance of at most {MAX_PLANS:,} plans by scoring every "
                      f"plan; run the backends on it as on any other.")


def _select_backends(names: str | None, time_limit: float | None = None) -> list:
    """The backends to run; their ``available()`` checks may take a tenth of the time limit."""
    from .registry import AVAILABLE_TIMEOUT, Registry, RegistryError, parse_backend_list

    registry = Registry()
    for warning in registry.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    try:
        if time_limit is not None:
            registry.check_timeout = min(AVAILABLE_TIMEOUT, max(0.5, 0.1 * time_limit))
        if names is None:
            chosen = registry.select(None)
        else:
            chosen = registry.resolve(parse_backend_list(names, registry))
    except RegistryError as exc:
        raise UserError(str(exc)) from None
    if not chosen:
        raise UserError("no backend is available; see `portfolio backends`")
    return chosen


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


CAREFUL_LOAD_MAX_BYTES = 200 * 2**20
"""Up to this size a cold-cache solve parses with ``json`` instead of compiling the fast scanner."""


def _scanner_cache_warm() -> bool:
    """Whether the fast loader's numba cache holds compiled code newer than its source (compiling
    it costs about 6 s of a solve's budget). Unknown counts as warm."""
    try:
        import numba

        from . import jsonscan

        source = os.path.getmtime(jsonscan.__file__)
        paths = [o._cache._cache_file._index_path for o in vars(jsonscan).values()
                 if isinstance(o, numba.core.dispatcher.Dispatcher)]
        return not paths or all(os.path.exists(p) and os.path.getmtime(p) >= source for p in paths)
    except Exception:  # noqa: BLE001 -- numba internals moved: behave as before
        return True


SMALL_FILE_BYTES = 2**20
"""Up to this size ``json`` parses faster than numba (the fast scanner) imports, warm or cold."""


def _load_for_solve(path: str | Path) -> tuple[Problem, float]:
    """Load under the deadline: the careful ``json`` path (no numba) for small files, and on a cold
    cache for files up to CAREFUL_LOAD_MAX_BYTES; otherwise the usual fast path."""
    t0 = time.perf_counter()
    from . import io as pio

    data = pio.read_bytes(path)
    fast = len(data) > SMALL_FILE_BYTES and (len(data) > CAREFUL_LOAD_MAX_BYTES
                                             or _scanner_cache_warm())
    return pio.parse_problem(data, path, fast=fast), time.perf_counter() - t0


def run_solve(problem_path: str | Path, time_limit: float, backends: str | None = None,
              workers: int | None = None, seed: int = 0, output: str | None = None,
              as_json: bool = False, quiet: bool = False, force: bool = False,
              use_presolve: bool = True, early_stop: bool = True, policy: str | None = None,
              memory_limit: object = "default", honour_demand: bool = True,
              clock: str = "program", exhaustive: bool = True) -> int:
    """Run the portfolio on a problem file and report; returns the exit code.

    ``clock`` says what the budget counts from (:mod:`portfolio.clock`): ``program``, this program's
    start, or ``process``, its process's creation (a shell that exec'd it included).

    SIGINT/SIGTERM end the run at once: the best verified plan is printed as usual and the exit code
    is 128 + the signal's number (130, 143).
    """
    late: list[int] = []
    previous = _on_signals(_raise_interrupted)
    try:
        return _run_solve(problem_path, time_limit, backends, workers, seed, output, as_json, quiet,
                          force, use_presolve, early_stop, policy, memory_limit, late, honour_demand,
                          clock, exhaustive)
    except _Interrupted as stop:
        _on_signals(lambda signum, frame: None)
        console.print(f"[yellow]interrupted[/] ({stop}) before any plan was found", highlight=False)
        click.echo("[]")
        return 128 + stop.signum
    finally:
        _on_signals(previous)


def _run_solve(problem_path: str | Path, time_limit: float, backends: str | None,
               workers: int | None, seed: int, output: str | None, as_json: bool, quiet: bool,
               force: bool, use_presolve: bool, early_stop: bool, policy: str | None,
               memory_limit: object, late: list[int], honour_demand: bool = True,
               clock: str = "program", exhaustive: bool = True) -> int:
    from .progress import LiveProgress, final_table
    from .runner import run_portfolio

    start, before = command_start(clock)
    if before >= EXEC_GAP and not quiet:
        console.print(f"clock: the process existed {before:.1f} s before this program started (a "
                      f"shell exec'd it); the {time_limit:g} s budget counts from the "
                      + ("process's creation (--clock process)" if clock == "process"
                         else "program's start"), highlight=False, soft_wrap=True)
    _refuse_overwrite(output, force)
    chosen = _select_backends(backends, time_limit)
    prob, load_s = _load_for_solve(problem_path)
    kwargs = dict(start=start, workers=workers, seed=seed, presolve=use_presolve,
                  early_stop=early_stop, memory_limit=memory_limit, fallback=True,
                  honour_demand=honour_demand, exhaustive=exhaustive)
    if policy:
        kwargs["policy"] = policy
    if quiet:
        result = run_portfolio(prob, chosen, time_limit, **kwargs)
    else:
        with LiveProgress(console) as progress:
            result = run_portfolio(prob, chosen, time_limit, on_update=progress, **kwargs)
    _on_signals(lambda signum, frame: late.append(signum))  # the answer is printed whatever comes
    doc = result.to_dict()
    doc.update(problem_path=str(problem_path), load_seconds=round(load_s, 3), seed=seed,
               presolve=result.presolve)
    _presolve_message(prob, result.presolve, quiet)
    answer = format_contest(result.solution)
    write_error = None
    if output:
        try:
            Path(output).write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as exc:  # the plan is printed below all the same
            write_error = f"{output}: could not write the result: {exc.strerror or exc}"
    if not quiet:
        console.print(final_table(result))
        if result.solution is not None:
            console.print(f"best: [bold]{result.cost:,}[/] by {result.winner} "
                          f"in {result.elapsed:.2f} s of {time_limit:g} s"
                          + (f"; {result.proof}" if result.proof else "")
                          + (f"; stopped early: {result.stopped_early}" if result.stopped_early else ""),
                          highlight=False)
            if result.bound_text():
                console.print(result.bound_text(), highlight=False)
        elif result.infeasible_proven_by:
            console.print(f"[magenta]infeasible[/] (claimed by {result.infeasible_proven_by})",
                          highlight=False)
        else:
            console.print("[yellow]no feasible plan found[/]")
    click.echo(json.dumps(doc, indent=2) if as_json else answer)
    if write_error:
        click.echo(f"error: {write_error} (the plan is on stdout)", err=True)
        return EXIT_BAD_INPUT
    if result.interrupted or late:
        return 128 + (signal.Signals[result.interrupted] if result.interrupted else late[0])
    return EXIT_OK if result.solution is not None else EXIT_NO_SOLUTION


@cli.command()
@click.argument("problem", required=False, type=click.Path())
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, help="Wall-clock seconds for the whole command, loading included, "
              "counted from this program's start (see --clock).")
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
@click.option("--memory-limit", metavar="SIZE", help="Memory cap per backend (everything it starts "
              "included), e.g. 4G or 512M; 'none' for no cap. Default: 3/4 of the RAM divided by "
              "the number of backends, at least 1G. A backend over it is ended; the others go on.")
@click.option("--clock", type=click.Choice(CLOCKS), default="program", show_default=True,
              help=CLOCK_HELP)
@click.option("--no-exhaustive", is_flag=True, help=NO_EXHAUSTIVE_HELP)
def solve(problem: str | None, time_limit: float, backends: str | None, workers: int | None,
          seed: int, output: str | None, force: bool, as_json: bool, quiet: bool,
          no_presolve: bool, no_early_stop: bool, policy: str | None, ignore_demand: bool,
          memory_limit: str | None, clock: str, no_exhaustive: bool) -> None:
    """Find the cheapest feasible plan for PROBLEM (default: the bundled example).

    Backends run in parallel until one shared deadline; every plan is re-verified by the exact
    evaluator. The last stdout line is the plan `[s0, s1, ...]`, or `[]` when none was found.
    A tiny instance (the bundled example: 432 plans) is settled at once by scoring every plan,
    before any backend starts (see --no-exhaustive).

    The time limit counts from this program's start, loading included, also when a shell exec'd
    it after other commands (`bash -c "cd x && portfolio solve"`); `--clock process` counts from the
    creation of the process instead, as `iopddl` does.
    """
    from .runner.contain import parse_size

    try:
        cap: object = "default" if memory_limit is None else parse_size(memory_limit)
    except ValueError as exc:
        raise UserError(f"--memory-limit: {exc}") from None
    sys.exit(run_solve(problem or bundled_example(), time_limit, backends, workers, seed, output,
                       as_json, quiet, force, use_presolve=not no_presolve,
                       early_stop=not no_early_stop, policy=policy, memory_limit=cap,
                       honour_demand=not ignore_demand, clock=clock, exhaustive=not no_exhaustive))


@cli.command()
@click.option("--backends", "-b", help="Comma-separated backend names (default: all available).")
def warmup(backends: str | None) -> None:
    """Compile and cache every JIT kernel (loader, presolve, backends) before timed runs.

    The first run after an install otherwise spends its budget compiling (about a minute on a
    2-core machine); `portfolio solve` still answers on time then, but only with the plans that need
    no compilation. Safe to run again: a warm cache loads in about a second.
    """
    from .presolve import warm_up
    from .runner.worker import prepare_key

    steps: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    _load(bundled_example())  # the fast loader's scanner
    steps.append(("loader", time.perf_counter() - t0))
    t0 = time.perf_counter()
    warm_up()
    steps.append(("presolve", time.perf_counter() - t0))
    done: set[str] = set()
    for backend in _select_backends(backends):
        key = prepare_key(backend)
        if key is None or key in done or not backend.available()[0]:
            continue
        done.add(key)
        t0 = time.perf_counter()
        try:
            backend.prepare()
        except Exception as exc:  # noqa: BLE001 -- say which backend, keep going
            console.print(f"[yellow]warning:[/] {backend.name}: prepare failed: "
                          f"{type(exc).__name__}: {exc}", highlight=False)
            continue
        steps.append((backend.name, time.perf_counter() - t0))
    total = sum(s for _, s in steps)
    console.print("warmup: " + ", ".join(f"{name} {s:.2f} s" for name, s in steps) +
                  f"; total {total:.2f} s", highlight=False)


def _loaded_from(backend: object) -> str:
    """The file a backend's class was loaded from: shows a stale installed copy shadowing edits."""
    import inspect

    try:
        return inspect.getfile(type(backend))
    except (TypeError, OSError):
        return "?"


@cli.command(name="backends")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
@click.option("--verbose", "-v", is_flag=True, help="Also show the file each backend was loaded from.")
def backends_cmd(as_json: bool, verbose: bool) -> None:
    """List the solver backends this installation knows, and whether each can run here."""
    from .registry import Registry, install_hint

    registry = Registry()
    rows = []
    infos = registry.infos()
    for info, (ok, why) in zip(infos, registry.available([i.backend for i in infos])):
        hint = "" if ok else install_hint(info.backend.name)
        if hint and hint not in why:
            why = f"{why}; {hint}"
        rows.append({"name": info.backend.name, "qualified": info.qualified, "package": info.package,
                     "version": info.version, "available": ok, "reason": why,
                     "description": info.backend.description,
                     "capabilities": info.backend.capabilities.labels(), "clash": info.clash,
                     "loaded_from": _loaded_from(info.backend)})
    if as_json:
        _emit_json({"backends": rows, "warnings": registry.warnings, "load_errors": registry.warnings})
        return
    table = Table(title="backends", title_justify="left")
    for col in ("name", "package", "available", "capabilities", "description") + (
            ("loaded from",) if verbose else ()):
        table.add_column(col, overflow="fold")
    for row in rows:
        # plugin text is shown as written: "pip install '.[cpsat]'" is not rich markup
        avail = "[green]yes[/]" if row["available"] else f"[red]no[/]: {escape(row['reason'])}"
        table.add_row(escape(row["name"]), escape(f"{row['package']} {row['version']}".strip()),
                      avail, ", ".join(row["capabilities"]) or "-", escape(row["description"]),
                      *((escape(str(row["loaded_from"])),) if verbose else ()))
    console.print(table)
    for warning in registry.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)


# ------------------------------------------------------------------------------------------ presolve
_PRESOLVE_FLAGS = (
    ("forbidden", "remove strategies of node cost 10**18"),
    ("arc-consistency", "remove strategies without an allowed partner on some edge"),
    ("functional", "fold nodes determined by a neighbour (functional edges) into it"),
    ("edge-tables", "sum parallel edges, fold row/column minima, delete all-zero edges"),
    ("single", "fold single-strategy nodes into neighbours, offset and capacity"),
    ("dominance", "remove dominated and duplicate strategies"),
    ("memory-free", "eliminate memory-free nodes of degree 0, 1 and 2"),
    ("time-points", "keep only maximal-clique time points that can be violated"),
    ("memory-bounds", "remove strategies that overflow memory in every plan"),
)


def _presolve_options(fn: Any) -> Any:
    for name, what in reversed(_PRESOLVE_FLAGS):
        fn = click.option(f"--no-{name}", f"no_{name.replace('-', '_')}", is_flag=True,
                          help=f"Do not {what}.")(fn)
    return fn


@cli.command(name="presolve")
@click.argument("problem", type=click.Path())
@click.option("--write", "write_path", type=click.Path(),
              help="Write the reduced problem here (extended JSON, gzip when the name ends in .gz).")
@click.option("--force", is_flag=True, help="Overwrite the --write file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@_presolve_options
def presolve_cmd(problem: str, write_path: str | None, force: bool, as_json: bool, **flags: bool) -> None:
    """Reduce PROBLEM exactly and show its size before and after each reduction.

    Every plan of the reduced problem maps back to a plan of the original with the same cost and
    feasibility; an optimal reduced plan maps to an optimal one. Exit code 0, or 1 when a reduction
    proves that no feasible plan avoids forbidden choices.

    --write uses an extension of the contest format (the contest format cannot hold several
    intervals per node, capacity over time or a constant cost):
    {"format": "iopddl-portfolio-extended/1", "problem": {"name": ..., "nodes": {"intervals":
    [[[start, end], ...] per node], "costs": [[...] per node], "usages": [[[usage per strategy] per
    interval] per node]}, "edges": {"nodes": [[u, v], ...], "costs": [[...], ...]}, "capacity":
    {"times": [...], "values": [...]}, "cost_offset": N}}. Capacity values[k] holds from times[k]
    until times[k+1]; before times[0] usage is unlimited. `info`, `solve` and `evaluate` read such a
    file like a contest file (its plans are plans of the reduced problem).
    """
    from .presolve import presolve, write_extended

    _refuse_overwrite(write_path, force)
    prob, load_s = _load(problem)
    switches = {name.replace("-", "_"): not flags[f"no_{name.replace('-', '_')}"]
                for name, _ in _PRESOLVE_FLAGS}
    pre = presolve(prob, **switches)
    report = {"problem": prob.name, "load_seconds": round(load_s, 3), **pre.report}
    if write_path and pre.reduced is not None:
        write_extended(pre.reduced, write_path)
        report["written"] = str(write_path)
    if as_json:
        _emit_json(report)
    else:
        table = Table(title=f"presolve {prob.name}  ({problem})", title_justify="left")
        for col in ("", "before", "after"):
            table.add_column(col, justify="right" if col else "left")
        after = pre.report["after"] or {}
        for key in ("nodes", "free_nodes", "strategies", "edges", "edge_entries", "intervals",
                    "time_points"):
            table.add_row(key.replace("_", " "), f"{pre.report['before'][key]:,}",
                          f"{after[key]:,}" if key in after else "-")
        console.print(table)
        counts = Table(title="reductions", show_header=False, title_justify="left")
        counts.add_column(style="bold")
        counts.add_column(justify="right")
        for key, value in pre.report["reductions"].items():
            counts.add_row(key.replace("_", " "), f"{value:,}")
        console.print(counts)
        if pre.report.get("magnitude_guard"):
            console.print("[yellow]costs too large for exact folding: cost-combining reductions off[/]")
        if pre.infeasible:
            console.print(f"[magenta]infeasible:[/] {pre.infeasible}", highlight=False)
        else:
            console.print(f"offset {pre.offset:,}; {pre.report['rounds']} rounds in "
                          f"{pre.report['seconds']:.2f} s" +
                          (f"; wrote {write_path}" if write_path else ""), highlight=False)
    sys.exit(EXIT_NO_SOLUTION if pre.infeasible else EXIT_OK)


# ------------------------------------------------------------------------------------------ generate
@cli.command()
@click.argument("out", type=click.Path())
@click.option("--nodes", "-n", type=click.IntRange(min=1), required=True, help="Number of nodes.")
@click.option("--strategies", "-k", type=click.IntRange(min=1), default=8, show_default=True,
              help="Typical strategies per node.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def generate(out: str, nodes: int, strategies: int, seed: int, force: bool) -> None:
    """Write a synthetic instance of the contest's shape to OUT (.json or .json.gz)."""
    from .generate import generate_problem

    _refuse_overwrite(out, force)
    prob = generate_problem(nodes, strategies=strategies, seed=seed)
    write_problem(prob, out)
    console.print(f"wrote {out}: {prob.num_nodes:,} nodes, {prob.num_edges:,} edges, "
                  f"limit {prob.usage_limit:,}")


# ------------------------------------------------------------------------------------------ bench, report
@cli.command()
@click.argument("instances", nargs=-1, required=True)
@click.option("--backends", "-b", help="Comma-separated backends, each run alone as its own configuration.")
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
def bench(instances: tuple[str, ...], backends: str | None, use_portfolio: bool,
          time_limit: float | None, contest_timeouts: bool, repeat: int, seeds: str, jobs: int | None,
          name: str | None, runs_dir: str, resume: bool, force: bool, dask_scheduler: str | None,
          quiet: bool) -> None:
    """Sweep INSTANCES (files, folders, globs) x solver configurations x seeds; results to runs/NAME/.

    Every task runs the portfolio runner (each plan verified by the exact evaluator); rows stream to
    runs/NAME/results.jsonl as tasks finish. Render them with `portfolio report runs/NAME`.
    """
    from .bench import BenchError, parse_seeds, run_sweep

    if time_limit is None and not contest_timeouts:
        time_limit = 60.0
    names = [n.strip() for n in (backends or "").split(",") if n.strip()]
    try:
        result = run_sweep(list(instances), backends=names, portfolio=use_portfolio,
                           time_limit=time_limit, contest_timeouts=contest_timeouts,
                           seeds=parse_seeds(seeds), repeat=repeat, jobs=jobs, name=name,
                           runs_dir=runs_dir, resume=resume, force=force,
                           dask_scheduler=dask_scheduler, console=None if quiet else console,
                           command=["portfolio", *sys.argv[1:]])
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


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--reference", type=click.Choice(["contest"]),
              help="Add the 2025 contest's teams and XLA as rows (contest instances only).")
@click.option("--plot", is_flag=True, help="Write convergence and points plots (PNG, SVG) to RUN/plots/.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True, help="table: rich on stderr; the others on stdout.")
def report(runs: tuple[str, ...], reference: str | None, plot: bool, fmt: str) -> None:
    """Leaderboard of bench RUNS (folders or results.jsonl files): costs, contest points, rank.

    Points on each instance are min_cost / cost over the rows compared; the total decides the rank.
    """
    from .report import ReportError, build, plot_runs, render_csv, render_markdown, render_table, to_json

    try:
        board = build(list(runs), reference)
        written = plot_runs(list(runs), board) if plot else []
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if fmt == "table":
        table = render_table(board)
        out = console
        if not console.is_terminal:  # a log or a file: the natural width, not 80 columns
            from rich.measure import Measurement

            wide = console.options.update(width=1000, max_width=1000)
            natural = Measurement.get(console, wide, table).maximum
            out = Console(stderr=True, width=max(console.width, natural))
        out.print(table)
    elif fmt == "markdown":
        click.echo(render_markdown(board), nl=False)
    elif fmt == "csv":
        click.echo(render_csv(board), nl=False)
    else:
        _emit_json(to_json(board))
    if written:
        console.print(f"plots: {len(written)} files in {written[0].parent}", highlight=False)


# ------------------------------------------------------------------------------------------ entry points
def main() -> None:
    """Entry point of the ``portfolio`` command."""
    cli(prog_name="portfolio")


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("problem", type=click.Path())
@click.argument("timeout", type=click.FloatRange(min=0, min_open=True))
@click.option("--clock", type=click.Choice(CLOCKS), default="process", show_default=True,
              help=CLOCK_HELP)
@click.option("--no-exhaustive", is_flag=True, help=NO_EXHAUSTIVE_HELP)
def _iopddl(problem: str, timeout: float, clock: str, no_exhaustive: bool) -> None:
    """Contest drop-in: solve PROBLEM within TIMEOUT seconds; the last stdout line is the plan.

    TIMEOUT counts from the creation of this process, as a harness that times the whole command
    sees it: when a shell runs other commands and then execs `iopddl`, their time counts too
    (`--clock program` counts from this program's start instead, as `portfolio solve` does).
    """
    try:
        code = run_solve(problem, timeout, quiet=True, clock=clock, exhaustive=not no_exhaustive)
    except (ProblemFormatError, SolutionFormatError, SolutionError) as exc:
        raise UserError(str(exc)) from None
    sys.exit(code)


def iopddl_main() -> None:
    """Entry point of the ``iopddl`` command."""
    _iopddl(prog_name="iopddl")
