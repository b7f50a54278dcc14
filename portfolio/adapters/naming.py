"""How everything a user reads names nodes and edges: in the input file's own numbering.

A file's nodes and the solved problem's can differ. An XLA request's followers fold into their
leader (one problem node for several request nodes, owning each member's intervals with that
member's usages), and its alias pairs become extra edges after the request's own. The runner's
presolve renumbers again, but nothing a user reads is computed on the presolved problem: documents
are built on the problem as read, and :class:`NodeNaming` maps its nodes, intervals and edges back to
the file. It is the one place that does: the memory documents, ``portfolio evaluate``, ``info``,
``presolve`` and the plan errors all take it (docs/api.md, "Node numbers in messages").

The rule: a node is named by its index in the file, with its instruction name when the file has one
(``3 (big)``); a follower is named as itself, with the node whose strategy it takes
(``1 (follow; follows 0)``), and memory is reported per file node (a follower's usage is its own,
never summed into its leader's). Where a message is about a problem node as a whole (a folded
group: its cost, its domain), the group is named by its leader with its followers listed
(``0 (lead; followers 1)``). An edge is ``edge i`` of the file's edge list, an alias pair
``alias k`` of its alias list, each with its two file nodes. A contest file is the identity: its
numbers are the problem's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..problem import Problem


@dataclass(frozen=True, eq=False)
class NodeNaming:
    """The map from a problem's nodes, intervals and edges to the file it was read from.

    ``node_of[f]``: the problem node of file node ``f``. ``names``: one name per file node ('' for
    none), or None. ``interval_source[j]``: the file node whose liveness problem interval ``j`` is
    (None: the problem node's leader). ``edge_source[e]``: problem edge ``e`` is the file's edge
    ``edge_source[e]`` when >= 0, its alias pair ``-1 - edge_source[e]`` otherwise (None: edge ``e``
    is the file's edge ``e``); ``edge_ends[e]``: its two file nodes.
    """

    node_of: np.ndarray
    names: Optional[tuple[str, ...]] = None
    interval_source: Optional[np.ndarray] = None
    edge_source: Optional[np.ndarray] = None
    edge_ends: Optional[np.ndarray] = None

    @staticmethod
    def identity(num_nodes: int) -> NodeNaming:
        """A file whose nodes are the problem's (this project's own formats)."""
        return NodeNaming(np.arange(num_nodes, dtype=np.int64))

    # ------------------------------------------------------------------------------- the node map
    @property
    def file_nodes(self) -> int:
        """Nodes in the file."""
        return len(self.node_of)

    @property
    def is_identity(self) -> bool:
        """The file's numbering is the problem's and no node has a name: messages stay as they are."""
        n = len(self.node_of)
        return self.names is None and self.edge_source is None and \
            bool((self.node_of == np.arange(n)).all())

    def leader(self, v: int) -> int:
        """The file node leading problem node ``v`` (its group's least index)."""
        return int(self.leaders[v])

    @property
    def leaders(self) -> np.ndarray:
        """Per problem node, the file node leading it (its group's least index)."""
        cached = self.__dict__.get("_leader_cache")
        if cached is None:
            size = int(self.node_of.max()) + 1 if len(self.node_of) else 0
            cached = np.full(size, -1, dtype=np.int64)
            order = np.arange(len(self.node_of), dtype=np.int64)
            cached[self.node_of[::-1]] = order[::-1]     # the least file index wins
            object.__setattr__(self, "_leader_cache", cached)
        return cached

    def follows(self, f: int) -> Optional[int]:
        """The file node whose strategy file node ``f`` takes, or None when ``f`` leads its group."""
        lead = int(self.leaders[self.node_of[f]])
        return None if lead == f else lead

    def followers(self, v: int) -> list[int]:
        """The file nodes folded into problem node ``v`` besides its leader."""
        lead = self.leader(v)
        return [int(f) for f in np.flatnonzero(self.node_of == v) if f != lead]

    def name(self, f: int) -> Optional[str]:
        """File node ``f``'s instruction name, or None."""
        return (self.names[f] or None) if self.names is not None else None

    # ------------------------------------------------------------------------------- as documents
    def node(self, f: int) -> dict:
        """A file node as documents give it: ``node`` (its index in the file), ``name`` (None when
        the file has none) and ``follows`` (the node whose strategy it takes; None for a leader)."""
        return {"node": int(f), "name": self.name(f), "follows": self.follows(f)}

    def group(self, v: int) -> dict:
        """A problem node as a group of file nodes: its leader (as :meth:`node`) and ``followers``."""
        return {**self.node(self.leader(v)), "followers": self.followers(v)}

    def edge(self, e: int, problem: Optional[Problem] = None) -> dict:
        """Problem edge ``e`` in the file's terms: ``kind`` (``edge`` or ``alias``), ``index`` in
        that list of the file, ``nodes`` (file nodes; for a file whose edges are the problem's,
        the problem's nodes of the edge when ``problem`` is given, else None)."""
        if self.edge_source is None:
            nodes = None if problem is None else [int(v) for v in problem.nodes_of_edge(e)]
            return {"kind": "edge", "index": int(e), "nodes": nodes}
        src = int(self.edge_source[e])
        kind, index = ("edge", src) if src >= 0 else ("alias", -1 - src)
        return {"kind": kind, "index": index, "nodes": [int(x) for x in self.edge_ends[e]]}

    # ------------------------------------------------------------------------------- as text
    def label(self, f: int, follows: bool = True) -> str:
        """``3 (big)``, ``1 (follow; follows 0)``, ``1 (follows 0)`` or ``3`` (``follows=False``:
        without the node it follows)."""
        doc = self.node(f)
        return entry_label(doc if follows else {**doc, "follows": None})

    def group_label(self, v: int) -> str:
        """Problem node ``v`` as its leader and followers: ``0 (lead; followers 1, 5)``."""
        return entry_label(self.group(v))

    def edge_label(self, e: int) -> str:
        """``edge 2 (nodes 0 and 3)``, ``alias 1 (nodes 1 and 2)``, or ``edge 2`` for a contest file."""
        doc = self.edge(e)
        if doc["nodes"] is None:
            return f"edge {e}"
        a, b = (self.label(f, follows=False) for f in doc["nodes"])
        return f"{doc['kind']} {doc['index']} (nodes {a} and {b})"

    _NODE = re.compile(r"\b(nodes?) (\d+)(?: and (\d+))?")
    _EDGE = re.compile(r"\bedge (\d+)")

    def rewrite(self, text: Optional[str], num_nodes: Optional[int] = None) -> Optional[str]:
        """A message of a lower layer about the problem as read (``node 4``, ``nodes 2 and 7``,
        ``edge 3``: the vocabulary of presolve's and the memory bound's reasons) in the file's terms.
        Numbers that name no problem node (``num_nodes``) are left alone."""
        if text is None or self.is_identity:
            return text
        limit = len(self.leaders) if num_nodes is None else num_nodes
        edges = 0 if self.edge_source is None else len(self.edge_source)

        def node(m: re.Match) -> str:
            ids = [int(x) for x in m.groups()[1:] if x is not None]
            if any(v >= limit for v in ids):
                return m.group(0)
            return f"{m.group(1)} " + " and ".join(self.group_label(v) for v in ids)

        def edge(m: re.Match) -> str:
            e = int(m.group(1))
            return self.edge_label(e) if e < edges else m.group(0)

        return self._EDGE.sub(edge, self._NODE.sub(node, text))

    # ------------------------------------------------------------------------------- usage
    def interval_owners(self, problem: Problem, intervals: np.ndarray) -> np.ndarray:
        """The file node each of ``intervals`` (problem intervals) belongs to."""
        if self.interval_source is not None:
            return self.interval_source[intervals]
        return self.leaders[problem.interval_node[intervals]]

    def usage_by_node(self, problem: Problem, usage: np.ndarray, k: int) -> dict[int, int]:
        """Per file node live at ``problem.time_points[k]``, the exact sum of ``usage[j]`` over its
        live intervals (a follower's own, not its leader's)."""
        live = problem.live_intervals_at(k)
        by_node: dict[int, int] = {}
        for f, u in zip(self.interval_owners(problem, live).tolist(), usage[live].tolist()):
            by_node[f] = by_node.get(f, 0) + int(u)
        return by_node


def entry_label(doc: dict) -> str:
    """A node as documents give it (:meth:`NodeNaming.node` or ``group``) as text: its index, then
    its name, the node it follows and its followers, when it has them: ``0 (lead; followers 1)``."""
    extra = [x for x in (doc.get("name"),) if x]
    if doc.get("follows") is not None:
        extra.append(f"follows {doc['follows']}")
    more = doc.get("followers") or []
    if more:
        extra.append(f"follower{'s' if len(more) > 1 else ''} {', '.join(map(str, more))}")
    return f"{doc['node']} ({'; '.join(extra)})" if extra else str(doc["node"])


def ranked(by_node: dict[int, int], top: int) -> list[tuple[int, int]]:
    """The ``top`` largest ``(node, value)`` pairs, largest first, ties by node."""
    return sorted(by_node.items(), key=lambda item: (-item[1], item[0]))[:top]


def usage_text(naming: NodeNaming, entries: list[tuple[int, int]]) -> str:
    """``nodes 3 (big): 100, 0 (lead): 5``."""
    return "nodes " + ", ".join(f"{naming.label(f)}: {u:,}" for f, u in entries)
