"""The click application: the ``portfolio`` group, exit codes, and one-line errors for every command."""

from __future__ import annotations

from typing import Any

import click

from ..errors import ProblemError

EXIT_OK, EXIT_NO_SOLUTION, EXIT_BAD_INPUT = 0, 1, 2


class UserError(click.ClickException):
    """A problem with what the user gave us: one clear line, exit code 2, no traceback."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: Any = None) -> None:
        # Plain click output: one line however long (rich would wrap it at the terminal width).
        click.echo(f"error: {self.message}", err=True)


def _one_line(exc: click.UsageError, path: str = "") -> UserError:
    """A click usage error as one line (click's own shows usage, a hint and the error: three),
    naming the command it came from: the error's context, else ``path`` (an option's missing
    value is raised by click's parser with no context)."""
    where = exc.ctx.command_path if exc.ctx is not None else (path or "portfolio")
    return UserError(f"{exc.format_message()} (see `{where} --help`)")


def _path(info_name: Any, parent: Any) -> str:
    """The command path of a context being made: its parent's path and its own name."""
    head = parent.command_path if isinstance(parent, click.Context) else ""
    return " ".join(p for p in (head, info_name or "") if p)


def _is_help(exc: click.UsageError) -> bool:
    return type(exc).__name__ == "NoArgsIsHelpError"  # click 8.2: no arguments shows the help


class _OneLineUsage:
    """Mixin for click commands and groups: usage errors become one-line :class:`UserError`."""

    def make_context(self, info_name: Any, args: Any, parent: Any = None,
                     **kwargs: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **kwargs)  # type: ignore[misc]
        except click.UsageError as exc:
            if _is_help(exc):
                raise
            raise _one_line(exc, _path(info_name, parent)) from None


class _Command(_OneLineUsage, click.Command):
    """A command whose usage errors are one line."""


class _Group(_OneLineUsage, click.Group):
    """Turns our input errors and click's usage errors into one-line :class:`UserError` wherever a
    command raises them."""

    command_class = _Command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ProblemError as exc:  # bad files, plans, backend names: one line, exit 2
            raise UserError(str(exc)) from None
        except click.UsageError as exc:
            if _is_help(exc):
                raise
            raise _one_line(exc, _path(ctx.invoked_subcommand, ctx)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="iopddl-portfolio")
def cli() -> None:
    """Solver portfolio for the IOPDDL intra-operator parallelism (auto-sharding) problem."""
