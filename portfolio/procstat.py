"""What Linux's ``/proc/PID/stat`` says about a process's CPU time: the one reader the runner (a
worker's CPU seconds, its time slices) and the toulbar2 engine (its children's CPU-time limits)
share.

Why a floor-1 module of its own: the runner (floor 4) and ``toulbar2`` (floor 6, which may not
import the runner) both need it, and neither owns it.
"""

from __future__ import annotations

import os
from typing import Optional

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second, the unit of ``/proc/PID/stat``'s times."""


def cpu_seconds(pid: int, children: bool = False) -> Optional[float]:
    """CPU seconds (user + system) process ``pid`` has used, from ``/proc/PID/stat``; with
    ``children``, plus those of its children it has waited for (``cutime + cstime``). None when it
    cannot be read (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    try:   # the command name (field 2) may hold spaces and ')': fields count after the last ')'
        fields = raw[raw.rindex(b")") + 1:].split()
        used = fields[11:15] if children else fields[11:13]   # utime, stime[, cutime, cstime]
        if len(used) < (4 if children else 2):
            return None
        return sum(int(x) for x in used) / TICKS
    except ValueError:
        return None
