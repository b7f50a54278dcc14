"""iopddl-portfolio: a solver portfolio for the IOPDDL intra-operator parallelism problem.

The first lines take the moment the interpreter imports this package, with the CPU time used by then:
:mod:`portfolio.clock` estimates from them when the command started (before any heavy import).
"""

import time as _time

IMPORTED = _time.monotonic()
"""``time.monotonic()`` at the first import of this package."""

IMPORTED_CPU = _time.process_time()
"""CPU seconds this process had used by then (they carry over an exec)."""
