"""A toy file format added exactly as docs/architecture.md's recipe ("A file format") says: a module
with a reader that returns a ``Conversion`` and a writer, and one ``register(Format(...))`` call.

The format, ``toy-lines`` (``.toylines``): JSON lines. The first holds ``name`` and ``usage_limit``;
then one line per node, ``{"id": 3, "interval": [s, e], "costs": [...], "usages": [...]}``, in any
order, and one per edge, ``{"edge": [id, id], "costs": [...]}``. Plans of such a file are indexed by
node id: the problem keeps the nodes in line order, and the conversion maps plans back by id.
"""

from __future__ import annotations

import json

import numpy as np

from portfolio.adapters.conversion import Conversion
from portfolio.adapters.formats import Format, register
from portfolio.io import ProblemFormatError, parse_document, problem_to_dict, read_bytes


def read_toy(path, *, cost_scale: float = 1.0) -> Conversion:
    lines = [line for line in read_bytes(path).decode().splitlines() if line.strip()]
    try:
        rows = [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise ProblemFormatError(path, "", f"a line is not JSON ({exc.msg})") from None
    head, nodes = rows[0], [r for r in rows[1:] if "id" in r]
    ids = [r["id"] for r in nodes]
    if sorted(ids) != list(range(len(ids))):
        raise ProblemFormatError(path, "id", f"node ids {sorted(ids)} are not 0..{len(ids) - 1}")
    line_of = {node_id: k for k, node_id in enumerate(ids)}
    edges = [r for r in rows[1:] if "edge" in r]
    doc = {"problem": {"name": head.get("name", "toy"),
                       "nodes": {"intervals": [r["interval"] for r in nodes],
                                 "costs": [r["costs"] for r in nodes],
                                 "usages": [r["usages"] for r in nodes]},
                       "edges": {"nodes": [[line_of[i] for i in r["edge"]] for r in edges],
                                 "costs": [r["costs"] for r in edges]}}}
    if head.get("usage_limit") is not None:
        doc["problem"]["usage_limit"] = head["usage_limit"]
    problem = parse_document(doc, path)
    node_of = np.array([line_of[i] for i in range(len(ids))], dtype=np.int64)
    return Conversion(problem, node_of)


def write_toy(problem, path, *, cost_scale: float = 1.0) -> None:
    """Nodes written last to first, so that a file of ours has a node map to follow."""
    doc = problem_to_dict(problem)["problem"]
    nodes = doc["nodes"]
    out = [{"name": doc.get("name", ""), "usage_limit": doc.get("usage_limit")}]
    for i in reversed(range(len(nodes["costs"]))):
        out.append({"id": i, "interval": nodes["intervals"][i], "costs": nodes["costs"][i],
                    "usages": nodes["usages"][i]})
    out += [{"edge": e, "costs": c} for e, c in zip(doc["edges"]["nodes"], doc["edges"]["costs"])]
    with open(path, "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in out)


def misfit(problem) -> str:
    return "" if problem.is_contest_shaped else "only contest-shaped problems"


TOY = register(Format("toy-lines", (".toylines",), read=read_toy, write=write_toy, misfit=misfit,
                      description="JSON lines, nodes by id in any order (a test's toy)"))
