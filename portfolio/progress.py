"""Live progress and the final leaderboard of a portfolio run, drawn with rich on stderr."""

from __future__ import annotations

import time
from typing import Any, Optional

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .backend import Status
from .problem import FORBIDDEN
from .runner import BackendRun, Portfolio, PortfolioResult

_STATUS_STYLE = {
    Status.OPTIMAL: "bold green", Status.FEASIBLE: "green", Status.RUNNING: "cyan",
    Status.PENDING: "dim", Status.TIMEOUT: "yellow", Status.NO_SOLUTION: "yellow",
    Status.UNSUPPORTED: "dim", Status.INFEASIBLE_PROVEN: "magenta",
    Status.ERROR: "red", Status.CRASHED: "red", Status.REJECTED: "bold red",
}


def format_cost(value: Optional[int]) -> str:
    """A cost in full; a plan with forbidden choices (10**18 each) as "forbidden ×N + finite part",
    so that no table cuts its digits and a reader sees at once what it is. (N and the finite part are
    read off the total, exact while the finite part stays below 10**18.)"""
    if value is None:
        return "-"
    if value >= FORBIDDEN:
        n, rest = divmod(value, FORBIDDEN)
        return f"forbidden ×{n:,} + {rest:,}"
    return f"{value:,}"


_cost = format_cost


def format_gap(cost: Optional[int], best: Optional[int]) -> str:
    """Relative excess over the best cost, in at most 9 characters: 0.123%, 12.3%, 456%, then ×7.9
    (a ratio) from 1000% on; "forbidden" when the plan has forbidden choices and the best does not."""
    if cost is None or best is None:
        return "-"
    if cost >= FORBIDDEN > best:
        return "forbidden"
    if best <= 0:
        return "0%" if cost == best else "inf"
    pct = 100.0 * (cost - best) / best
    if pct < 10:
        return f"{pct:.3f}%"
    if pct < 100:
        return f"{pct:.1f}%"
    if pct < 1000:
        return f"{pct:.0f}%"
    ratio = cost / best
    return f"×{ratio:.3g}" if ratio < 1e5 else f"×{ratio:.1e}"


def _gap(run: BackendRun, best: Optional[int]) -> str:
    """How far behind the run's best cost a backend's best plan is (not the certified gap to the
    bound, which the bound line and "gap to bound over time" give)."""
    if run.disqualified:
        return "-"
    return format_gap(run.best_cost, best)


def _status(run: BackendRun) -> str:
    """The status; optimal and infeasible are what the backend claimed, so they are shown as such."""
    label = run.status.value
    if run.status in (Status.OPTIMAL, Status.INFEASIBLE_PROVEN):
        label += " (claim)"
    elif run.status is Status.RUNNING and run.phase == "prepare":
        label = "setting up"
    return f"[{_STATUS_STYLE.get(run.status, '')}]{label}[/]"


def _cpu(run: BackendRun) -> str:
    if run.cpu_seconds is None:
        return "-"
    return f"{run.cpu_seconds:.1f} s" + (f" /{run.cores}" if run.cores > 1 else "")


def live_table(portfolio: Portfolio) -> Table:
    """Per backend: status, best cost, time of its last improvement; the time left in the title."""
    left = max(0.0, portfolio.end - time.monotonic())
    best = portfolio.best_eval.cost if portfolio.best_eval else None
    point = (f", exchange point {portfolio.settled_point} of {portfolio.points_expected()}"
             if portfolio.options.deterministic else "")
    table = Table(title=f"{portfolio.problem.name}: best {_cost(best)}"
                        f" ({portfolio.best_backend or '-'}){point}, {left:.1f} s left",
                  title_justify="left")
    for col in ("backend", "status", "best cost", "last improvement", "note"):
        table.add_column(col, justify="right" if col in ("best cost", "last improvement") else "left")
    for run in portfolio.runs.values():
        last = run.incumbents[-1].time if run.incumbents else None
        table.add_row(run.name, _status(run), _cost(run.best_cost),
                      "-" if last is None else f"{last:.2f} s", run.note[:60])
    return table


def final_table(result: PortfolioResult) -> "FinalTable":
    """The leaderboard of this run: status, best cost, gap to the best, time to best, the bound the
    backend claimed (false claims are dropped and named in the note), CPU time; the caption says
    whether the answer is proven, only claimed, or neither. Laid out for the width it is drawn at."""
    return FinalTable(result)


NARROW = 125
"""Below this many columns the final table has no frame, the CPU column goes and the notes follow
the table as lines of their own, so that it fits an 80-column terminal with every number whole."""


def settled_hint(reason: str) -> str:
    """How to make the backends run on an instance the runner settled itself (a plugin author's
    smoke test on the bundled example), for the line that says none started."""
    if "enumeration" in reason:
        return "; to run them anyway: --no-exhaustive"
    if "presolve" in reason:
        return "; to run them anyway: --no-presolve"
    return ""


