"""Live progress of a sweep on stderr (rich): tasks done / total, elapsed, ETA, best cost per instance."""

from __future__ import annotations

from typing import Sequence

FAILED_STATUSES = ("error", "crashed", "timeout")
"""Row statuses of tasks that did not complete normally (no solve result at all)."""


class SweepProgress:
    """Rich progress on stderr: tasks done / total, elapsed, ETA, and the best cost per instance."""

    def __init__(self, console, total: int, done: int, instances: Sequence[str]) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        outer = self

        class _Progress(Progress):
            def get_renderables(self):
                yield self.make_tasks_table(self.tasks)
                yield outer.best_table()

        self.best: dict[str, tuple[int, str]] = {}
        self.failed = 0
        self.instances = list(instances)
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
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def note_best(self, row: dict) -> None:
        cost = row.get("cost")
        if cost is not None and row.get("feasible") and row.get("status") != "late":
            old = self.best.get(row.get("instance"))
            if old is None or cost < old[0]:
                self.best[row["instance"]] = (cost, row["configuration"])

    def update(self, row: dict) -> None:
        self.note_best(row)
        if row.get("status") in FAILED_STATUSES:
            self.failed += 1
        self.progress.update(self.task_id, advance=1,
                             failed=f"[red]{self.failed} failed[/]" if self.failed else "")

