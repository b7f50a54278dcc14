"""A tradeoff saved like a bench run: ``runs/NAME/results.jsonl`` (one row per budget, the fields
``portfolio report`` reads, plus the tradeoff's own: ``budget``, ``peak``, ``found_at``, ``source``,
``run_cost``, ``own_limit`` and the curve's), ``meta.json`` (``kind: "tradeoff"``, which
``portfolio report`` reads to show the tradeoff table rather than a leaderboard) and
``solutions/``. A folder that exists is refused (nothing a user saved is overwritten), so every
tradeoff's plots are its own."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Optional

from ..errors import ProblemError

CURVE_FIELDS = ("multiple", "cost_vs_limit_percent", "saved", "saved_per_gib",
                "saved_per_limit_percent")
"""The curve's fields of a row (:func:`portfolio.report.tradeoff.curve_fields`), saved as they were
printed; ``portfolio report`` computes them again from the budgets and costs."""

PROOF_FIELDS = ("bound_by", "bound_exact", "claim", "false_bounds", "refuted")
"""Who the row's bound is from and whether it can prove, a bound that meets the cost without
proving it, the bounds a cheaper plan contradicts, a refuted infeasibility (``TradeoffPoint``)."""


def default_name(problem: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in problem)
    return f"tradeoff-{safe}-{stamp}"


def rows_of(doc: dict, path: str, seed: int) -> list[dict]:
    """Bench-shaped rows of a tradeoff document (``Tradeoff.to_dict`` with plans mapped back)."""
    rows = []
    for r in doc["rows"]:
        rows.append({"instance": doc["problem"], "path": path,
                     "configuration": f"budget {r['budget']}", "backends": [], "seed": seed,
                     "repeat": 0, "time_limit": r["seconds"], "status": r["status"],
                     "cost": r["cost"], "feasible": r["plan"] is not None,
                     "elapsed": r["seconds"], "time_to_best": None, "lower_bound": r["bound"],
                     "winner": None, "incumbents": [], "backend_runs": [], "kind": "tradeoff",
                     "budget": r["budget"], "peak": r["peak"], "found_at": r["found_at"],
                     "source": r.get("source"), "run_cost": r.get("run_cost"),
                     "own_limit": r["own_limit"], "proof": r["proof"],
                     **{k: r.get(k) for k in PROOF_FIELDS},
                     **{k: r.get(k) for k in CURVE_FIELDS}})
    return rows


def save_tradeoff(doc: dict, path: str, seed: int, runs_dir: str | Path = "runs",
                  name: Optional[str] = None, command: Optional[list[str]] = None) -> Path:
    """Write the tradeoff under ``runs_dir/NAME`` (see the module); returns the folder."""
    from ..bench.storage import META, RESULTS, solution_file, write_json_atomic

    folder = Path(runs_dir) / (name or default_name(doc["problem"]))
    if folder.exists() and any(folder.iterdir()):
        raise ProblemError(f"{folder}: the run folder already exists; give another --name")
    folder.mkdir(parents=True, exist_ok=True)
    rows = rows_of(doc, path, seed)
    with (folder / RESULTS).open("w") as f:
        for row, r in zip(rows, doc["rows"]):
            f.write(json.dumps(row) + "\n")
            if r["plan"] is not None:
                target = solution_file(folder, row)
                target.parent.mkdir(exist_ok=True)
                target.write_text(json.dumps(r["plan"]) + "\n")
    write_json_atomic(folder / META, {"name": folder.name, "kind": "tradeoff",
                                      "instance": doc["problem"], "path": path,
                                      "limit": doc["limit"], "time_limit": doc["time_limit"],
                                      "least_peak_bound": doc["least_peak_bound"]["value"],
                                      "notes": list(doc.get("notes") or []),
                                      "command": command or [],
                                      "created": _dt.datetime.now().isoformat(timespec="seconds")})
    return folder
