"""``portfolio convert``: a problem from one format to another (contest, extended, XLA request)."""

from __future__ import annotations

import click

from ..adapters.formats import FORMATS, XLA_FORMATS, format_of
from .app import UserError, cli
from .common import _read, _refuse_overwrite, console


@cli.command()
@click.argument("source", type=click.Path())
@click.argument("target", type=click.Path())
@click.option("--from", "from_fmt", type=click.Choice(FORMATS),
              help="Format of SOURCE (default: by its name; JSON reads contest and extended alike).")
@click.option("--to", "to_fmt", type=click.Choice(FORMATS),
              help="Format of TARGET (default: by its name; .json is contest when the problem fits "
              "it, else extended).")
@click.option("--cost-scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="Reading an XLA request: multiply its costs by this before "
              "rounding to integers. Writing one: divide by it.")
@click.option("--force", is_flag=True, help="Overwrite TARGET if it exists.")
def convert(source: str, target: str, from_fmt: str | None, to_fmt: str | None, cost_scale: float,
            force: bool) -> None:
    """Convert SOURCE to TARGET: contest JSON (.json, .json.gz), extended JSON, XLA request binary
    (.pb, .binpb) or text (.textproto, .txtpb, .pbtxt); a .gz name is gzipped.

    A request's followers fold into their leaders, so a request converted to JSON may have fewer
    nodes; a node with several intervals goes into a request as followers of it.
    """
    from ..adapters.formats import save_any

    src, dst = format_of(source, from_fmt), format_of(target, to_fmt)
    if cost_scale != 1.0 and src not in XLA_FORMATS and dst not in XLA_FORMATS:
        raise UserError("--cost-scale applies to XLA requests only; neither side is one")
    _refuse_overwrite(target, force)
    conversion, _ = _read(source, cost_scale if src in XLA_FORMATS else 1.0, src)
    try:
        written = save_any(conversion.problem, target, to_fmt if to_fmt else None,
                           cost_scale if dst in XLA_FORMATS else 1.0)
    except ValueError as exc:
        raise UserError(f"{target}: cannot write as {dst}: {exc}") from None
    except OSError as exc:
        raise UserError(f"{target}: cannot write: {exc.strerror or exc}") from None
    p = conversion.problem
    console.print(f"{source} ({src}) -> {target} ({written}): {p.num_nodes:,} nodes, "
                  f"{p.num_edges:,} edges, {p.num_intervals:,} intervals", highlight=False)

