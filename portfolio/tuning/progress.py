"""The live view of a tune on stderr: trials done, the incumbent and its score against the
default's, time left, and what is running; one plain line per decided trial when stderr is not a
terminal (nohup, tee, a CI log), as ``portfolio bench`` does."""

from __future__ import annotations

import time
from typing import Any, Optional

from ..report.tune_score import Pair
from .race import few_pairs_note


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(max(0.0, seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class TuneProgress:
    """Told by the tuner (:class:`portfolio.tuning.loop.Progress`); a context manager."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.lines = not console.is_terminal
        self.live: Any = None
        self.tuner: Any = None
        self.started = time.monotonic()
        self.session_trials = 0
        self.now = ""
        self.last = ""

    def __enter__(self) -> "TuneProgress":
        if not self.lines:
            from rich.live import Live

            self.live = Live(self._render(), console=self.console, refresh_per_second=2,
                             transient=False, get_renderable=self._render)
            self.live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.stop()

    def opened(self, resolved: Any, tuner: Any) -> None:
        self.tuner = tuner
        s = resolved.settings
        budget = (f"{resolved.trials} trials" if resolved.trials is not None
                  else f"{s.hours:g} h")
        done = len(tuner.records)
        text = (f"tune: {len(resolved.pairs)} runs per configuration "
                f"({', '.join(p.label for p in resolved.pairs)}), {budget}, "
                f"{resolved.space.dimensions()} dimensions"
                + (f"; resumed with {done} trial(s) done" if done else ""))
        self.console.print(text, highlight=False, soft_wrap=True)
        for note in resolved.space.notes:   # what stays at its default and why, ranges clipped
            self.console.print(f"  {note}", highlight=False, soft_wrap=True, style="dim")
        few = few_pairs_note(len(resolved.pairs))
        if few:
            self.console.print(f"[yellow]note:[/] {few}", highlight=False, soft_wrap=True)

    # ---------------------------------------------------------------------------- told
    def phase(self, text: str) -> None:
        if self.lines:
            self.console.print(f"tune: {text}", highlight=False)
        self.now = text

    def evaluated(self, name: str, pair: Pair, row: dict) -> None:
        cost = row.get("cost")
        self.now = (f"{name} on {pair.label}: {row.get('status')}"
                    + ("" if cost is None else f" {cost:,}"))

    def decided(self, record: dict, tuner: Any) -> None:
        self.session_trials += 1
        self.last = self._trial_text(record)
        if self.lines:
            self.console.print(self._head() + ": " + self.last, highlight=False, soft_wrap=True)

    # -------------------------------------------------------------------------- figures
    def _left(self) -> Optional[float]:
        t = self.tuner
        if t is None:
            return None
        if t.r.trials is None:
            return (t.r.settings.hours or 0.0) * 3600.0 - t.elapsed()
        if not self.session_trials:
            return None
        per = (time.monotonic() - self.started) / self.session_trials
        return per * max(0, t.r.trials - len(t.records))

    def _head(self) -> str:
        t = self.tuner
        done = 0 if t is None else len(t.records)
        total = "?" if t is None else (t.r.trials if t.r.trials is not None else "-")
        left = self._left()
        return (f"[{done}/{total}] {_clock(time.monotonic() - self.started)} elapsed"
                + ("" if left is None else f", {_clock(left)} left"))

    def _incumbent(self) -> str:
        t = self.tuner
        if t is None or 0 not in t.costs:
            return "incumbent: - (the default runs first)"
        best = t.incumbent()
        score, default = t.score(best), t.score(0)
        return (f"incumbent t{best:04d}: {score:.4f}"
                + ("" if best == 0 else f" (default {default:.4f})"))

    def _trial_text(self, record: dict) -> str:
        what = ("complete" if record["state"] == "complete"
                else f"dropped after {record['pairs']}/{len(self.tuner.pairs)} runs")
        value = record.get("value")
        return (f"{record['name']} {what}, score {value:.4f}; {self._incumbent()}"
                if value is not None else f"{record['name']} {what}")

    def _render(self) -> Any:
        from rich.table import Table

        table = Table.grid(padding=(0, 1))
        table.add_row("[bold]tune[/]", self._head())
        table.add_row("", self._incumbent())
        if self.last:
            table.add_row("last", self.last)
        if self.now:
            table.add_row("now", self.now)
        return table
