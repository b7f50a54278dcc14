"""``portfolio generate``: write a synthetic instance of the contest's shape."""

from __future__ import annotations

import click

from ..io import write_problem
from .app import cli
from .common import _refuse_overwrite, console


@cli.command()
@click.argument("out", type=click.Path())
@click.option("--nodes", "-n", type=click.IntRange(min=1), required=True, help="Number of nodes.")
@click.option("--strategies", "-k", type=click.IntRange(min=1), default=8, show_default=True,
              help="Typical strategies per node.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def generate(out: str, nodes: int, strategies: int, seed: int, force: bool) -> None:
    """Write a synthetic instance of the contest's shape to OUT (.json or .json.gz)."""
    from ..generate import generate_problem

    _refuse_overwrite(out, force)
    prob = generate_problem(nodes, strategies=strategies, seed=seed)
    write_problem(prob, out)
    console.print(f"wrote {out}: {prob.num_nodes:,} nodes, {prob.num_edges:,} edges, "
                  f"limit {prob.usage_limit:,}")
