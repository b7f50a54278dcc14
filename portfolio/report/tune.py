"""A ``portfolio tune`` run read back (``meta.json`` says ``kind: "tune"``): the configurations
tried (their backend profile, the runs they got, their score, the options that differ from the
default), the incumbent over tuning time, and default against tuned side by side, the validation
too. From the run's files alone (``trials.jsonl``, ``results.jsonl``), scored again under the
final references (:mod:`.tune_score`), so an interrupted tune reports what it has.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Optional, Sequence

from ..results import read_rows
from .leaderboard import ReportError, RunData, load_run
from .tune_score import PENALTY, mean_score, references, usable_cost

TRIALS = "trials.jsonl"


def is_tune(run: RunData) -> bool:
    return run.meta.get("kind") == "tune"


class _Pair:
    """A pair label read back (``B s0``): the instance is what the score needs."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.instance = label.rsplit(" s", 1)[0]


def load_tune(path: str) -> dict:
    """The tune document of a run folder: settings, trials rescored, incumbent trace, summary."""
    run = load_run(path)
    if not is_tune(run):
        raise ReportError(f"{path}: not a tune run (its meta.json has no kind: tune)")
    records = [r for r in read_rows(run.folder / TRIALS)[0] if r.get("phase", "train") == "train"]
    if not records:
        raise ReportError(f"{path}: no trial decided yet (the default runs first)")
    pairs = [_Pair(label) for label in run.meta.get("pairs", [])]
    refs = references((row.get("instance"), usable_cost(row)) for row in run.rows)
    baseline = records[0]
    trials = []
    for r in records:
        score = mean_score(r["costs"], pairs, refs)
        seeds = sorted({p.label.rsplit(" s", 1)[1] for p in pairs[:r["pairs"]]}, key=int)
        trials.append({"name": r["name"], "state": r["state"], "runs": r["pairs"],
                       "seeds": seeds,
                       "of": len(pairs), "score": score, "backends": r["backends"],
                       "off": [b for b in baseline["backends"] if b not in r["backends"]],
                       "options": r.get("options", {}), "seconds": r.get("seconds"),
                       "costs": r["costs"]})
    # the tune's own decision (a paired test, ties by the anytime score: portfolio.tuning.race),
    # as recorded with the last decided trial; not re-decided here
    chosen = records[-1].get("incumbent") or baseline["name"]
    tuned = next((t for t in trials if t["name"] == chosen), trials[0])
    trace, best = [], None
    for r, t in zip(records, trials):   # as the tune saw it when each trial was decided
        if r.get("incumbent") != best:
            best = r.get("incumbent")
            trace.append({"seconds": r.get("seconds"), "trial": best,
                          "score": r.get("incumbent_value")})
    summary = run.meta.get("summary") or {}
    return {"name": run.name, "folder": str(run.folder), "status": run.meta.get("status"),
            "identity": run.meta.get("identity", {}), "pairs": [p.label for p in pairs],
            "references": refs, "penalty": PENALTY, "trials": trials,
            "default": trials[0], "tuned": tuned, "trace": trace,
            "validation": summary.get("validation"), "config": str(run.folder / "tuned.toml")
            if (run.folder / "tuned.toml").is_file() else None}


def _score(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.4f}"


def _cost(x: Any) -> str:
    return "no plan" if x is None else f"{x:,.1f}".rstrip("0").rstrip(".")


def _options(options: dict) -> str:
    return ", ".join(f"{b}.{k}={v}" for b, vals in sorted(options.items())
                     for k, v in sorted(vals.items())) or "(defaults)"


def trials_table(doc: dict) -> Any:
    from rich.table import Table

    table = Table(title=f"tune {doc['name']}: {len(doc['trials'])} configurations tried "
                        f"({doc['status']})", title_justify="left")
    for col, just in (("trial", "left"), ("state", "left"), ("runs", "right"), ("seeds", "left"),
                      ("score", "right"), ("backends off", "left"), ("options that differ", "left")):
        table.add_column(col, justify=just, overflow="fold")
    for t in doc["trials"]:
        mark = " *" if t["name"] == doc["tuned"]["name"] else ""
        state = "complete" if t["state"] == "complete" else "dropped"
        table.add_row(t["name"] + mark, state, f"{t['runs']}/{t['of']}", ",".join(t["seeds"]),
                      _score(t["score"]),
                      ", ".join(t["off"]) or "-", _options(t["options"]))
    table.caption = ("score: mean over the runs of cost / reference (the contest's best known, "
                     f"else the best seen); no plan = {doc['penalty']:g}; * the tuned one")
    return table


