"""``report --aslib DIR``: bench runs as an ASlib scenario (Bischl et al., "ASlib: A benchmark
library for algorithm selection", AIJ 2016), so that the algorithm-selection tools researchers
already use (AutoFolio, LLAMA, the ``ASlibScenario`` reader, ...) run on this problem's data.

What is what (docs/bench.md says the same for users):

* **algorithms**: the leaderboard's configurations (single backends and portfolios alike), by
  their labels;
* **instances**: an instance at a budget, ``NAME@60s``: one scenario for every budget, with the
  budget as the feature ``budget_seconds`` (its own feature step, free), so a selector learns
  from features *and* budget, as issue 50's selector does;
* **performance**: two measures, both minimised, ``performance_type: solution_quality``:
  ``regret`` = 1 - the contest score (``min_cost / cost`` over every run of that instance and
  budget in the scenario; 1 without a plan), and ``cost``, the verified cost (a run without a
  plan gets ``PENALTY`` times the largest verified cost of its instance and budget, in the spirit
  of ASlib's PAR10, or 10**18 when no run found one);
* **repetitions**: seeds x repeats, numbered from 1; a configuration that did not run an instance
  at a budget gets one row ``not_applicable`` (regret 1, the penalty cost): the format wants every
  algorithm on every instance;
* **features**: the rows' own (``features`` on each bench row) or those the caller computed from
  the instance files; steps ``cheap``, ``presolved`` (names ``presolved_*``) and ``budget``;
  their costs are the steps' seconds (presolve's included in ``presolved``; loading is every
  algorithm's too, so it is no feature cost); an instance without features gets ``?`` and the
  status ``other``;
* **cv.arff**: folds by graph (every budget of a graph in one fold), at most 10: with up to ten
  graphs, leave-one-graph-out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

from .leaderboard import Leaderboard, ReportError, points

PENALTY = 10
"""A run without a plan costs this many times the largest verified cost of its instance and budget."""

NO_PLAN_COST = 10**18
MAX_FOLDS = 10
BUDGET_FEATURE = "budget_seconds"
STEPS = ("cheap", "presolved", "budget")
RUN_STATUS = ["ok", "timeout", "memout", "not_applicable", "crash", "other"]
FEATURE_STATUS = ["ok", "timeout", "memout", "presolved", "crash", "other"]
_STATUS = {"no-solution": "timeout", "late": "timeout", "timeout": "timeout", "crashed": "crash"}


def instance_id(row: dict) -> str:
    """``NAME@LIMITs``: an instance at the budget it ran with (after ``--at``, that time)."""
    return f"{row['instance']}@{float(row.get('time_limit') or 0):g}s"


def _runs_by_id(board: Leaderboard) -> dict[str, dict[str, list]]:
    """{instance id: {algorithm label: [outcomes in trial order]}} over the board's run entries."""
    out: dict[str, dict[str, list]] = {}
    for entry in board.entries:
        if entry.kind != "run":
            continue
        for outcomes in entry.outcomes.values():
            for o in sorted(outcomes, key=lambda o: tuple(map(str, o.trial))):
                out.setdefault(instance_id(o.row), {}).setdefault(entry.label, []).append(o)
    return out


def _performance(runs: dict[str, dict[str, list]], algorithms: Sequence[str]) -> list[list]:
    data = []
    for iid in sorted(runs):
        by_algo = runs[iid]
        costs = [o.cost for outs in by_algo.values() for o in outs if o.cost is not None]
        least = min(costs) if costs else None
        penalty = PENALTY * max(costs) if costs else NO_PLAN_COST
        for algo in algorithms:
            outs = by_algo.get(algo)
            if not outs:
                data.append([iid, 1, algo, 1.0, penalty, "not_applicable"])
                continue
            for rep, o in enumerate(outs, 1):
                if o.cost is not None:
                    data.append([iid, rep, algo, 1.0 - points(least, o.cost), o.cost, "ok"])
                else:
                    data.append([iid, rep, algo, 1.0, penalty, _STATUS.get(o.status, "other")])
    return data


def _features_of(runs: dict[str, dict[str, list]], given: dict[str, dict]) -> dict[str, dict]:
    """Per instance name, its features record: the newest version among its rows, else ``given``."""
    out: dict[str, dict] = {}
    for by_algo in runs.values():
        for outs in by_algo.values():
            for o in outs:
                record = (o.row or {}).get("features")
                name = o.row["instance"]
                if record and record.get("values") and (
                        name not in out or record.get("version", 0) > out[name].get("version", 0)):
                    out[name] = record
    for name, record in given.items():
        if name not in out and record and record.get("values"):
            out[name] = record
    return out


