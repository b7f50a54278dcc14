"""Live progress and the final leaderboard of a portfolio run, drawn with rich on stderr."""

from __future__ import annotations

import time
from typing import Optional

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .backend import Status
from .runner import BackendRun, Portfolio, PortfolioResult

_STATUS_STYLE = {
    Status.OPTIMAL: "bold green", Status.FEASIBLE: "green", Status.RUNNING: "cyan",
    Status.PENDING: "dim", Status.TIMEOUT: "yellow", Status.NO_SOLUTION: "yellow",
    Status.UNSUPPORTED: "dim", Status.INFEASIBLE_PROVEN: "magenta",
    Status.ERROR: "red", Status.CRASHED: "red", Status.REJECTED: "bold red",
}


def _cost(value: Optional[int]) -> str:
    return "-" if value is None else f"{value:,}"


def _gap(run: BackendRun, best: Optional[int]) -> str:
    if run.best_cost is None or best is None or run.disqualified:
        return "-"
    if best == 0:
        return "0%" if run.best_cost == 0 else "inf"
    return f"{100.0 * (run.best_cost - best) / best:.3f}%"


def _status(run: BackendRun) -> str:
    """The status; optimal and infeasible are what the backend claimed, so they are shown as such."""
    label = run.status.value
    if run.status in (Status.OPTIMAL, Status.INFEASIBLE_PROVEN):
        label += " (claim)"
    return f"[{_STATUS_STYLE.get(run.status, '')}]{label}[/]"


def _cpu(run: BackendRun) -> str:
    if run.cpu_seconds is None:
        return "-"
    return f"{run.cpu_seconds:.1f} s" + (f" /{run.cores}" if run.cores > 1 else "")


def live_table(portfolio: Portfolio) -> Table:
    """Per backend: status, best cost, time of its last improvement; the time left in the title."""
    left = max(0.0, portfolio.end - time.time())
    best = portfolio.best_eval.cost if portfolio.best_eval else None
    table = Table(title=f"{portfolio.problem.name}: best {_cost(best)}"
                        f" ({portfolio.best_backend or '-'}), {left:.1f} s left", title_justify="left")
    for col in ("backend", "status", "best cost", "last improvement", "note"):
        table.add_column(col, justify="right" if col in ("best cost", "last improvement") else "left")
    for run in portfolio.runs.values():
        last = run.incumbents[-1].time if run.incumbents else None
        table.add_row(run.name, _status(run), _cost(run.best_cost),
                      "-" if last is None else f"{last:.2f} s", run.note[:60])
    return table


def final_table(result: PortfolioResult) -> Table:
    """The leaderboard of this run: status, best cost, gap to the best, time to best, the bound the
    backend claimed (false claims are dropped and named in the note), CPU time; the caption says
    whether the answer is proven, only claimed, or neither."""
    best = result.cost
    table = Table(title=f"{result.problem}: backends", title_justify="left",
                  caption=result.proof or None, caption_justify="left")
    for col in ("backend", "status", "best cost", "gap", "time to best", "claimed bound", "cpu",
                "note"):
        table.add_column(col, justify="left" if col in ("backend", "status", "note") else "right")
    order = sorted(result.runs.values(),
                   key=lambda r: (r.disqualified, r.best_cost is None, r.best_cost or 0, r.name))
    for run in order:
        table.add_row(
            run.name + (" [bold]*[/]" if run.name == result.winner else ""), _status(run),
            _cost(run.best_cost), _gap(run, best),
            "-" if run.time_to_best is None else f"{run.time_to_best:.2f} s",
            _cost(run.lower_bound), _cpu(run), run.note,
        )
    return table


class LiveProgress:
    """An ``on_update`` callback that redraws at most a few times a second (no background thread:
    workers are forked from the parent, and a drawing thread could hold a lock at fork time)."""

    def __init__(self, console: Console, interval: float = 0.25) -> None:
        self.live = Live(console=console, auto_refresh=False, transient=True)
        self.interval, self.last = interval, 0.0

    def __enter__(self) -> "LiveProgress":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)

    def __call__(self, portfolio: Portfolio) -> None:
        if time.time() - self.last >= self.interval:
            self.live.update(live_table(portfolio), refresh=True)
            self.last = time.time()
