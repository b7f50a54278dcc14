"""A tradeoff's curve read as a user decides a memory limit: what each step of memory buys.

From rows alone (``portfolio tradeoff --json`` or a tradeoff run saved under ``runs/``), so that
``portfolio tradeoff`` and ``portfolio report`` show the same table: each budget as a multiple of
the file's limit, its cost against the cost at the limit, and the *marginal price of memory*, the
cost saved per extra GiB (and per extra 1 % of the limit) from the previous budget with a plan.
A plan taken from a larger budget's run (the monotone rule) is marked, with what the budget's own
run found, so the two costs never disagree silently.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Optional, Sequence

from .leaderboard import ReportError, RunData, load_run

GIB = 2**30
"""Memory units are read as bytes (the contest's are): a GiB is 2**30 of them."""

UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def is_tradeoff(run: RunData) -> bool:
    """A run written by ``portfolio tradeoff`` (its ``meta.json``, or every row, says so)."""
    return run.meta.get("kind") == "tradeoff" or (
        bool(run.rows) and all(r.get("kind") == "tradeoff" for r in run.rows))


def memory_unit(values: Sequence[Optional[int]]) -> tuple[str, int]:
    """The binary unit to show memory in: the largest whose quarter the largest value reaches
    (``("byte", 1)`` for small problems, whose units are then shown as they are)."""
    top = max((v for v in values if v is not None), default=0)
    for name, size in UNITS:
        if top >= size / 4:
            return name, size
    return "byte", 1


def curve_fields(rows: Sequence[dict], limit: Optional[int]) -> list[dict]:
    """Copies of ``rows`` (sorted by budget) with the curve's fields added:

    * ``multiple``: the budget as a multiple of the file's limit (None without one);
    * ``cost_vs_limit_percent``: the cost against the cost at the file's limit, in %
      (-7.5: 7.5 % cheaper than at the limit);
    * ``saved``, ``saved_per_gib``, ``saved_per_limit_percent``: against the previous budget with a
      plan, the cost saved, and that per extra GiB of budget and per extra 1 % of the limit (None
      for the first budget with a plan, and for budgets without one).
    """
    out = [dict(r) for r in sorted(rows, key=lambda r: r["budget"])]
    at_limit = next((r["cost"] for r in out if limit is not None and r["budget"] == limit), None)
    previous: Optional[dict] = None
    for r in out:
        r["multiple"] = None if not limit else round(r["budget"] / limit, 4)
        r["cost_vs_limit_percent"] = (None if r["cost"] is None or not at_limit else
                                      round(100.0 * (r["cost"] - at_limit) / at_limit, 3))
        r["saved"] = r["saved_per_gib"] = r["saved_per_limit_percent"] = None
        if r["cost"] is None:
            continue
        if previous is not None and r["budget"] > previous["budget"]:
            saved = previous["cost"] - r["cost"]
            extra = r["budget"] - previous["budget"]
            r["saved"] = saved
            r["saved_per_gib"] = round(saved * GIB / extra, 3)
            if limit:
                r["saved_per_limit_percent"] = round(saved * limit / (100.0 * extra), 3)
        previous = r
    return out


# ------------------------------------------------------------------------------------------ reading
def _source(row: dict) -> Optional[str]:
    """Where a saved row's plan came from; rows saved before ``source`` existed: from ``found_at``."""
    if row.get("source") is not None or row.get("cost") is None:
        return row.get("source")
    found = row.get("found_at")
    return "own" if found in (None, row["budget"]) else "larger" if found > row["budget"] else "smaller"


def document_of_run(run: RunData) -> dict:
    """The tradeoff document (``--json``'s shape, without the plans: they are in ``solutions/``)
    of a saved tradeoff run."""
    if not run.rows:
        raise ReportError(f"{run.folder}: a tradeoff run without rows")
    meta = run.meta
    limit = meta.get("limit")
    rows = [{"budget": int(r["budget"]), "cost": r.get("cost"), "bound": r.get("lower_bound"),
             "status": r.get("status"), "peak": r.get("peak"), "found_at": r.get("found_at"),
             "source": _source(r), "run_cost": r.get("run_cost"), "proof": r.get("proof"),
             "seconds": r.get("elapsed"), "own_limit": bool(r.get("own_limit")),
             "feasible": bool(r.get("feasible")), "bound_by": r.get("bound_by"),
             "bound_exact": r.get("bound_exact"), "claim": r.get("claim"),
             "false_bounds": list(r.get("false_bounds") or []), "refuted": r.get("refuted")}
            for r in run.rows if r.get("budget") is not None]
    return {"problem": meta.get("instance") or run.rows[0]["instance"], "run": run.name,
            "folder": str(run.folder), "limit": limit, "time_limit": meta.get("time_limit"),
            "least_peak_bound": {"value": meta.get("least_peak_bound")},
            "rows": curve_fields(rows, limit), "notes": list(meta.get("notes") or [])}


def load_tradeoff(path: str) -> dict:
    """The tradeoff document of a run folder (or its ``results.jsonl``)."""
    run = load_run(path)
    if not is_tradeoff(run):
        raise ReportError(f"{path}: not a tradeoff run (its meta.json has no kind: tradeoff)")
    return document_of_run(run)


# ------------------------------------------------------------------------------------------ text
def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:,}"


