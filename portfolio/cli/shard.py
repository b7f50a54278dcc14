"""``portfolio shard FILE.py:FACTORY``: a PyTorch model to a sharding plan (docs/frontends.md).

Nothing here imports torch: the command checks that the front end can run (torch installed and
recent enough: one line naming the install command otherwise), then hands over to
:mod:`portfolio.frontends.torch`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import click

from .app import EXIT_NO_SOLUTION, EXIT_OK, UserError, cli
from .backends import _select_backends, option_flags
from .cluster import cluster_from, cluster_options
from .common import _refuse_overwrite, console
from .solve import deterministic_options

DEVICES = ("h100", "a100", "tpu-v5e", "cpu")


def load_factory(target: str) -> tuple[Any, Any]:
    """``FILE.py:FACTORY`` -> what ``FACTORY()`` returns, checked to be ``(module,
    example_inputs)``; every failure one :class:`UserError` line naming the file and the function."""
    path_text, sep, name = target.rpartition(":")
    if not sep or not path_text or not name.isidentifier():
        raise UserError(f"{target}: expected FILE.py:FACTORY (a file and a function in it that "
                        f"returns (module, example_inputs))")
    path = Path(path_text)
    if not path.is_file():
        raise UserError(f"{path_text}: no such file")
    spec = importlib.util.spec_from_file_location(f"portfolio_shard_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path_text}: cannot be imported as a Python file")
    code = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(code)
    except Exception as exc:  # the user's file: whatever it raises is one line
        raise UserError(f"{path_text}: importing it raised {type(exc).__name__}: {_first_line(exc)}") from None
    finally:
        sys.path.pop(0)
    factory = getattr(code, name, None)
    if not callable(factory):
        raise UserError(f"{path_text}: has no function {name}")
    try:
        made = factory()
    except Exception as exc:
        raise UserError(f"{path_text}:{name}() raised {type(exc).__name__}: {_first_line(exc)}") from None
    if not isinstance(made, (tuple, list)) or len(made) != 2:
        raise UserError(f"{path_text}:{name}() must return (module, example_inputs), got "
                        f"{type(made).__name__}")
    return made[0], made[1]


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


class _BuildProgress:
    """The build's stages as a rich progress bar on stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: Any = None
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> "_BuildProgress":
        if not self.quiet:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description:<15}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                console=console, transient=True)
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.bar is None:
            return
        if stage not in self.tasks:
            for other in self.tasks.values():
                self.bar.update(other, completed=self.bar.tasks[other].total)
            self.tasks[stage] = self.bar.add_task(stage, total=total)
        self.bar.update(self.tasks[stage], completed=done, total=total)


@cli.command()
@click.argument("target", metavar="FILE.py:FACTORY")
@click.option("--mesh", default="2x4", show_default=True,
              help="The device mesh: 8, 2x4, 4x8 (outer axis first).")
@click.option("--memory", metavar="SIZE|SHARE", help="Memory per rank: bytes with a unit (12GiB, "
              "512MB) or a share of the peak of the plan that replicates everything (60%). "
              "Default: no limit.")
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True), default=30.0,
              show_default=True, help="Seconds for the solve (the build comes first).")
@click.option("--training", is_flag=True, help="Plan a training step: the forward and the backward, "
              "with gradients and optimizer state.")
@click.option("--optimizer", type=click.Choice(["adam", "sgd"]), default="adam", show_default=True,
              help="Optimizer state held per parameter in training (Adam: two tensors, SGD: none).")
@click.option("--device", type=click.Choice(DEVICES), default="h100", show_default=True,
              help="Device profile the costs are priced for (docs/frontends.md, 'Costs').")
@click.option("--verify", is_flag=True, help="Run the plan on every rank and check outputs, "
              "gradients, per-rank peak and collectives against the unsharded module; exit 1 if "
              "anything differs.")
@click.option("--export", "export", metavar="F.json.gz", type=click.Path(),
              help="Write the problem in the contest's JSON with node names (portfolio solve, "
              "bench, tune and tradeoff read it).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole plan as JSON on stdout.")
@click.option("--output", "-o", type=click.Path(), help="Write the plan's JSON here.")
@click.option("--force", is_flag=True, help="Overwrite --export or --output if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or tables on stderr.")
@click.option("--backends", "-b", help="Comma-separated backend names (default: all available).")
@click.option("--workers", "-w", type=click.IntRange(min=1), help="Cores the backends share.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for randomised backends.")
@click.option("--no-presolve", is_flag=True, help="Give every backend the original problem.")
@click.option("--warm-start", "warm_start", metavar="PLAN", type=click.Path(),
              help="Start from an earlier plan of the same model (its --json or --output file; "
              "mapped by node name) or a plan file of the problem.")