def _feature_names(records: dict[str, dict]) -> list[str]:
    versions = {r.get("version") for r in records.values()}
    if len(versions) > 1:
        raise ReportError(f"--aslib: the rows carry features of versions "
                          f"{', '.join(map(str, sorted(versions)))}; a scenario needs one: "
                          f"compute them again with one version")
    names: dict[str, None] = {}
    for record in records.values():
        names.update(dict.fromkeys(record["values"]))
    return list(names)


def _number(value: Any) -> Optional[float]:
    """A feature value as ARFF takes it: a number, or None (``?``) when undefined."""
    if isinstance(value, bool):
        return float(value)
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _feature_rows(ids: Sequence[str], names: Sequence[str], records: dict[str, dict],
                  budgets: dict[str, float]) -> tuple[list, list, list]:
    values, costs, status = [], [], []
    for iid in ids:
        record = records.get(iid.rsplit("@", 1)[0])
        got = (record or {}).get("values", {})
        secs = (record or {}).get("seconds", {})
        values.append([iid, 1, *[_number(got.get(n)) for n in names], budgets[iid]])
        if record is None:
            costs.append([iid, 1, None, None, 0.0])
            status.append([iid, 1, "other", "other", "ok"])
            continue
        presolved_ok = got.get("presolved_nodes") is not None
        costs.append([iid, 1, secs.get("cheap"),
                      (secs.get("presolve", 0.0) + secs.get("presolved", 0.0)) if presolved_ok
                      else None, 0.0])
        settled = presolved_ok and got.get("presolved_settled") == 1
        status.append([iid, 1, "ok", "presolved" if settled else "ok" if presolved_ok else "crash",
                       "ok"])
    return values, costs, status


def _algorithm_meta(board: Leaderboard, algorithms: Sequence[str]) -> dict:
    meta = {}
    for entry in board.entries:
        if entry.kind != "run" or entry.label not in algorithms:
            continue
        rows = [o.row for outs in entry.outcomes.values() for o in outs if o.row]
        first = rows[0] if rows else {}
        options = first.get("options_given") or {}
        text = "backends=" + "+".join(first.get("backends") or ())
        if options:
            text += " options=" + ";".join(f"{b}.{k}={v}" for b, kv in sorted(options.items())
                                           for k, v in sorted(kv.items()))
        meta[entry.label] = {"configuration": text,
                             "deterministic": bool(rows) and all(r.get("work") is not None
                                                                for r in rows)}
    return meta


def instances_without_features(board: Leaderboard) -> dict[str, str]:
    """{instance name: its file's path as the rows give it} for the instances none of whose rows
    carry features: a caller may compute them from the file (the rows of old runs)."""
    carried = {r["instance"] for run in board.run_data for r in run.rows
               if (r.get("features") or {}).get("values")}
    return {r["instance"]: str(r.get("path") or "") for run in board.run_data for r in run.rows
            if r["instance"] not in carried}


