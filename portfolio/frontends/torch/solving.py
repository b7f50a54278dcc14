"""The solve: the built problem through :func:`portfolio.solve`, as any other problem.

Every option of ``portfolio.solve`` applies (backends, backend options, a config file,
deterministic mode, a Dask cluster). Two are the front end's own: a warm start may be an earlier
plan of the same model (a :class:`~.plan.ShardPlan`, its ``--json`` document or that document's
file), mapped by node name and placements onto this build; and a cluster solve, which needs a
file, gets the problem written to a temporary contest file with its node names. Without a warm
start the solve starts from the plan that replicates everything, so its answer is never worse
than that baseline (repaired first when it does not fit the budget).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from ...errors import ProblemError
from .build import Built
from .strategies import placements_text


def _doc_of(earlier: Any) -> Optional[dict]:
    """An earlier plan's document (``to_dict()``), from a plan, a dict or a file; None for a plain
    plan (a list of strategies, or a file holding one)."""
    if hasattr(earlier, "to_dict") and hasattr(earlier, "built"):
        return earlier.to_dict()
    if isinstance(earlier, dict):
        return earlier
    if isinstance(earlier, (str, os.PathLike)):
        try:
            doc = json.loads(Path(earlier).read_text())
        except (OSError, UnicodeDecodeError) as exc:
            raise ProblemError(f"warm start {os.fspath(earlier)}: cannot read: {exc}") from None
        except json.JSONDecodeError:
            return None
        return doc if isinstance(doc, dict) and "nodes" in doc else None
    return None


def map_warm_start(built: Built, earlier: Any) -> tuple[Any, Optional[dict]]:
    """An earlier plan of the same model as a plan of this build: each node found by name takes
    the option with the same placements (its output and inputs as text); any other node starts
    replicated and is left to the runner's repair. Returns (the plan or the argument unchanged when
    it is a plain plan, what the mapping did)."""
    doc = _doc_of(earlier)
    if doc is None:
        return earlier, None
    wanted = {n["name"]: n.get("output") for n in doc.get("nodes") or [] if isinstance(n, dict)}
    plan = built.replicated.copy()
    kept = 0
    for i, name in enumerate(built.names):
        want = wanted.get(name)
        if want is None:
            continue
        for k, out in enumerate(built.options[i].outputs):
            if placements_text(out) == want:
                plan[i] = k
                kept += 1
                break
    return [int(s) for s in plan], {"nodes": len(built.names), "kept": kept,
                                    "by": "node name and placements"}


def solve_built(built: Built, time_limit: float, warm_start: Any = None, **options: Any) -> Any:
    """:func:`portfolio.solve` on the build (see the module docstring); the
    :class:`~portfolio.api.solving.SolveResult` and the warm start's mapping."""
    from ...api import solve

    if warm_start is None:  # never worse than replicating everything (repaired when it does not fit)
        plan, mapping = [int(s) for s in built.replicated], None
    else:
        plan, mapping = map_warm_start(built, warm_start)
    if options.get("dask_scheduler") is not None or options.get("dask_workers") is not None:
        with tempfile.TemporaryDirectory(prefix="portfolio-shard-") as folder:
            path = Path(folder) / "model.json.gz"
            export_problem(built, path)
            return solve(str(path), time_limit=time_limit, warm_start=plan, **options), mapping
    return solve(built.conversion(), time_limit=time_limit, warm_start=plan, **options), mapping


def export_problem(built: Built, path: Any) -> None:
    """The problem in the contest's JSON with its node names (``node_names``), so that ``portfolio
    solve``, ``bench``, ``tune`` and ``tradeoff`` run it and name its nodes by module path."""
    from ...io import write_problem

    write_problem(built.problem, path, names=built.names)