@option_flags
@deterministic_options
@cluster_options
def shard(target: str, mesh: str, memory: Optional[str], time_limit: float, training: bool,
          optimizer: str, device: str, verify: bool, export: Optional[str], as_json: bool,
          output: Optional[str], force: bool, quiet: bool, backends: Optional[str],
          workers: Optional[int], seed: int, no_presolve: bool, warm_start: Optional[str],
          assignments: tuple[str, ...], config: Optional[str], deterministic: bool,
          work: Optional[int], dask_scheduler: Optional[str], dask_workers: Optional[int],
          dask_problem: str, dask_unreachable: str) -> None:
    """Shard the PyTorch model that FILE.py's FACTORY() returns, as (module, example_inputs),
    over a device mesh: the problem is built from DTensor's own sharding rules, solved by the
    portfolio, and with --verify run on every rank and checked.

    The plan's tables go to stderr (parameters, modules in words, collectives, peak); the last
    stdout line is the plan of the problem's nodes (or --json: everything). Exit 1 when no plan
    fits --memory (the least peak and the modules holding it are named) or when --verify finds a
    difference.
    """
    from ..frontends.torch.environment import require_torch

    require_torch()
    for path in (export, output):
        _refuse_overwrite(path, force)
    cluster = cluster_from(dask_scheduler, dask_workers, dask_problem, dask_unreachable)
    picked = _select_backends(backends, time_limit, deterministic or work is not None, config,
                              assignments)
    from ..frontends.torch import api
    from ..frontends.torch.mesh import mesh_shape
    from ..frontends.torch.memory import parse_budget

    shape = mesh_shape(mesh)
    parse_budget(memory)
    module, inputs = load_factory(target)
    started = time.perf_counter()
    with _BuildProgress(quiet) as progress:
        built = api.build(module, inputs, shape, memory=memory, training=training,
                          optimizer=optimizer, device=device, progress=progress)
    if not quiet:
        console.print(f"built {built.problem.num_nodes:,} nodes, {built.problem.num_edges:,} edges "
                      f"in {time.perf_counter() - started:.1f} s ("
                      + ", ".join(f"{k} {v:.1f} s" for k, v in built.seconds.items()) + ")",
                      highlight=False)
    if export:
        from ..frontends.torch.solving import export_problem

        export_problem(built, export)
        if not quiet:
            console.print(f"exported the problem to {export}", highlight=False)
    options = _solve_options(backends, workers, seed, no_presolve, picked.options, config,
                             deterministic, work, cluster)
    plan = _solve(built, time_limit, warm_start, options, quiet)
    if verify and plan.plan is not None:
        from ..frontends.torch.verify import verify_plan

        with console.status("verifying on every rank", spinner="dots") if not quiet else _Nothing():
            plan.check = verify_plan(plan, module, inputs)
    sys.exit(_report(plan, as_json, output, quiet))


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _solve_options(backends: Optional[str], workers: Optional[int], seed: int, no_presolve: bool,
                   backend_options: dict, config: Optional[str], deterministic: bool,
                   work: Optional[int], cluster: Any) -> dict:
    """``portfolio.solve``'s keywords from the command's flags (``backend_options``: the
    ``--option`` texts and the config file's, already checked and typed)."""
    options: dict = {"backends": backends, "workers": workers, "seed": seed,
                     "presolve": not no_presolve, "deterministic": deterministic, "work": work,
                     "config": config, "backend_options": backend_options or None}
    if cluster is not None:
        options.update(dask_scheduler=cluster.scheduler, dask_workers=cluster.workers,
                       dask_problem=cluster.transfer, dask_unreachable=cluster.unreachable)
    return options


def _solve(built: Any, time_limit: float, warm_start: Optional[str], options: dict, quiet: bool) -> Any:
    import numpy as np

    from ..frontends.torch.plan import ShardPlan
    from ..frontends.torch.solving import solve_built

    if quiet:
        result, mapping = solve_built(built, time_limit, warm_start, **options)
    else:
        with console.status(f"solving ({time_limit:g} s)", spinner="dots") as status:
            def improved(cost: int, plan: list, backend: str, seconds: float) -> None:
                status.update(f"solving ({time_limit:g} s): {cost / 1e6:.3f} ms by {backend} "
                              f"at {seconds:.1f} s")
            result, mapping = solve_built(built, time_limit, warm_start, on_improve=improved, **options)
    plan = ShardPlan(built, np.asarray(result.plan, dtype=np.int64) if result.feasible else None,
                     result, built.budget)
    if mapping is not None:
        plan.notes.append(f"warm start mapped by {mapping['by']}: {mapping['kept']:,} of "
                          f"{mapping['nodes']:,} nodes kept")
    return plan


def _report(plan: Any, as_json: bool, output: Optional[str], quiet: bool) -> int:
    """Tables on stderr, the answer on stdout, --output; the exit code."""
    from ..io import format_contest

    doc = plan.to_dict()
    if not quiet:
        from ..frontends.torch.render import render_plan

        render_plan(plan, console)
        memory = plan.result.memory if plan.result is not None else None
        if plan.plan is None and memory:
            console.print(f"[bold]memory:[/] {memory['text']}", highlight=False, soft_wrap=True)
    if output:
        Path(output).write_text(json.dumps(doc, indent=2) + "\n")
    click.echo(json.dumps(doc, indent=2) if as_json else format_contest(plan.plan))
    if plan.plan is None or (plan.check is not None and not plan.check.ok):
        return EXIT_NO_SOLUTION
    return EXIT_OK