def scenario(board: Leaderboard, name: str, features: Optional[dict[str, dict]] = None) -> dict:
    """The scenario's files as data: ``{file name: content}`` (ARFF ones as liac-arff dicts,
    ``description.txt`` as a dict for YAML, the readme and citation as text)."""
    runs = _runs_by_id(board)
    if not runs:
        raise ReportError("--aslib: no configuration rows to write (contest teams are not runs)")
    algorithms = sorted({a for by_algo in runs.values() for a in by_algo})
    ids = sorted(runs)
    budgets = {iid: float(iid.rsplit("@", 1)[1][:-1]) for iid in ids}
    records = _features_of(runs, features or {})
    names = _feature_names(records)
    values, costs, status = _feature_rows(ids, names, records, budgets)
    graphs = sorted({iid.rsplit("@", 1)[0] for iid in ids})
    folds = min(MAX_FOLDS, len(graphs))
    fold_of = {g: i % folds + 1 for i, g in enumerate(graphs)}
    head = [("instance_id", "STRING"), ("repetition", "NUMERIC")]
    provides = {"cheap": [n for n in names if not n.startswith("presolved_")],
                "presolved": [n for n in names if n.startswith("presolved_")],
                "budget": [BUDGET_FEATURE]}
    feature_time = max((sum(c for c in row[2:] if c is not None) for row in costs), default=0.0)
    description = {
        "scenario_id": name,
        "performance_measures": ["regret", "cost"],
        "maximize": [False, False],
        "performance_type": ["solution_quality", "solution_quality"],
        "algorithm_cutoff_time": max(budgets.values()),
        "algorithm_cutoff_memory": "?",
        "features_cutoff_time": math.ceil(feature_time) or 1,
        "features_cutoff_memory": "?",
        "features_deterministic": [*names, BUDGET_FEATURE],
        "features_stochastic": None,
        "number_of_feature_steps": len(STEPS),
        "default_steps": list(STEPS),
        "feature_steps": {step: {"provides": provides[step]} for step in STEPS},
        "metainfo_algorithms": _algorithm_meta(board, algorithms),
    }
    missing = sorted(g for g in graphs if g not in records)
    return {
        "description.txt": description,
        "algorithm_runs.arff": {
            "relation": f"ALGORITHM_RUNS_{name}",
            "attributes": [*head, ("algorithm", "STRING"),
                           ("regret", "NUMERIC"), ("cost", "NUMERIC"), ("runstatus", RUN_STATUS)],
            "data": _performance(runs, algorithms)},
        "feature_values.arff": {
            "relation": f"FEATURE_VALUES_{name}",
            "attributes": [*head, *[(n, "NUMERIC") for n in [*names, BUDGET_FEATURE]]],
            "data": values},
        "feature_costs.arff": {
            "relation": f"FEATURE_COSTS_{name}",
            "attributes": [*head, *[(s, "NUMERIC") for s in STEPS]], "data": costs},
        "feature_runstatus.arff": {
            "relation": f"FEATURE_RUNSTATUS_{name}",
            "attributes": [*head, *[(s, FEATURE_STATUS) for s in STEPS]], "data": status},
        "cv.arff": {
            "relation": f"CV_{name}",
            "attributes": [*head, ("fold", "NUMERIC")],
            "data": [[iid, 1, fold_of[iid.rsplit("@", 1)[0]]] for iid in ids]},
        "readme.txt": _readme(board, name, len(algorithms), ids, graphs, folds, missing),
        "citation.bib": CITATION,
    }


def write_aslib(board: Leaderboard, folder: str | Path,
                features: Optional[dict[str, dict]] = None) -> list[Path]:
    """Write the scenario into ``folder`` (a new or empty folder: nothing is overwritten)."""
    try:
        import arff
        import yaml
    except ImportError:
        raise ReportError("--aslib needs liac-arff and PyYAML: pip install "
                          "'iopddl-portfolio[aslib]'") from None
    out = Path(folder)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReportError(f"{folder}: exists and is not an empty folder; give a new one")
    files = scenario(board, out.name, features)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, content in files.items():
        path = out / file
        if file.endswith(".arff"):
            path.write_text(arff.dumps(content) + "\n", encoding="utf-8")
        elif file == "description.txt":
            path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
        else:
            path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def _readme(board: Leaderboard, name: str, algorithms: int, ids: Sequence[str],
            graphs: Sequence[str], folds: int, missing: Sequence[str]) -> str:
    lines = [
        f"ASlib scenario {name}: the IOPDDL auto-sharding problem (ASPLOS/EuroSys 2025 contest),",
        f"written by `portfolio report --aslib` (iopddl-portfolio) from the bench runs",
        f"{', '.join(board.runs)}" + (f", rescored at {board.at:g} s" if board.at else "") + ".",
        "",
        f"{algorithms} algorithms (bench configurations), {len(ids)} instances (a graph at a",
        f"budget, NAME@SECONDSs, over {len(graphs)} graphs), {folds} cross-validation folds by graph.",
        "Measures, both minimised: regret = 1 - contest score (min cost / cost over the runs of",
        f"the instance), and the verified cost (no plan: {PENALTY} x the instance's largest verified",
        "cost). Features: docs/features.md of iopddl-portfolio; budget_seconds is the budget.",
    ]
    if missing:
        lines += ["", "Without features (no row carried them and the instance file was not "
                  "found): " + ", ".join(missing)]
    return "\n".join(lines) + "\n"


CITATION = """@article{bischl2016aslib,
  title   = {{ASlib}: A benchmark library for algorithm selection},
  author  = {Bischl, Bernd and Kerschke, Pascal and Kotthoff, Lars and Lindauer, Marius and
             Malitsky, Yuri and Fr{\\'e}chette, Alexandre and Hoos, Holger and Hutter, Frank and
             Leyton-Brown, Kevin and Tierney, Kevin and Vanschoren, Joaquin},
  journal = {Artificial Intelligence},
  volume  = {237},
  pages   = {41--58},
  year    = {2016}
}
@misc{iopddl2025,
  title = {{IOPDDL}: the intra-operator parallelism contest of {ASPLOS}/{EuroSys} 2025},
  year  = {2025}
}
"""
