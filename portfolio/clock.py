"""When a command's time budget starts: at the program's own start, or at its process's creation.

The two differ when a shell runs earlier commands and then *execs* this program in the same process
(``bash -c "cd x && portfolio solve"``, ``exec portfolio ...`` in a script, the last command of a
``&&`` chain): Linux records a process's creation, not its last exec, so /proc's start time is then
the chain's. The program's start is estimated from two facts that survive exec: the CPU time of the
process (it carries over exec, and the shell before it used little of it while it waited for its
commands) and the interpreter's first import of ``portfolio`` (:data:`IMPORTED`).

* ``program`` (``portfolio solve``): the budget counts from the program's start, so 60 s means 60 s
  of this command whatever wrapper started it.
* ``process`` (``iopddl``): the budget counts from the process's creation, which is when a harness
  that timed the command started it, shell included: the contest's harness times the whole command.
"""

from __future__ import annotations

import os
import time
from typing import Optional

from . import IMPORTED, IMPORTED_CPU

CLOCKS = ("program", "process")

EXEC_GAP = 0.25
"""Below this gap between the process's creation and the program's estimated start, no exec chain is
assumed and the creation time (exact) is used: the estimate is late by the interpreter's I/O waits."""


def process_created() -> Optional[float]:
    """When this process was created (``time.monotonic()`` scale), from /proc; None elsewhere.

    Start tick against uptime, both since boot (psutil's ``create_time`` is not used: its boot-time
    estimate can be off by a second in containers)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        now = time.monotonic()
    except (OSError, ValueError, IndexError):
        return None
    age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    return now - age if 0 <= age < 30 * 86400 else None


def program_started(created: Optional[float]) -> float:
    """This program's start (``time.monotonic()`` scale): the interpreter's first import of
    ``portfolio`` less the CPU time used until then, or the process's creation when that is within
    :data:`EXEC_GAP` of it (then the process was started for this program). ``created``: the
    process's creation (:func:`process_created`), None where unknown."""
    estimate = IMPORTED - IMPORTED_CPU
    if created is None:
        return estimate
    return created if estimate - created < EXEC_GAP else estimate


def command_start(clock: str) -> tuple[float, float]:
    """(start of the budget, seconds the process existed before the program started) for ``clock``."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    created = process_created()
    program = program_started(created)
    before = 0.0 if created is None else max(0.0, program - created)
    if clock == "process" and created is not None:
        return created, before
    return program, before
