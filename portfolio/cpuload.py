"""Whether a run had the machine it was given: the CPU its backends got against what they were due,
and the machine's load, recorded with every bench row and `solve --json` (``cpu``).

Beside another load the same configuration can give very different plans (B at 3 s: 532,843 or
5,713,512 when its backends got 0.1-0.5 CPU seconds), so a result says how much of its share it
got. Everything comes from what the runner records already: each backend row's ``started``,
``finished`` (seconds since the run's start), ``cores`` (the cores it was given) and
``cpu_seconds`` (user + system CPU of its worker and what that reaped, from /proc), and the cores
the runner shared (``schedule.cores``).

**Due**: at each moment the backends running were given their cores, but never more than the
runner's ``cores`` in all, so the due is the integral over the run of ``min(cores, sum of the
live backends' cores)``: two backends on two cores for 3 s are due 6 CPU seconds; three on two
cores, two of them ending at 1.5 s, are due 2 x 1.5 + 1 x 1.5. A row whose CPU was not measured
(not Linux, a cluster shard's) counts in neither sum. **Starved**: the backends got less than
``STARVED_BELOW`` of their due (the machine was busy, or the runner's cores were oversubscribed
by something else). The load average is the machine's 1-minute one (``os.getloadavg``) when the
run starts and when it ends: the end's includes the run's own workers.

Floor 1: imports nothing of the project, so the bench task, the CLI and the report all read it.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional

STARVED_BELOW = 0.5
"""A row whose backends got less than this share of their due CPU is marked starved."""


def load_average() -> Optional[float]:
    """The machine's 1-minute load average now (None where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine_cores() -> int:
    """The machine's core count (all of them, whatever this process may use)."""
    return os.cpu_count() or 1


def _spans(runs: Iterable[Mapping], end: float) -> list[tuple[float, float, int, float]]:
    """(start, end, cores, cpu seconds) of each backend row whose CPU was measured."""
    out = []
    for run in runs:
        started, cpu = run.get("started"), run.get("cpu_seconds")
        if started is None or cpu is None:
            continue
        finished = run.get("finished")
        stop = end if finished is None else min(float(finished), end)
        out.append((float(started), max(float(started), stop), max(1, int(run.get("cores") or 1)),
                    float(cpu)))
    return out


def cpu_due(runs: Iterable[Mapping], cores: int, end: float) -> tuple[float, float]:
    """(CPU seconds got, CPU seconds due) of ``runs`` (backend rows as dicts) in a run that
    shared ``cores`` cores and ended at ``end`` seconds (a row still running counts to it)."""
    spans = _spans(runs, end)
    edges = sorted({t for s, e, _, _ in spans for t in (s, e)})
    due = 0.0
    for a, b in zip(edges, edges[1:]):
        given = sum(c for s, e, c, _ in spans if s <= a and e >= b)
        due += min(cores, given) * (b - a)
    return sum(cpu for _, _, _, cpu in spans), due


def cpu_record(runs: Iterable[Mapping], cores: int, elapsed: float,
               load_start: Optional[float] = None, load_end: Optional[float] = None) -> dict:
    """The ``cpu`` record of a run: ``cpu_seconds`` its backends got, ``cpu_due``, ``cpu_share``
    (got / due; None when nothing was measured), ``cores`` the runner shared, ``machine_cores``,
    and the load average at ``load_start`` and ``load_end``."""
    got, due = cpu_due(runs, cores, elapsed)
    return {"cpu_seconds": round(got, 3), "cpu_due": round(due, 3),
            "cpu_share": round(got / due, 3) if due > 0 else None, "cores": int(cores),
            "machine_cores": machine_cores(), "load_start": load_start, "load_end": load_end}


def starved(record: Optional[Mapping]) -> bool:
    """Whether a ``cpu`` record says the backends got less than ``STARVED_BELOW`` of their due."""
    share = (record or {}).get("cpu_share")
    return share is not None and share < STARVED_BELOW
