"""What reading a file of any format gives: the problem, and how its plans and costs map back.

Every reader registered in :mod:`.formats` returns a :class:`Conversion`, so the API and the CLI
treat all formats alike: they solve ``problem``, give plans back through ``expand`` and costs
through ``request_cost``, and print ``notes``; ``in_file_terms`` says whether results are given in
the file's own terms (its node order and cost units), which the CLI shows as a ``request`` entry.
Every message and document that names a node or an edge names it through ``naming``
(:class:`~.naming.NodeNaming`): in the file's numbering, with its instruction name when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..evaluate import SolutionError, as_plan
from ..problem import Problem
from .naming import NodeNaming


@dataclass(frozen=True)
class Conversion:
    """A problem read from a file, and how its plans and costs map back to the file.

    ``node_of[i]`` is the problem node of the file's node ``i`` (a request's followers share their
    leader's). Problem costs are file costs times ``cost_scale``, rounded; for every plan
    ``|problem cost / cost_scale - file cost| <= cost_error_bound``. ``cost_shift`` (scaled, <= 0)
    is the constant moved out of negative edge tables; it is in ``problem.cost_offset``. ``notes``
    say what the conversion folded, rounded, shifted or skipped. ``foreign``: the file is another
    tool's problem (an XLA request), whose results are reported in its own terms. ``hint``: a
    full, valid plan the file suggests (a request's ``s_hint``), as a plan of the problem.
    ``names``: one distinct name per node of the file (a request's ``instruction_names``), by
    which a re-solve maps a previous plan. ``naming``: how messages name the problem's nodes,
    intervals and edges in the file's terms (built from ``node_of`` and ``names`` when the reader
    gives none: then a folded node's intervals are reported as its leader's).
    """

    problem: Problem
    node_of: np.ndarray
    cost_scale: float = 1.0
    cost_error_bound: float = 0.0
    cost_shift: int = 0
    notes: tuple[str, ...] = ()
    foreign: bool = False
    hint: Optional[np.ndarray] = field(default=None, compare=False)
    names: Optional[tuple[str, ...]] = field(default=None, compare=False)
    naming: Optional[NodeNaming] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.naming is None:
            object.__setattr__(self, "naming", NodeNaming(np.asarray(self.node_of, dtype=np.int64),
                                                          self.names))

    @staticmethod
    def identity(problem: Problem) -> Conversion:
        """A problem read as it is (this project's own formats): plans and costs map to themselves."""
        return Conversion(problem, np.arange(problem.num_nodes, dtype=np.int64))

    def with_notes(self, *notes: str) -> Conversion:
        """The same conversion with ``notes`` added."""
        return replace(self, notes=self.notes + tuple(notes)) if notes else self

    @property
    def in_file_terms(self) -> bool:
        """Whether results must be given in the file's own terms (the plan expanded, the cost in its
        units): another tool's file, a node map or a cost scale."""
        return self.foreign or self.cost_scale != 1.0 or self.maps_nodes

    @property
    def maps_nodes(self) -> bool:
        """Whether the file's nodes differ from the problem's (a plan needs ``expand``/``restrict``)."""
        n = self.problem.num_nodes
        return len(self.node_of) != n or not bool((self.node_of == np.arange(n)).all())

    def expand(self, plan: np.ndarray) -> np.ndarray:
        """A plan of the problem as a plan of the file, in the file's node order."""
        return np.asarray(plan, dtype=np.int64)[self.node_of]

    def restrict(self, plan: object) -> np.ndarray:
        """A plan of the file as a plan of the problem: every entry checked in the file's own
        numbering (an integer, in range for its node; followers agreeing with the node they
        follow), :class:`SolutionError` naming the first bad entry otherwise."""
        counts = self.problem.strategy_counts[self.node_of]
        naming = self.naming
        arr = as_plan(plan, counts, "the request" if self.foreign else "the file", naming.label)
        lead = naming.leaders
        out = arr[lead]
        bad = np.flatnonzero(out[self.node_of] != arr)
        if len(bad):
            i = int(bad[0])
            j = int(lead[self.node_of[i]])
            raise SolutionError(f"solution[{i}] = {arr[i]} differs from solution[{j}] = {arr[j]}: "
                                f"node {naming.label(i, follows=False)} follows node "
                                f"{naming.label(j)} and takes its strategy")
        return out

    def request_cost(self, cost: int) -> float:
        """A problem cost in the file's units."""
        return cost / self.cost_scale
