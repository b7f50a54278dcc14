"""What a result row says about the machine and the clock, beyond its cost: rows starved of CPU
(their backends got less than half of what they were due: :mod:`portfolio.cpuload`), and late
rows that held a verified plan at the deadline.

A starved cell is marked ``MARK`` in every view (wide, compact, markdown; a count in the CSV and
JSON), and one note under the table names the tasks, what they got and the load. A late row scores
0, as the contest scores an answer that comes after its limit, but when it held a verified plan at
the deadline a note says so, with that plan's cost and how late the answer came: the run had an
answer in time, and only its reply was late.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from ..cpuload import STARVED_BELOW, starved
from .anytime import cost_at

MARK = "†"
"""The mark of a cell with a starved task."""

SHOWN = 4
"""Tasks named in one note; the rest are counted."""


def task_name(row: dict) -> str:
    return f"{row['instance']}/{row['configuration']} s{row.get('seed', 0)}"


def starved_row(row: Optional[dict]) -> bool:
    """Whether a result row's backends got less than ``STARVED_BELOW`` of their due CPU."""
    return starved((row or {}).get("cpu"))


def late_by(row: dict) -> Optional[float]:
    """Seconds a late row answered after its limit (None for a row on time)."""
    limit, elapsed = row.get("time_limit"), row.get("elapsed")
    if row.get("status") != "late" or limit is None or elapsed is None:
        return None
    return round(max(0.0, float(elapsed) - float(limit)), 3)


def held_at_deadline(row: dict) -> Optional[int]:
    """The cost of the verified plan a late row held at its deadline (None: none, or not late)."""
    if late_by(row) is None:
        return None
    return cost_at(row, float(row["time_limit"]))


def _more(names: Sequence[str]) -> str:
    shown = "; ".join(names[:SHOWN])
    return shown + (f"; and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _load(cpu: dict) -> str:
    start, end = cpu.get("load_start"), cpu.get("load_end")
    if start is None and end is None:
        return ""
    text = lambda x: "?" if x is None else f"{x:g}"   # noqa: E731
    return f", load {text(start)} -> {text(end)} on {cpu.get('machine_cores', '?')} cores"


def starved_notes(rows: Iterable[dict]) -> list[str]:
    """One note naming the starved tasks: what their backends got of their due, and the load."""
    hit = [row for row in rows if starved_row(row)]
    if not hit:
        return []
    names = [f"{task_name(r)}: {r['cpu']['cpu_seconds']:g} of {r['cpu']['cpu_due']:g} CPU s"
             f"{_load(r['cpu'])}" for r in hit]
    return [f"{MARK} starved: {len(hit)} task(s) whose backends got less than "
            f"{STARVED_BELOW:.0%} of the CPU they were due (the cores the runner gave them over "
            f"the time they ran): the machine was busy, so their costs may be worse than the "
            f"configuration's: {_more(names)}"]


def late_notes(rows: Iterable[dict]) -> list[str]:
    """One note naming the late tasks that held a verified plan at their deadline."""
    names = []
    for row in rows:
        held = held_at_deadline(row)
        if held is not None:
            names.append(f"{task_name(row)}: held a verified plan of cost {held:,} at the "
                         f"deadline and answered late by {late_by(row):.2f} s")
    if not names:
        return []
    return [f"late with a plan in time: {_more(names)}; scored 0, as the contest scores a late "
            f"answer (the plan held at the deadline would have counted had the answer come then)"]