class FinalTable:
    """A rich renderable: :func:`build_final_table` at the width of the console it is printed on."""

    def __init__(self, result: PortfolioResult) -> None:
        self.result = result

    def __rich_console__(self, console: Console, options: Any) -> Any:
        narrow = options.max_width < NARROW
        runs = list(self.result.runs.values())
        if self.result.stopped_early and runs and all(r.status is Status.PENDING for r in runs):
            # settled by the runner before any backend started (a tiny instance enumerated)
            yield Text(f"backends: none started ({', '.join(sorted(r.name for r in runs))}); "
                       f"the runner settled the instance first"
                       + settled_hint(self.result.stopped_early), overflow="fold")
            return
        yield build_final_table(self.result, options.max_width)
        if narrow:
            for run in _order(self.result):
                if run.note:
                    yield Text(f"  {run.name}: {run.note}", overflow="fold")
        gaps = gap_over_time(self.result)
        if gaps:
            yield Text(gaps, overflow="fold")
        copies = copies_line(self.result)
        if copies:
            yield Text(copies, overflow="fold")


def copies_line(result: PortfolioResult) -> Optional[str]:
    """Why a backend appears more than once: the runner started copies of a randomized backend
    with seeds of their own on cores nobody else used. None without copies."""
    by_backend: dict[str, list[str]] = {}
    for run in result.runs.values():
        if run.name != run.backend:
            by_backend.setdefault(run.backend, []).append(f"{run.name} (seed {run.seed})")
    if not by_backend:
        return None
    parts = [f"{', '.join(names)}: copies of {backend}" for backend, names in by_backend.items()]
    return ("; ".join(parts) + ". A randomized backend gets another copy with a seed of its own "
            "when a core is idle (fewer backends than cores, or one that ended early); each copy "
            "is a row of its own.")


def gap_over_time(result: PortfolioResult, points: int = 6) -> Optional[str]:
    """One line: the certified gap (best verified cost against the best standing bound, in-run
    bounds included) at up to ``points`` moments where it changed, the last one always; None
    before any bound."""
    trace = [(t, c, b) for t, c, b in result.gap_trace() if c is not None and b is not None and c > 0]
    if not trace:
        return None
    step = max(1, -(-len(trace) // points))
    chosen = trace[::-1][::step][::-1]
    return "gap to bound over time: " + ", ".join(f"{format_gap_pct(c, b)} at {t:.1f} s" for t, c, b in chosen)


def format_gap_pct(cost: int, bound: int) -> str:
    """(cost - bound) / cost as a percentage, for the gap-over-time line."""
    gap = 100.0 * (cost - bound) / cost
    return f"{gap:.3g} %" if gap < 1000 else f"{gap:.0f} %"


def _order(result: PortfolioResult) -> list[BackendRun]:
    return sorted(result.runs.values(),
                  key=lambda r: (r.disqualified, r.best_cost is None, r.best_cost or 0, r.name))


def build_final_table(result: PortfolioResult, width: int = NARROW) -> Table:
    """The table itself (see :func:`final_table`); below ``NARROW`` columns without CPU and notes."""
    best = result.cost
    narrow = width < NARROW
    with_bound = any(run.lower_bound is not None for run in result.runs.values())
    style = (dict(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
             if narrow else {})
    table = Table(title=f"{result.problem}: backends", title_justify="left",
                  caption=result.proof or None, caption_justify="left", **style)
    columns = [("backend", "backend"), ("status", "status"), ("cost", "best cost"),
               ("gap", "behind best"),
               ("time", "time to best"), ("bound", "claimed bound"), ("cpu", "cpu"), ("note", "note")]
    if narrow:  # headers on two lines, so that they are no wider than the numbers below them
        columns = [(c, {"cost": "best\ncost", "time": "time to\nbest", "bound": "claimed\nbound",
                        "gap": "behind\nbest"}.get(c, h))
                   for c, h in columns if c not in ("cpu", "note")]
    shown = [c for c, _ in columns if not (c == "bound" and not with_bound)]
    split = "\n" if narrow else " "  # narrow: "(claim)" below the status
    rows = []
    for run in _order(result):
        rows.append({"backend": run.name + (" [bold]*[/]" if run.name == result.winner else ""),
                     "status": _status(run).replace(" (claim)", split + "(claim)"),
                     "cost": _cost(run.best_cost).replace(" + ", "\n+ "),  # "forbidden ×N" over the rest
                     "gap": _gap(run, best),
                     "time": "-" if run.time_to_best is None else f"{run.time_to_best:.2f} s",
                     "bound": _cost(run.lower_bound).replace(" + ", "\n+ "), "cpu": _cpu(run),
                     "note": run.note})

    def longest(col: str, words: bool) -> int:
        texts = [Text.from_markup(r[col]).plain for r in rows]
        parts = [w for t in texts for w in (t.split() if words else t.splitlines())]
        return max([len(p) for p in parts] or [1])

    for col, header in columns:
        if col not in shown:
            continue
        # Every number keeps all its digits (its column is at least as wide as its widest cell);
        # names and statuses wrap between words; the note takes the width that is left.
        if col in ("cost", "gap", "time", "bound", "cpu"):
            minimum = longest(col, words=False)
        elif col == "note":
            minimum = 12
        else:
            minimum = min(longest(col, words=True), 16)
        table.add_column(header, justify="left" if col in ("backend", "status", "note") else "right",
                         no_wrap=col in ("cost", "gap", "time", "bound", "cpu"), min_width=minimum,
                         overflow="fold", ratio=1 if col == "note" else None)
    for row in rows:
        table.add_row(*(row[c] for c in shown))
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
        if time.monotonic() - self.last >= self.interval:
            self.live.update(live_table(portfolio), refresh=True)
            self.last = time.monotonic()