def trace_table(doc: dict) -> Any:
    from rich.table import Table

    table = Table(title="incumbent over tuning time", title_justify="left")
    for col in ("at", "incumbent", "score then"):
        table.add_column(col, justify="right" if col != "incumbent" else "left")
    for point in doc["trace"]:
        secs = point.get("seconds")
        table.add_row("-" if secs is None else f"{secs:,.0f} s", point["trial"],
                      _score(point.get("score")))
    return table


def summary_table(summary: dict, title: str = "default against tuned") -> Any:
    """Default and tuned side by side (per instance mean cost, score), the validation below."""
    from rich.table import Table

    d, t = summary["default"], summary["tuned"]
    table = Table(title=f"{title}: {d['trial']} and {t['trial']}", title_justify="left")
    table.add_column("")
    table.add_column("default", justify="right")
    table.add_column("tuned", justify="right")
    table.add_column("change", justify="right")
    sides = [("training", d, t)]
    val = summary.get("validation")
    if val:
        sides.append(("validation", val["default"], val["tuned"]))
    for label, a, b in sides:
        table.add_row(f"[bold]{label} score[/]", _score(a["score"]), _score(b["score"]),
                      _change(a["score"], b["score"]))
        for inst, cost in a["instances"].items():
            other = b["instances"].get(inst)
            table.add_row(f"  {inst}", _cost(cost), _cost(other), _change(cost, other))
    table.add_row("backends", f"all {len(d['backends'])}", ", ".join(t["backends"]), "")
    table.add_row("options", "", _options(t["options"]), "")
    if not val:
        table.caption = "not validated on other instances (--validate FILES)"
    return table


def _change(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or a == 0:
        return ""
    return f"{(b - a) / a * 100:+.2f} %"


def tune_summary(doc: dict) -> dict:
    """The side-by-side figures of a tune document (what ``summary_table`` shows)."""
    def side(t: dict, pairs: Sequence[str]) -> dict:
        by: dict[str, list] = {}
        for label, cost in zip(pairs, t["costs"]):
            by.setdefault(label.rsplit(" s", 1)[0], []).append(cost)
        return {"trial": t["name"], "score": t["score"], "backends": t["backends"],
                "options": t["options"],
                "instances": {k: None if None in v else sum(v) / len(v) for k, v in by.items()}}

    return {"default": side(doc["default"], doc["pairs"]),
            "tuned": side(doc["tuned"], doc["pairs"]), "validation": doc.get("validation")}


def tune_markdown(doc: dict) -> str:
    lines = [f"## tune {doc['name']}", "", "| trial | state | runs | score | backends off | "
             "options that differ |", "|---|---|---:|---:|---|---|"]
    for t in doc["trials"]:
        lines.append(f"| {t['name']} | {t['state']} | {t['runs']}/{t['of']} | {_score(t['score'])}"
                     f" | {', '.join(t['off']) or '-'} | {_options(t['options'])} |")
    return "\n".join(lines) + "\n"


def tune_json(doc: dict) -> str:
    return json.dumps(doc, indent=2)


CSV_COLUMNS = ("run", "trial", "state", "runs", "of", "seeds", "score", "tuned", "backends",
               "backends_off", "options", "seconds")
"""A tune run's CSV (``report --csv``, ``--format csv``): one row per trial (docs/tune.md)."""


def tune_csv(docs: Sequence[dict]) -> str:
    """One row per trial of each tune document, for pandas, R or a spreadsheet."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for doc in docs:
        for t in doc["trials"]:
            writer.writerow({
                "run": doc["name"], "trial": t["name"], "state": t["state"], "runs": t["runs"],
                "of": t["of"], "seeds": ";".join(t["seeds"]),
                "score": "" if t["score"] is None else f"{t['score']:.6f}",
                "tuned": "yes" if t["name"] == doc["tuned"]["name"] else "",
                "backends": "+".join(t["backends"]), "backends_off": "+".join(t["off"]),
                "options": "" if not t["options"] else _options(t["options"]),
                "seconds": "" if t.get("seconds") is None else t["seconds"]})
    return buf.getvalue()
