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
               "\"last\"), [portfolio] backends = [...] used when --backends is not given, and "
               "[portfolio] add_to_default = [...] for backends of other distributions, which join "
               "the default set only so. Repeatable: the files merge in order, key by key, the "
               "later winning; each is recorded.")

PLUGINS_HELP = ("Environment: PORTFOLIO_PLUGINS, comma-separated plugin modules registered without "
                "an install (docs/plugins.md); recorded with the run.")
"""The sentence that ends the help of every command that reads ``PORTFOLIO_PLUGINS`` (each builds
the backend registry)."""


def reads_plugins(command: Callable) -> Callable:
    """Append :data:`PLUGINS_HELP` to a command function's help (its docstring): for every
    command that builds the backend registry, so that its ``--help`` names the variable."""
    command.__doc__ = f"{(command.__doc__ or '').rstrip()}\n\n    {PLUGINS_HELP}\n"
    return command


def option_flags(command: Callable) -> Callable:
    """``--option BACKEND.NAME=VALUE`` (repeatable) and ``--config FILE.toml`` (repeatable: a
    tuple of paths), for every command that runs backends (``solve``, ``bench``, ``tradeoff``)."""
    command = config_flag(command)
    return click.option("--option", "assignments", multiple=True, metavar="BACKEND.NAME=VALUE",
                        help=OPTION_HELP)(command)


def config_flag(command: Callable) -> Callable:
    """``--config FILE.toml``, repeatable (the command gets a tuple of paths, merged in order)."""
    return click.option("--config", "config", metavar="FILE.toml", type=click.Path(),
                        multiple=True, help=CONFIG_HELP)(command)


def _warn(text: str) -> None:
    console.print(f"[yellow]warning:[/] {text}", highlight=False, soft_wrap=True)


def _select_backends(names: str | None, time_limit: float | None = None,
                     deterministic: bool = False, config: Sequence[str] | str | None = None,
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


def _engines_text(engines: dict, sep: str = ", ") -> str:
    """``{"ortools": "9.12", "numpy": None}`` as ``ortools 9.12, numpy (not installed)`` (``sep``
    between them: the table puts one a line, so that a name and its version never part)."""
    return sep.join(f"{name} {version}" if version else f"{name} (not installed)"
                     for name, version in engines.items()) or "-"


@cli.command(name="backends")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON to stdout.")
@click.option("--verbose", "-v", is_flag=True,
              help="Also show the engines each backend runs on, with their versions, the file "
                   "it was loaded from, and every backend's options.")
@config_flag
@reads_plugins
def backends_cmd(as_json: bool, verbose: bool, config: tuple[str, ...]) -> None:
    """List the solver backends this installation knows, whether each can run here, and whether
    it is in the default set (what `portfolio solve` runs without --backends) and why: the
    built-ins that declare default=True, and backends of other distributions only when a config
    adds them ([portfolio] add_to_default; with --config, the default set that config gives)."""
    from ..configure import config_from
    from ..registry import Registry, RegistryError

    settings = config_from(config)
    registry = Registry()
    added = () if settings is None else settings.add_to_default or ()
    try:
        registry.check_added(added)
    except RegistryError as exc:
        raise UserError(str(exc)) from None
    rows = registry.describe(added)
    for row, info in zip(rows, registry.infos()):
        row["loaded_from"] = _loaded_from(info.backend)
    if as_json:
        _emit_json({"backends": rows, "warnings": registry.warnings})
        return
    table = Table(title="backends", title_justify="left")
    for col in ("name", "package", "available", "default", "capabilities", "description") + (
            ("engines", "loaded from") if verbose else ()):
        table.add_column(col, overflow="fold", no_wrap=col == "engines")
    for row in rows:
        # plugin text is shown as written: a hint like "pip install 'pkg[extra]'" is not rich markup
        avail = "[green]yes[/]" if row["available"] else f"[red]no[/]: {escape(row['reason'])}"
        default = ("yes" if row["default"] else "[dim]no[/]") + f"\n[dim]{row['default_rule']}[/]"
        table.add_row(escape(row["name"]), escape(f"{row['package']} {row['version']}".strip()),
                      avail, default, ", ".join(row["capabilities"] + (["deterministic"] if row["deterministic"]
                                                              else [])) or "-",
                      escape(row["description"]),
                      *((escape(_engines_text(row["engines"], "\n")), escape(str(row["loaded_from"])))
                        if verbose else ()))
    console.print(table)
    if any(row["default_rule"] == "outside" for row in rows):
        console.print("default 'no, outside': a backend of another distribution runs when named, "
                      "or when a config adds it to the default set: [portfolio] add_to_default = "
                      "[\"NAME\"] (--json: default_why)", highlight=False, soft_wrap=True,
                      markup=False)
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
