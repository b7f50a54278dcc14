"""The check's tables: per backend, what each instance's run gave, then every check by instance
(``ok`` or ``BREACH``), then one line per breach. Plugin text is shown as written (escaped)."""

from __future__ import annotations

import io
from typing import Any, Iterator

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .checks import CHECKS


def _runs_table(entry: Any) -> Table:
    table = Table(title=f"{entry.name}: runs" + (f" ({entry.package})" if entry.package else ""),
                  title_justify="left")
    for col in ("instance", "status", "best cost", "reference", "ended", "note"):
        table.add_column(col, overflow="fold", justify="right" if col in ("best cost", "ended")
                         else "left")
    for o in entry.outcomes:
        table.add_row(o.instance.name, o.status, "-" if o.cost is None else f"{o.cost:,}",
                      o.reference(), "-" if o.seconds is None else f"{o.seconds:.2f} s",
                      escape(o.note))
    return table


def _checks_table(entry: Any) -> Table:
    table = Table(title=f"{entry.name}: checks", title_justify="left")
    table.add_column("check")
    names = [o.instance.name for o in entry.outcomes]
    for name in names:
        table.add_column(name, justify="center")
    for check in CHECKS:
        if check == "registers":
            bad = any(b.check == check for b in entry.registration)
            cells = ["[red]BREACH[/]" if bad else "[green]ok[/]"] * len(names) or []
            table.add_row(check, *cells)
            continue
        cells = []
        for o in entry.outcomes:
            bad = any(b.check == check for b in o.breaches)
            cells.append("[red]BREACH[/]" if bad else "[green]ok[/]")
        table.add_row(check, *cells)
    return table


def renderables(report: Any) -> Iterator[RenderableType]:
    """Everything ``portfolio check-plugin`` prints, in order."""
    for b in report.registration:
        yield Text(f"registration: {b.detail}", style="red", overflow="fold")
    for entry in report.backends:
        if entry.outcomes:
            yield _runs_table(entry)
            yield _checks_table(entry)
        for b in entry.breaches:
            yield Text(f"BREACH {entry.name} [{b.check}] {b.instance}: {b.detail}", style="red",
                       overflow="fold")
    total = len(report.breaches)
    if report.ok:
        names = ", ".join(e.name for e in report.backends)
        yield Text(f"check-plugin {report.target}: no breach ({names}; {len(CHECKS)} checks)",
                   style="green")
    else:
        yield Text(f"check-plugin {report.target}: {total} breach{'es' if total != 1 else ''}"
                   + ("" if report.backends else "; no backend could be checked"), style="red")


def render_text(report: Any, width: int = 120) -> str:
    """The same as plain text."""
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    console.print(Group(*renderables(report)))
    return out.getvalue()
