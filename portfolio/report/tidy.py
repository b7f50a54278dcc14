"""One row per task, one column per fact: the tidy CSV (``portfolio report RUN --csv FILE``).

The leaderboard's CSV (``--format csv``) has one row per configuration and columns per instance, to
paste; this one is for pandas, R or a spreadsheet's pivot table. Scores are the leaderboard's (the
contest's ``min cost / cost`` over the rows compared, with ``--at`` the rescored rows'), so the
two agree.
"""

from __future__ import annotations

import csv
import io
from typing import Optional

from .anytime import primal_integral, time_to_proof, time_to_target
from .leaderboard import Leaderboard, points
from .machine import held_at_deadline, late_by, starved_row

COLUMNS = ("run", "instance", "configuration", "backends", "seed", "repeat", "status", "cost",
           "score", "vs_best_known", "time_limit", "elapsed", "time_to_best", "time_to_proof",
           "time_to_target", "primal_integral", "lower_bound", "gap", "winner", "proof",
           "engine_versions", "machine", "cores", "cpu_seconds", "cpu_due", "cpu_share",
           "load_start", "load_end", "starved", "late_by", "held_at_deadline", "error")
"""The tidy CSV's columns, in order (docs/bench.md describes each)."""

ENGINES = ("ortools", "python-sat", "pytoulbar2", "numba", "numpy")


def _engines(row: dict) -> str:
    """``name=version`` pairs: the engines the run declared, else the recorded package versions."""
    found = row.get("engines") or {k: v for k, v in (row.get("versions") or {}).items()
                                   if k in ENGINES}
    return ";".join(f"{k}={v}" for k, v in sorted(found.items()))


def _num(value: Optional[float], digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def _cpu(row: dict) -> dict:
    """The CPU its backends got against their due, the load, and a late answer's plan in time
    (empty for a row from before these were recorded)."""
    cpu = row.get("cpu") or {}
    held, late = held_at_deadline(row), late_by(row)
    return {**{k: "" if cpu.get(k) is None else _num(cpu[k], 3)
               for k in ("cores", "cpu_seconds", "cpu_due", "cpu_share", "load_start", "load_end")},
            "starved": "yes" if starved_row(row) else "",
            "late_by": _num(late, 3), "held_at_deadline": "" if held is None else held}


def task_rows(board: Leaderboard, target: Optional[float] = None) -> list[dict]:
    """The tidy rows of a board's runs: one per task.

    ``target``: a ratio to the best known (else the best in the report); ``time_to_target`` is when
    the task first held a plan within it (``1.01``: within 1 %).
    """
    infos = {i.name: i for i in board.instances}
    out = []
    for run in board.run_data:
        for row in run.rows:
            info = infos.get(row["instance"])
            if info is None:   # left out (not a contest benchmark with --reference contest)
                continue
            ok = bool(row.get("feasible")) and row.get("cost") is not None and row.get("status") not in (
                "error", "crashed", "timeout", "late")
            cost = int(row["cost"]) if ok else None
            best = info.best_known if info.best_known is not None else info.min_cost
            lb = row.get("lower_bound")
            machine = row.get("machine") or {}
            reach = None
            if target is not None and best is not None:
                reach = time_to_target(row, best * target)
            out.append({
                "run": run.name, "instance": row["instance"], "configuration": row["configuration"],
                "backends": "+".join(row.get("backends") or []), "seed": row.get("seed", 0),
                "repeat": row.get("repeat", 0), "status": row.get("status"),
                "cost": "" if cost is None else cost,
                "score": _num(points(info.min_cost, cost), 6),
                "vs_best_known": "" if info.best_known is None else _num(points(info.best_known, cost), 6),
                "time_limit": _num(row.get("time_limit"), 3), "elapsed": _num(row.get("elapsed"), 3),
                "time_to_best": _num(row.get("time_to_best") if ok else None),
                "time_to_proof": _num(time_to_proof(row)),
                "time_to_target": _num(reach),
                "primal_integral": _num(primal_integral(row, best) if best is not None else None),
                "lower_bound": "" if lb is None else int(lb),
                "gap": "" if cost is None or lb is None or cost <= 0 else _num((cost - int(lb)) / cost, 8),
                "winner": row.get("winner") or "", "proof": row.get("proof") or "",
                "engine_versions": _engines(row),
                "machine": f"{machine.get('cpu_count', '?')} cpus, {machine.get('host', '?')}",
                **_cpu(row),
                "error": (str(row.get("error") or "").strip().splitlines() or [""])[0],
            })
    return out


def render_tidy_csv(board: Leaderboard, target: Optional[float] = None) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(task_rows(board, target))
    return buf.getvalue()