def _short(x: Optional[float]) -> str:
    """3 significant digits with an SI suffix: a price of memory is read for its size."""
    if x is None:
        return "-"
    for suffix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g} {suffix}"
    return f"{x:.3g}"


def _where(row: dict, limit: Optional[int]) -> str:
    """Where a row's plan came from, in a few words."""
    source = row.get("source")
    at = row.get("found_at")
    if source in (None, "own"):
        return ""
    if source in ("smaller", "larger") and at is not None:
        return f"run at {at / limit:.3f}x" if limit else f"run at {at:,}"
    return {"unconstrained": "no-limit run", "least-peak": "least-peak plan"}.get(source, source)


def taken_over(row: dict) -> bool:
    """The monotone rule gave this budget a cheaper plan than its own run's, from a larger
    budget's run (the unconstrained one included)."""
    return (row.get("cost") is not None and row.get("source") in ("larger", "unconstrained")
            and (row.get("run_cost") is None or row["cost"] < row["run_cost"]))


def footnotes(doc: dict) -> list[str]:
    """One line per budget whose plan a larger budget's run found (the table's dagger), and per
    word about a proof: a bound that meets the cost without proving it (its source is not exact),
    a bound a cheaper verified plan contradicts (left out), an infeasibility a plan refuted."""
    out = []
    for r in doc["rows"]:
        where = f"budget {r['budget']:,}"
        if r.get("claim"):
            out.append(f"{where}: not proven, {r['claim']}")
        out += [f"{where}: {false}; left out" for false in r.get("false_bounds") or []]
        if r.get("refuted"):
            out.append(f"{where}: {r['refuted']}")
        if taken_over(r):
            own = ("its own run found no plan" if r.get("run_cost") is None
                   else f"its own run answered {r['run_cost']:,}")
            out.append(f"† budget {r['budget']:,}: {own}; the plan of the "
                       f"{_where(r, doc['limit'])} peaks at {_fmt(r.get('peak'))}, fits, and costs "
                       f"{r['cost']:,}: taken (a plan that fits a budget fits every larger one)")
    return out


def columns(doc: dict) -> list[str]:
    """The table's columns: the limit's two only when the file has a limit."""
    unit = memory_unit([r["budget"] for r in doc["rows"]])[0]
    limit = doc.get("limit")
    return (["budget"] + (["x limit"] if limit else []) + ["cost"]
            + (["vs limit"] if limit else []) + [f"saved per {unit}", "bound", "status", "peak",
                                                 "plan from"])


