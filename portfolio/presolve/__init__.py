"""Exact presolve: a smaller instance plus the map back to the original (issue #6).

``presolve(problem, **switches)`` returns a :class:`Presolved` whose ``reduced`` problem is usually far
smaller (instance A: 34,932 nodes to a few hundred free ones) and whose ``expand`` maps every plan of the
reduced problem to a plan of the original:

* **costs**: ``evaluate(original, expand(x)).cost == evaluate(reduced, x).cost`` for every reduced
  plan ``x`` that chooses no forbidden entry; a reduced plan chooses a forbidden entry exactly when its
  expansion does (so both costs are at least 10**18 then);
* **memory**: ``evaluate(original, expand(x)).feasible == evaluate(reduced, x).feasible`` for every ``x``;
* **optimality**: every feasible original plan without forbidden choices that is optimal has an
  equally good counterpart in the reduced space, so an optimal reduced plan expands to an optimal one.

Why forbidden entries are "absorbing" rather than summed: a forbidden entry is exactly 10**18. Folding a
row minimum into a node cost, summing two parallel tables or taking a min-plus product would turn
``10**18 + c`` into a number that is no longer exactly 10**18, i.e. no longer *marked* forbidden.
Every reduction therefore keeps forbidden entries at exactly 10**18 (a sum containing one is 10**18),
which keeps the marker and loses only the meaningless finite remainder of plans that are not
solutions anyway.

The reductions (each a keyword switch, all on by default; see ``SWITCHES``):

``forbidden``        strategies of node cost 10**18 are removed (also those made forbidden by folding).
``arc_consistency``  a strategy with no allowed partner on some edge is removed, to a fixpoint (numba
                     AC-3); an emptied domain proves the instance infeasible.
``functional``       when every remaining strategy of ``a`` allows exactly one strategy of ``b`` on an
                     edge, ``b`` is folded into ``a``. All such arcs are merged in bulk: one root per
                     source strongly connected component of the arc digraph (a Kosaraju finish order),
                     every other node reached by a breadth-first search and mapped through the
                     composed maps; costs, intervals (usages mapped) and edges (rows permuted) move to
                     the root, edges inside a group fold into the root's costs.
``edge_tables``      parallel edges summed; exact row- then column-minimum folding into node costs;
                     edges left all-zero with no forbidden entry deleted.
``single``           single-strategy nodes folded into their neighbours' costs, their usage subtracted
                     from the capacity over their intervals, their cost moved into the offset.
``dominance``        a strategy no better than another in node cost, in usage on every (memory
                     relevant) owned interval and in every incident edge row (forbidden = +inf) is
                     removed; exact duplicates keep the lowest index.
``memory_free``      intervals whose usage is the same for every remaining strategy are moved into the
                     capacity profile; nodes then owning no relevant interval are eliminated when they
                     have at most two neighbours: degree 0 takes its cheapest strategy, degree 1 is
                     minimised into the neighbour's costs, degree 2 becomes an edge between its
                     neighbours (min-plus product).
``time_points``      only maximal-clique time segments whose worst case (maximum usages) can exceed the
                     capacity are kept; intervals touching none of them are dropped, and time is
                     renumbered so that reduced time ``t`` is the ``t``-th kept segment.
``memory_bounds``    a strategy is removed when, at some kept time, its usage above its interval's
                     least usage exceeds the slack left by every live interval at its least usage
                     (no feasible plan can use it); if that empties a domain, memory alone proves the
                     instance infeasible.

Cost arithmetic is int64 under a magnitude guard: when the finite costs are so large that folded
sums could reach 10**18 (never on contest data: its bound is ~10**14), the cost-combining reductions
switch themselves off and the report says so.

Layout (one module per job; ``pipeline`` runs the families in a loop until nothing changes):

``state``        the working instance (original ids, masked strategies, flat edge tables)
``consistency``  forbidden strategies and arc consistency (also used by the search kernels)
``merge``        functional merges and forest composition
``folding``      edge tables: parallel sums, row/column folding, zero edges
``dominance``    dominated and duplicate strategies
``memory``       memory and time analysis: constant/irrelevant intervals, kept time, memory bounds
``elimination``  fixing single-strategy nodes, memory-free elimination of degree 0-2 nodes
``mapping``      the reduced problem and :class:`Presolved` (``expand``/``restrict``/``project``)
``pipeline``     :func:`presolve`, :func:`warm_up`, the switches and counters
``jitlock``      machine-wide locks around compile stages (one process compiles, the others load)
The extended file format lives with the other formats in :mod:`portfolio.io` (re-exported here).
"""

from ..io import EXTENDED_FORMAT, problem_to_extended, read_extended, write_extended
from .mapping import Presolved
from .pipeline import COUNTERS, SWITCHES, presolve, warm_up

__all__ = ["COUNTERS", "EXTENDED_FORMAT", "Presolved", "SWITCHES", "presolve", "problem_to_extended",
           "read_extended", "warm_up", "write_extended"]
