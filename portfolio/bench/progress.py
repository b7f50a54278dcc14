"""Live progress of a sweep on stderr (rich): tasks done / total, elapsed, ETA, best cost per instance."""

from __future__ import annotations

from typing import Sequence

FAILED_STATUSES = ("error", "crashed", "timeout")
"""Row statuses of tasks that did not complete normally (no solve result at all)."""


class SweepProgress:
    """Rich progress on stderr: tasks done / total, elapsed, ETA, and the best cost per instance.

    When stderr is not a terminal (nohup, tee, a CI log) a live display would print nothing until
    the end: there, each finished task prints one plain line instead."""

    def __init__(self, console, total: int, done: int, instances: Sequence[str]) -> None:
        import time

        self.console, self.total, self.done, self.skipped = console, total, done, done
        self.started = time.monotonic()
        self.lines = not console.is_terminal
        self.best: dict[str, tuple[int, str]] = {}
        self.failed = 0
        self.instances = list(instances)
        if self.lines:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        outer = self

        class _Progress(Progress):
            def get_renderables(self):
                yield self.make_tasks_table(self.tasks)
                yield outer.best_table()

        self.progress = _Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), TextColumn("{task.fields[failed]}"),
                                  console=console, transient=False)
        self.task_id = self.progress.add_task("bench", total=total, completed=done, failed="")

    def best_table(self):
        from rich.table import Table

        table = Table(show_header=True, header_style="dim", box=None, pad_edge=False)
        table.add_column("instance")
        table.add_column("best so far", justify="right")
        table.add_column("by")
        for name in self.instances:
            cost, who = self.best.get(name, (None, ""))
            table.add_row(name, "-" if cost is None else f"{cost:,}", who)
        return table

    def __enter__(self) -> "SweepProgress":
        if self.lines:
            self.console.print(f"bench: {self.total} task(s), {self.done} already done",
                               highlight=False)
        else:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if not self.lines:
            self.progress.stop()

    def note_best(self, row: dict) -> None:
        cost = row.get("cost")
        if cost is not None and row.get("feasible") and row.get("status") != "late":
            old = self.best.get(row.get("instance"))
            if old is None or cost < old[0]:
                self.best[row["instance"]] = (cost, row["configuration"])

    def update(self, row: dict) -> None:
        self.note_best(row)
        self.done += 1
        if row.get("status") in FAILED_STATUSES:
            self.failed += 1
        if self.lines:
            self.console.print(self.line(row), highlight=False, soft_wrap=True)
            return
        self.progress.update(self.task_id, advance=1,
                             failed=f"[red]{self.failed} failed[/]" if self.failed else "")


    def line(self, row: dict) -> str:
        """One finished task as a plain line: count, elapsed, ETA, the task, and the best so far."""
        import time

        elapsed = time.monotonic() - self.started
        ran = max(1, self.done - self.skipped)   # tasks this session ran
        eta = elapsed / ran * (self.total - self.done) if self.done < self.total else 0.0
        cost = row.get("cost")
        outcome = row.get("status", "?") + ("" if cost is None else f" {cost:,}")
        best = self.best.get(row.get("instance"))
        failed = f", {self.failed} failed" if self.failed else ""
        return (f"[{self.done}/{self.total}] {_clock(elapsed)} elapsed, ETA {_clock(eta)}{failed}: "
                f"{row.get('instance')} / {row.get('configuration')} s{row.get('seed', 0)}: {outcome}"
                + (f" (best {best[0]:,} by {best[1]})" if best else ""))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