def cells(doc: dict, row: dict) -> list[str]:
    """One row of the table, as text."""
    limit = doc.get("limit")
    size = memory_unit([r["budget"] for r in doc["rows"]])[1]
    price = None if row.get("saved") is None else row["saved"] * size / max(
        1, row["budget"] - _previous_budget(doc, row))
    vs = row.get("cost_vs_limit_percent")
    where = _where(row, limit) + (" †" if taken_over(row) else "")
    out = [_fmt(row["budget"])]
    if limit:
        out.append(f"{row['budget'] / limit:.3f}")
    out.append(_fmt(row.get("cost")))
    if limit:
        out.append("-" if vs is None else f"{vs:+.1f} %")
    bound = _fmt(row.get("bound")) + (" (claim)" if row.get("bound_exact") is False else "")
    out += [_short(price), bound, row.get("status") or "-", _fmt(row.get("peak")), where]
    return out


def _previous_budget(doc: dict, row: dict) -> int:
    """The budget the row's saving is measured from (the previous one with a plan)."""
    before = [r["budget"] for r in doc["rows"] if r["budget"] < row["budget"]
              and r.get("cost") is not None]
    return before[-1] if before else row["budget"]


def caption(doc: dict) -> list[str]:
    """The lines under the table: the certified least peak, the limit, how to read a price."""
    bound = (doc.get("least_peak_bound") or {}).get("value")
    lines = [f"certified least peak: {_fmt(bound)} (no plan fits a smaller budget); "
             f"the file's limit: {_fmt(doc.get('limit'))}"]
    unit = memory_unit([r["budget"] for r in doc["rows"]])[0]
    lines.append(f"saved per {unit}: the cost saved from the previous budget with a plan, per "
                 f"extra {unit} of budget")
    return lines + footnotes(doc) + list(doc.get("notes") or [])


def tradeoff_table(doc: dict) -> Any:
    """The rich table of a tradeoff document: one row per budget, the file's limit in bold."""
    from rich.table import Table

    table = Table(title=f"{doc['problem']}: cost against memory budget",
                  caption="\n".join(caption(doc)), caption_justify="left")
    for name in columns(doc):
        table.add_column(name, justify="left" if name in ("status", "plan from") else "right")
    for r in doc["rows"]:
        style = {"optimal": "green", "infeasible": "magenta", "none": "yellow"}.get(r["status"], "")
        row = cells(doc, r)
        status = columns(doc).index("status")
        if style:
            row[status] = f"[{style}]{row[status]}[/]"
        table.add_row(*row, style="bold" if r.get("own_limit") else None)
    return table


def tradeoff_markdown(doc: dict) -> str:
    """The table as markdown, the file's limit in bold, the caption below it."""
    head = columns(doc)
    lines = [f"### {doc['problem']}: cost against memory budget", "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join("---" if h in ("status", "plan from") else "---:" for h in head) + "|"]
    for r in doc["rows"]:
        row = cells(doc, r)
        if r.get("own_limit"):
            row = [f"**{c}**" if c else c for c in row]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines + [""] + [f"- {c}" for c in caption(doc)]) + "\n"


CSV_FIELDS = ("budget", "multiple", "cost", "cost_vs_limit_percent", "saved", "saved_per_gib",
              "saved_per_limit_percent", "bound", "status", "peak", "found_at", "source",
              "run_cost", "own_limit", "proof", "bound_by", "bound_exact", "claim",
              "false_bounds", "refuted")


def tradeoff_csv(docs: Sequence[dict]) -> str:
    """One CSV row per budget of each document, exact numbers (``problem`` first)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(("problem",) + CSV_FIELDS)
    for doc in docs:
        for r in doc["rows"]:
            writer.writerow([doc["problem"]] + ["" if r.get(k) is None else
                                                "; ".join(r[k]) if isinstance(r.get(k), list)
                                                else r.get(k) for k in CSV_FIELDS])
    return buffer.getvalue()
