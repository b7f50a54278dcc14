"""Which backends run: ``portfolio backends`` lists them, ``_select_backends`` picks them for a run."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import click
from rich.markup import escape
from rich.table import Table

from .app import UserError, cli
from .common import _emit_json, console


OPTION_HELP = ("Set a backend option, BACKEND.NAME=VALUE (repeatable; `portfolio backends "
               "--verbose` lists each backend's options); overrides --config.")
CONFIG_HELP = ("A TOML file of backend options: one table per backend ([toulbar2] warm_follow = "
               "\"last\"), and [portfolio] backends = [...] used when --backends is not given.")


def option_flags(command: Callable) -> Callable:
    """``--option BACKEND.NAME=VALUE`` (repeatable) and ``--config FILE.toml``, for every command
    that runs backends (``solve``, ``bench``, ``tradeoff``)."""
    command = click.option("--config", "config", metavar="FILE.toml", type=click.Path(),
                           help=CONFIG_HELP)(command)
    return click.option("--option", "assignments", multiple=True, metavar="BACKEND.NAME=VALUE",
                        help=OPTION_HELP)(command)


def _warn(text: str) -> None:
    console.print(f"[yellow]warning:[/] {text}", highlight=False, soft_wrap=True)


def _select_backends(names: str | None, time_limit: float | None = None,
                     deterministic: bool = False, config: str | None = None,
                     assignments: Sequence[str] = ()) -> Any:
    """The backends to run and their options (:class:`portfolio.api.solving.Chosen`), chosen
    as ``portfolio.solve`` chooses them; registry warnings (and deterministic mode's note on the
    backends it leaves out) on stderr; a bad name, option or config file: one line, exit 2."""
    from ..api.solving import choose
    from ..errors import ProblemError

    try:
        return choose(names, time_limit, warn=_warn, deterministic=deterministic, config=config,
                      assignments=assignments)
    except ProblemError as exc:
        raise UserError(str(exc)) from None


def _loaded_from(backend: object) -> str:
    """The file a backend's class was loaded from: shows a stale installed copy shadowing edits."""
    import inspect

    try:
        return inspect.getfile(type(backend))
    except (TypeError, OSError):
        return "?"


def _engines_text(engines: dict) -> str:
    """``{"ortools": "9.12", "numpy": None}`` as ``ortools 9.12, numpy (not installed)``."""
    return ", ".join(f"{name} {version}" if version else f"{name} (not installed)"
                     for name, version in engines.items()) or "-"


@cli.command(name="backends")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
@click.option("--verbose", "-v", is_flag=True,
              help="Also show the engines each backend runs on, with their versions, the file "
                   "it was loaded from, and every backend's options.")
def backends_cmd(as_json: bool, verbose: bool) -> None:
    """List the solver backends this installation knows, whether each can run here, and whether
    it is in the default set (what `portfolio solve` runs without --backends)."""
    from ..registry import Registry

    registry = Registry()
    rows = registry.describe()
    for row, info in zip(rows, registry.infos()):
        row["loaded_from"] = _loaded_from(info.backend)
    if as_json:
        _emit_json({"backends": rows, "warnings": registry.warnings})
        return
    table = Table(title="backends", title_justify="left")
    for col in ("name", "package", "available", "default", "capabilities", "description") + (
            ("engines", "loaded from") if verbose else ()):
        table.add_column(col, overflow="fold")
    for row in rows:
        # plugin text is shown as written: a hint like "pip install 'pkg[extra]'" is not rich markup
        avail = "[green]yes[/]" if row["available"] else f"[red]no[/]: {escape(row['reason'])}"
        table.add_row(escape(row["name"]), escape(f"{row['package']} {row['version']}".strip()),
                      avail, "yes" if row["default"] else "[dim]no[/]", ", ".join(row["capabilities"] + (["deterministic"] if row["deterministic"]
                                                              else [])) or "-",
                      escape(row["description"]),
                      *((escape(_engines_text(row["engines"])), escape(str(row["loaded_from"])))
                        if verbose else ()))
    console.print(table)
    if verbose:
        _options_table(registry)
    for warning in registry.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)


def _options_table(registry: Any) -> None:
    """``--verbose``: each backend's declared options (set them with --option BACKEND.NAME=VALUE)."""
    table = Table(title="options (--option BACKEND.NAME=VALUE, --config FILE.toml)",
                  title_justify="left")
    for col in ("option", "type", "default", "allowed", "help"):
        table.add_column(col, overflow="fold")
    for info in registry.infos():
        for option in info.meta.options:
            kind = option.kind + ("" if option.changes_plan else ", does not change the plan")
            table.add_row(escape(f"{info.backend.name}.{option.name}"), kind,
                          escape(option.default_text()), escape(option.allowed()),
                          escape(option.help))
    if table.row_count:
        console.print(table)
    else:
        console.print("no backend declares options", highlight=False)
