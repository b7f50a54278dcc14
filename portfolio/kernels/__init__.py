"""numba-compiled hot loops shared by backends.

Modules, bottom up:

* :mod:`.model` - the flat kernel view of a Problem (penalised costs, oriented incidences, usage
  pieces, arc-consistent domains);
* :mod:`.segtree` - range-add / range-max tree over the compressed time points (memory checks);
* :mod:`.incremental` - the search state and its exact incremental evaluation (scratch arrays,
  cost deltas, the load tree's memory checks, the change log, the random generator);
* :mod:`.moves` - the moves (single node, tree-DP block, cascade);
* :mod:`.reduce` - the reduced view: chains tied by forbidden entries become one node, merged by
  the presolve's own reductions (:mod:`portfolio.presolve`; nothing is implemented twice);
* :mod:`.trws` - TRW-S message passing on the memory-priced, unconstrained problem;
* :mod:`.search` - worklist descent, iterated local search, greedy repair and buying;
* :mod:`.engine` - Python drivers used by the ``greedy`` and ``localsearch`` backends, and
  :class:`~.engine.Repairer` (repair and polish of any plan) for the toulbar2 engine;
* :mod:`.backend` - their base class :class:`~.backend.KernelBackend` (light: no numba at import);
* :mod:`.units` - deterministic mode's work units: the drivers' counts (evaluations, TRW-S sweeps,
  sizes) turned into units by calibrated constants; they are spent through
  :class:`portfolio.work.Meter`, the pacing primitive every deterministic backend shares;
* :mod:`.steps` - the Polyak step rule and the dot products both subgradient loops share;
* :mod:`.bound` - certified Lagrangian lower bounds (TRW-S star bound, directed rounding) for
  the ``bound`` backend; :mod:`.reparam` - the TRW-S messages as integer shifts, for a solver of
  the priced problem outside the kernels (toulbar2's priced bound).

* :mod:`.jit` - the decorators: ``kernel`` (an entry point) and ``inner`` (called only from
  kernels, no CPython wrapper), both ``njit(cache=True)`` with one specialisation per argument types.

The first process compiles the kernels in stages (``engine.warmup``: about 55 CPU seconds in all,
19 for the greedy's; ``python benchmarks/compile.py`` shows where), under machine-wide locks so that
concurrent workers share the work; later processes load numba's on-disk cache in about a second.
"""
