"""Deterministic mode's accounting for HiGHS: work units from counts HiGHS reports, never seconds.

HiGHS 1.16 has no deterministic time and no work limit of its own, and its MIP interrupt
callback (``kCallbackMipInterrupt``) reports the node count but not the simplex iterations (-1
there). What it does give, and what this module turns into units of :mod:`portfolio.work`:

* the callback itself, called at fixed points of the single-threaded search (the same calls in
  every run, measured: three runs of one model to a node limit, 120,477 simplex iterations each):
  at the root (node count 0), where it comes once per separation round or so,
  ``ROOT_UNITS_PER_CALLBACK``; in the tree ``UNITS_PER_CALLBACK`` plus ``UNITS_PER_NODE`` per
  node since the last one. The solve is interrupted at the first call where the limit is spent,
  and ``mip_max_nodes`` caps the nodes the limit can pay for;
* the root's first LP, with no callback inside (5 s of CPU on a generated 150-node model with
  dense memory): charged before the run, ``ROOT_UNITS_PER_NONZERO`` per non-zero of the model,
  and a run whose root the limit cannot pay is not started;
* after the run, its simplex iterations (``simplex_iteration_count``, exact once HiGHS returns):
  whatever the root charge, ``UNITS_PER_LP_ITERATION`` per iteration and the nodes come to
  beyond what was charged is charged then, so a run that went past its estimate leaves less for
  the next phase.

All three are counts, so the same problem, seed, hint and limit give the same interrupts and the
same plan; the pace is coarse (a root round between two callbacks is not cut). The constants were
measured with ``time.process_time()`` on presolved B, G and A and generated instances
(docs/benchmarks/mip.md, "Work units"); a unit is about 1 ms of one core.
"""

from __future__ import annotations

from typing import Optional

from portfolio.exact import WorkLimit

ROOT_UNITS_PER_CALLBACK = 20.0
UNITS_PER_CALLBACK = 1.0
UNITS_PER_NODE = 2.0
UNITS_PER_LP_ITERATION = 0.06
ROOT_UNITS_PER_NONZERO = 0.008
BUILD_UNITS_PER_TERM = 0.0005
"""Work units per event (see the module docstring); the build is charged per term of the size
estimate (the exact model and the arrays, in Python and numpy)."""


class HighsPace:
    """One engine call's spending in deterministic mode (``work`` None: a timed run, free)."""

    def __init__(self, work: Optional[WorkLimit]) -> None:
        self.work = work
        self.out = False
        self.callbacks = 0      # MIP interrupt callbacks seen (all runs), for the statistics
        self._nodes = 0
        self._root = 0.0        # the current run's root charge
        self._charged = 0.0     # units charged during the current run, root included

    def spend(self, units: float) -> bool:
        """Spend ``units``; False (and ``out``) once the call's limit is spent."""
        if self.work is None:
            return True
        ok = self.work.spend(units)
        self.out |= not ok
        return ok

    def build(self, terms: int) -> bool:
        return self.spend(BUILD_UNITS_PER_TERM * terms)

    def node_cap(self) -> Optional[int]:
        """``mip_max_nodes`` for the next run: the nodes the units left can pay for."""
        if self.work is None:
            return None
        return max(1, int(self.work.left() / UNITS_PER_NODE))

    def start_run(self, nonzeros: int) -> bool:
        """Charge a run's root by the model's size; False when the limit cannot pay it (do not
        run: the call is over)."""
        self._nodes, self._charged, self._root = 0, 0.0, 0.0
        if self.work is None:
            return True
        root = ROOT_UNITS_PER_NONZERO * nonzeros
        if self.work.left() < root:
            self.out = True
            return False
        self._root = self._charged = root
        self.spend(root)   # a root that spends the last unit still runs: the next callback stops it
        return True

    def on_callback(self, nodes: int) -> bool:
        """A MIP interrupt callback with HiGHS's node count; False: interrupt now."""
        self.callbacks += 1
        if self.work is None:
            return True
        if self.out:
            return False
        units = (ROOT_UNITS_PER_CALLBACK if nodes == 0 else
                 UNITS_PER_CALLBACK + UNITS_PER_NODE * max(0, nodes - self._nodes))
        self._nodes = max(self._nodes, nodes)
        self._charged += units
        return self.spend(units)

    def end_run(self, iterations: int, nodes: int) -> None:
        """Charge what the run's counts come to beyond what was charged while it ran."""
        if self.work is None:
            return
        total = (self._root + UNITS_PER_LP_ITERATION * max(0, iterations)
                 + UNITS_PER_NODE * max(0, nodes))
        if total > self._charged:
            self.spend(total - self._charged)
