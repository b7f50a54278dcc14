"""``portfolio convert``: a problem from one format to another (any format the registry knows)."""

from __future__ import annotations

import click

from ..adapters.formats import convert as convert_file
from ..adapters.formats import names
from .app import UserError, cli
from .common import _refuse_overwrite, console


@cli.command()
@click.argument("source", type=click.Path())
@click.argument("target", type=click.Path())
@click.option("--from", "from_fmt", metavar="FORMAT",
              help=f"Format of SOURCE ({', '.join(names())}; default: by its name; JSON reads "
              "contest and extended alike).")
@click.option("--to", "to_fmt", metavar="FORMAT",
              help="Format of TARGET (default: by its name; .json is contest when the problem fits "
              "it, else extended).")
@click.option("--cost-scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="From an XLA request to JSON: multiply its costs by this "
              "before rounding to integers. From JSON to a request: divide by it.")
@click.option("--drop-unknown", is_flag=True, help="XLA request to XLA request: drop the fields "
              "this version does not declare instead of refusing to convert (binary keeps them; "
              "text cannot).")
@click.option("--force", is_flag=True, help="Overwrite TARGET if it exists.")
def convert(source: str, target: str, from_fmt: str | None, to_fmt: str | None, cost_scale: float,
            drop_unknown: bool, force: bool) -> None:
    """Convert SOURCE to TARGET: contest JSON (.json, .json.gz), extended JSON, XLA request binary
    (.pb, .binpb) or text (.textproto, .txtpb, .pbtxt); a .gz name is gzipped.

    An XLA request converted to an XLA request (binary or text) stays the same request, field for
    field: followers, aliases, groups, fractional costs, hints and fields this project does not
    use are all kept. Between a request and JSON the problem is converted: a request's followers
    fold into their leaders (the JSON may have fewer nodes), and a node with several intervals
    goes into a request as followers of it; the notes say what was folded or rounded.
    """
    _refuse_overwrite(target, force)
    try:  # a bad SOURCE or a TARGET that cannot hold it: a ProblemError, one line and exit 2
        done = convert_file(source, target, from_fmt, to_fmt, cost_scale, drop_unknown)
    except OSError as exc:
        raise UserError(f"{target}: cannot write: {exc.strerror or exc}") from None
    for note in done.conversion.notes:
        console.print(f"[yellow]note:[/] {source}: {note}", highlight=False, soft_wrap=True)
    src, dst = done.source_format, done.target_format
    if done.copied:
        console.print(f"{source} ({src}) -> {target} ({dst}): the same request, field for field "
                      f"({len(done.conversion.node_of):,} nodes)", highlight=False)
        return
    p = done.conversion.problem
    console.print(f"{source} ({src}) -> {target} ({dst}): {p.num_nodes:,} nodes, "
                  f"{p.num_edges:,} edges, {p.num_intervals:,} intervals", highlight=False)
