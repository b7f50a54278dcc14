"""The leaderboard: result rows read from run folders and the contest's teams, scored.

Scoring follows the contest rules: on each instance a row scores ``min_cost / its_cost``, where the
minimum is over the rows being compared (a missing, infeasible, failed or late answer scores 0), and
the total is the sum over instances. Baseline rows (XLA, with ``--reference contest``) are scored but
never set the minimum, as in the official results. With repeated runs (seeds, ``--repeat``) a cell
holds several outcomes: its cost is their mean (± standard deviation), its points are the mean of
the outcomes' points, and the minimum is over every single outcome.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

from ..data import contest
from ..results import read_rows
from .machine import late_notes, starved_notes, starved_row
from .seeds import bootstrap_interval

RESULTS = "results.jsonl"
META = "meta.json"

UNRANKED = frozenset({"baseline", "reference"})
"""Row kinds that are scored but set no minimum cost and take no rank (XLA; ``--oracle``'s rows)."""

FAILED = frozenset({"error", "crashed", "timeout", "late"})
"""Row statuses that score 0 even if a cost is present (a late answer would not have been read)."""


class ReportError(ValueError):
    """Unreadable or empty input: one line for the user."""


# ------------------------------------------------------------------------------------------ reading
@dataclass
class RunData:
    name: str
    folder: Path
    rows: list[dict]
    bad_lines: int = 0
    meta: dict = field(default_factory=dict)


def load_run(path: str | Path) -> RunData:
    """A run folder (with ``results.jsonl``) or a results file itself."""
    p = Path(path)
    results = p / RESULTS if p.is_dir() else p
    folder = p if p.is_dir() else p.parent
    if not results.is_file():
        raise ReportError(f"{path}: no {RESULTS} here (expected a `portfolio bench` run folder)")
    rows, bad = read_rows(results)
    complete = [r for r in rows if "instance" in r and "configuration" in r]
    bad += len(rows) - len(complete)
    rows = complete
    meta: dict = {}
    if (folder / META).is_file():
        try:
            meta = json.loads((folder / META).read_text())
        except (OSError, json.JSONDecodeError):
            meta = {}
    name = meta.get("name") or (folder.name if p.is_dir() else p.stem)
    # the same task twice (files concatenated by hand): the later line wins
    unique: dict[tuple, dict] = {}
    for row in rows:
        unique[(row["instance"], row["configuration"], row.get("seed", 0), row.get("repeat", 0))] = row
    return RunData(str(name), folder, list(unique.values()), bad, meta)


# ------------------------------------------------------------------------------------------ model
@dataclass
class Outcome:
    cost: Optional[int]       # the cost that scores, or None (failed / infeasible / missing)
    status: str
    trial: tuple = ()         # (seed, repeat) for run rows
    row: Optional[dict] = None


@dataclass
class Entry:
    """A leaderboard row: a solver configuration from a run, or a reference team."""

    label: str
    kind: str                                        # "run", "team", "baseline" or "reference"
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    run: Optional[str] = None


@dataclass
class Cell:
    n: int = 0
    n_ok: int = 0
    cost_mean: Optional[float] = None
    cost_std: Optional[float] = None
    cost_min: Optional[int] = None
    cost_median: Optional[float] = None   # what the table shows: robust to one bad seed
    cost_max: Optional[int] = None
    points: float = 0.0
    points_std: Optional[float] = None
    status: str = "missing"
    is_best: bool = False
    gap_lb: Optional[float] = None
    gap_own: Optional[float] = None   # mean certified gap (cost - the run's own bound) / cost
    vs_best_known: Optional[float] = None
    starved: int = 0                  # its tasks starved of CPU (:mod:`.machine`)


@dataclass
class Row:
    label: str
    kind: str
    run: Optional[str]
    cells: dict[str, Cell]
    total: float
    total_std: Optional[float]
    vs_best_known: Optional[float]
    rank: Optional[int] = None
    trials: int = 1                                   # seeds x repeats behind the total
    total_interval: Optional[tuple[float, float]] = None   # 95 % bootstrap over the trials


@dataclass
class InstanceInfo:
    name: str
    label: str
    time_limit: Optional[float]
    min_cost: Optional[int]
    best_known: Optional[int]
    best_known_by: Optional[str]
    lower_bound: Optional[int]
    lower_bound_source: Optional[str]


@dataclass
class Leaderboard:
    instances: list[InstanceInfo]
    rows: list[Row]
    runs: list[str]
    reference: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    run_data: list[RunData] = field(default_factory=list)   # the rows scored (rescored with ``at``)
    at: Optional[float] = None
    hidden_teams: int = 0
    entries: list[Entry] = field(default_factory=list)
    pairings: list = field(default_factory=list)   # seeds.Pairing

    def instance(self, name: str) -> InstanceInfo:
        return next(i for i in self.instances if i.name == name)


def outcome_of(row: dict) -> Outcome:
    status = str(row.get("status", "?"))
    cost = row.get("cost")
    ok = bool(row.get("feasible")) and cost is not None and status not in FAILED
    return Outcome(int(cost) if ok else None, status if ok or status != "feasible" else "infeasible",
                   (row.get("seed", 0), row.get("repeat", 0)), row)


def entries_from_runs(runs: Sequence[RunData]) -> list[Entry]:
    """One entry per (run, configuration); labels get the run's name when configurations collide."""
    configs: dict[tuple[int, str], RunData] = {}
    for i, run in enumerate(runs):
        for row in run.rows:
            configs.setdefault((i, row["configuration"]), run)
    counts = Counter(config for _, config in configs)
    entries: dict[tuple[int, str], Entry] = {}
    for (i, config), run in configs.items():
        label = config if counts[config] == 1 else f"{run.name}/{config}"
        if counts[config] > 1 and sum(r.name == run.name for r in runs) > 1:
            label = f"{run.name}#{i + 1}/{config}"  # the same run given twice
        entries[(i, config)] = Entry(label, "run", {}, run.name)
    for i, run in enumerate(runs):
        for row in run.rows:
            entries[(i, row["configuration"])].outcomes.setdefault(row["instance"], []).append(
                outcome_of(row))
    return list(entries.values())


def contest_entries(instances: Iterable[str]) -> list[Entry]:
    """The 2025 contest's teams and XLA as entries, on the given (contest-named) instances."""
    matched = {name: contest.match(name) for name in instances}
    out = []
    for team, costs in contest.team_costs().items():
        kind = "baseline" if team == contest.BASELINE else "team"
        entry = Entry(team, kind)
        for name, bench in matched.items():
            if bench is None:
                continue
            cost = costs.get(bench.letter)
            entry.outcomes[name] = [Outcome(cost, "contest" if cost is not None else "no answer")]
        out.append(entry)
    return out


ExtraRows = Callable[[list[Entry], list[str]], tuple[list[Entry], list[str]]]
"""Reference entries to score beside the runs' (and their notes), from the entries and instances."""


# ------------------------------------------------------------------------------------------ scoring
def _std(values: Sequence[float]) -> Optional[float]:
    return statistics.stdev(values) if len(values) > 1 else None


def min_costs(entries: Sequence[Entry], instances: Sequence[str]) -> dict[str, Optional[int]]:
    """Per instance, the lowest scoring cost of any single outcome of a non-baseline entry."""
    out: dict[str, Optional[int]] = {}
    for name in instances:
        costs = [o.cost for e in entries if e.kind not in UNRANKED
                 for o in e.outcomes.get(name, []) if o.cost is not None]
        if not costs:  # only baselines answered: they set the minimum after all
            costs = [o.cost for e in entries for o in e.outcomes.get(name, []) if o.cost is not None]
        out[name] = min(costs) if costs else None
    return out


def points(min_cost: Optional[int], cost: Optional[int]) -> float:
    """Contest points of one answer: ``min_cost / cost`` (0 without an answer)."""
    if cost is None or min_cost is None:
        return 0.0
    if cost == 0:
        return 1.0
    return min_cost / cost


def contest_points(table: Mapping[str, Mapping[str, Optional[int]]],
                   baselines: Iterable[str] = ()) -> dict[str, float]:
    """Total points per team for a ``{team: {benchmark: cost or None}}`` table (the contest rules)."""
    base = set(baselines)
    entries = [Entry(team, "baseline" if team in base else "team",
                     {b: [Outcome(c, "")] for b, c in costs.items()}) for team, costs in table.items()]
    instances = sorted({b for costs in table.values() for b in costs})
    board = score(entries, instances)
    return {row.label: row.total for row in board.rows}


def _cell(outcomes: list[Outcome], min_cost: Optional[int], best_known: Optional[int],
          lower_bound: Optional[int]) -> Cell:
    if not outcomes:
        return Cell()
    costs = [o.cost for o in outcomes if o.cost is not None]
    pts = [points(min_cost, o.cost) for o in outcomes]
    cell = Cell(n=len(outcomes), n_ok=len(costs), points=sum(pts) / len(pts), points_std=_std(pts),
                starved=sum(starved_row(o.row) for o in outcomes))
    if costs:
        # exact (an int) when the outcomes agree: costs reach 10**21, past a float's 53 bits
        cell.cost_mean = costs[0] if len(set(costs)) == 1 else sum(costs) / len(costs)
        cell.cost_std = _std([float(c) for c in costs])
        cell.cost_min, cell.cost_max = min(costs), max(costs)
        ordered = sorted(costs)
        half = len(ordered) // 2   # exact ints: halves of two ints only when they differ
        cell.cost_median = (ordered[half] if len(ordered) % 2 else
                            (ordered[half - 1] if ordered[half - 1] == ordered[half]
                             else (ordered[half - 1] + ordered[half]) / 2))
        cell.is_best = min_cost is not None and cell.cost_min == min_cost
        if lower_bound:
            cell.gap_lb = (cell.cost_median - lower_bound) / lower_bound
        own = [_own_gap(o) for o in outcomes]
        own = [g for g in own if g is not None]
        if own:
            cell.gap_own = sum(own) / len(own)
    if best_known is not None:
        cell.vs_best_known = sum(points(best_known, o.cost) for o in outcomes) / len(outcomes)
    bad = Counter(o.status for o in outcomes if o.cost is None)
    if not costs:
        cell.status = bad.most_common(1)[0][0]
    elif bad:
        cell.status = f"{len(costs)}/{len(outcomes)} ok"
    else:
        cell.status = "ok"
    return cell


def _own_gap(o: Outcome) -> Optional[float]:
    """The certified gap ``(cost - bound) / cost`` of one result row, from its own bound."""
    lb = (o.row or {}).get("lower_bound")
    if o.cost is None or lb is None or o.cost <= 0:
        return None
    return (o.cost - int(lb)) / o.cost


def _labels(instances: Sequence[str]) -> dict[str, str]:
    """Short column labels: the contest letter for contest benchmarks, else the name."""
    labels = {}
    for name in instances:
        bench = contest.match(name)
        labels[name] = bench.letter if bench is not None else name
    if len(set(labels.values())) != len(labels):
        return {name: name for name in instances}
    return labels


def _lower_bounds(entries: Sequence[Entry], instances: Sequence[str], mins: Mapping[str, Optional[int]],
                  notes: list[str]) -> dict[str, tuple[Optional[int], Optional[str]]]:
    out = {}
    for name in instances:
        best, source = None, None
        bench = contest.match(name)
        if bench is not None and bench.lower_bound is not None:
            best, source = bench.lower_bound, "contest, approx."
        lowest = mins.get(name)
        for e in entries:
            for o in (e.outcomes.get(name, []) if e.kind != "reference" else ()):   # copies
                lb = (o.row or {}).get("lower_bound")
                if lb is None:
                    continue
                if lowest is not None and lb > lowest:
                    notes.append(f"{name}: ignored the lower bound {lb:,} claimed in {e.label}: "
                                 f"above the cost {lowest:,} verified in this report")
                    continue
                if best is None or lb > best:
                    proof = (o.row or {}).get("proof")
                    best, source = int(lb), (f"this report, {proof}" if proof and lowest == lb
                                             else f"this report: {e.label}")
        out[name] = (best, source)
    return out


def _best_known_here(entries: Sequence[Entry], infos: Sequence[InstanceInfo]) -> None:
    """A verified cost of these runs that beats the published best known becomes the best known,
    said so: "this report: CONFIG" ("..., proven optimal by X" when the row proved it)."""
    for info in infos:
        if info.best_known is None or info.min_cost is None or info.min_cost >= info.best_known:
            continue
        found = [(e, o) for e in entries if e.kind == "run" for o in e.outcomes.get(info.name, [])
                 if o.cost == info.min_cost]
        if not found:
            continue
        proved = [(e, o) for e, o in found if (o.row or {}).get("proof")]
        entry, outcome = (proved or found)[0]
        info.best_known = info.min_cost
        proof = (outcome.row or {}).get("proof")
        info.best_known_by = f"this report, {proof}" if proof else f"this report: {entry.label}"


def _rank(rows: list[Row]) -> None:
    ranked = sorted((r for r in rows if r.kind not in UNRANKED), key=lambda r: -r.total)
    place, previous = 0, None
    for i, row in enumerate(ranked, 1):
        if previous is None or not math.isclose(row.total, previous, rel_tol=1e-12, abs_tol=1e-12):
            place, previous = i, row.total
        row.rank = place


def score(entries: Sequence[Entry], instances: Sequence[str], runs: Sequence[str] = (),
          reference: Optional[str] = None, notes: Optional[list[str]] = None) -> Leaderboard:
    """Score every entry on ``instances``; rows come out in rank order (baselines by total)."""
    notes = list(notes or [])
    instances = list(instances)
    mins = min_costs(entries, instances)
    labels = _labels(instances)
    bounds = _lower_bounds(entries, instances, mins, notes)
    infos = []
    for name in instances:
        bench = contest.match(name)
        limits = {o.row.get("time_limit") for e in entries for o in e.outcomes.get(name, [])
                  if o.row is not None and o.row.get("time_limit") is not None}
        infos.append(InstanceInfo(
            name, labels[name], next(iter(limits)) if len(limits) == 1 else None, mins[name],
            None if bench is None else bench.best_known_cost,
            None if bench is None else bench.best_known_by,
            *bounds[name]))
    _best_known_here(entries, infos)
    rows = []
    for e in entries:
        cells = {}
        for info in infos:
            cells[info.name] = _cell(e.outcomes.get(info.name, []), info.min_cost, info.best_known,
                                     info.lower_bound)
        total = sum(c.points for c in cells.values())
        trials = sorted({o.trial for outs in e.outcomes.values() for o in outs if o.trial},
                        key=lambda t: tuple(map(str, t)))
        total_std, interval = None, None
        if len(trials) > 1:
            per_trial = []
            for trial in trials:
                per_trial.append(sum(points(info.min_cost, next(
                    (o.cost for o in e.outcomes.get(info.name, []) if o.trial == trial), None))
                    for info in infos))
            total_std = _std(per_trial)
            interval = bootstrap_interval(per_trial)
        known = [c.vs_best_known for c in cells.values() if c.vs_best_known is not None]
        rows.append(Row(e.label, e.kind, e.run, cells, total, total_std,
                        sum(known) if known else None, trials=max(1, len(trials)),
                        total_interval=interval))
    _rank(rows)
    rows.sort(key=lambda r: (-r.total, r.kind in UNRANKED, r.label))
    return Leaderboard(infos, rows, list(runs), reference, notes)


def failure_notes(runs: Sequence[RunData], shown: int = 8) -> list[str]:
    """One note per distinct error of the runs' failed tasks (error, crashed, timeout), naming them."""
    by_error: dict[str, list[str]] = {}
    for run in runs:
        for row in run.rows:
            if row.get("status") not in ("error", "crashed", "timeout"):
                continue
            first = (str(row.get("error") or "").strip().splitlines() or ["(no message)"])[0]
            by_error.setdefault(f"{row['status']}: {first}", []).append(
                f"{row['instance']}/{row['configuration']} s{row.get('seed', 0)}")
    notes = []
    for text, tasks in list(by_error.items())[:shown]:
        more = f" and {len(tasks) - 3} more" if len(tasks) > 3 else ""
        notes.append(f"failed task(s) {', '.join(tasks[:3])}{more}: {text}")
    if len(by_error) > shown:
        notes.append(f"... and {len(by_error) - shown} other error(s) (see --format json)")
    return notes


FORBIDDEN_COST = 10**18


def fallback_notes(runs: Sequence[RunData]) -> list[str]:
    """Why a bench row can be worse than ``portfolio solve -b`` with the same backends: bench keeps
    each configuration's own answer, without the runner's fallback plan (said once, when it shows)."""
    hit = [f"{row['instance']}/{row['configuration']}" for run in runs for row in run.rows
           if row.get("fallback") is False and (row.get("status") == "no-solution" or (
               row.get("cost") is not None and row["cost"] >= FORBIDDEN_COST))]
    if not hit:
        return []
    more = f" and {len(hit) - 3} more" if len(hit) > 3 else ""
    return [f"{', '.join(hit[:3])}{more}: no plan or a forbidden one. Bench rows are the "
            f"configurations' own answers; `portfolio solve` with the same backends would also "
            f"offer the runner's fallback plan (least memory, no forbidden entry)"]


def _wanted(names: Optional[Sequence[str]], what: str, known: Iterable[str],
            alias=lambda name: name) -> Optional[set[str]]:
    """The known names a filter selects (a name, or its alias such as a contest letter)."""
    if not names:
        return None
    known = list(known)
    chosen = set()
    for want in names:
        hits = [k for k in known if want in (k, alias(k))]
        if not hits:
            raise ReportError(f"--{what}: no {what[:-1]} {want!r} in these results "
                              f"(known: {', '.join(sorted(set(map(alias, known))))})")
        chosen.update(hits)
    return chosen


def _letter(name: str) -> str:
    bench = contest.match(name)
    return bench.letter if bench is not None else name


def build(run_paths: Sequence[str | Path], reference: Optional[str] = None, *,
          at: Optional[float] = None, configs: Optional[Sequence[str]] = None,
          instances: Optional[Sequence[str]] = None, top: Optional[int] = None,
          pair: Optional[Sequence[str]] = None, extra_rows: Optional[ExtraRows] = None) -> Leaderboard:
    """Read runs and score them, joined with the contest's teams when ``reference == "contest"``.

    ``at``: rescore every row as if its limit had been ``at`` seconds (:mod:`.anytime`).
    ``configs``, ``instances``: keep only these (names, or contest letters), before scoring.
    ``top``: show only the best ``top`` contest teams (scored against all of them).
    ``pair``: two configuration labels to count paired wins and losses of (by default the two
    configurations of a run that has exactly two and several seeds).
    ``extra_rows``: adds reference entries before scoring (``oracle.reference_entries``: the
    virtual best and single best rows of the single-backend configurations).
    """
    from .anytime import rescore_row
    from .options import difference_notes
    from .provenance import checkout_notes, command_notes, hash_notes, incomplete_notes

    runs = [load_run(p) for p in run_paths]
    keep_i = _wanted(instances, "instances", {r["instance"] for run in runs for r in run.rows}, _letter)
    keep_c = _wanted(configs, "configs", {r["configuration"] for run in runs for r in run.rows})
    for run in runs:
        run.rows = [r for r in run.rows if (keep_i is None or r["instance"] in keep_i)
                    and (keep_c is None or r["configuration"] in keep_c)]
        if at is not None:
            run.rows = [rescore_row(r, at) for r in run.rows]
    board = _build(runs, reference, run_paths, extra_rows)
    board.run_data, board.at = runs, at
    board.notes += difference_notes(r for run in runs for r in run.rows)
    board.notes += checkout_notes(r for run in runs for r in run.rows)
    board.notes += command_notes(r for run in runs for r in run.rows)
    board.notes += starved_notes(r for run in runs for r in run.rows)
    board.notes += late_notes(r for run in runs for r in run.rows)
    if at is None:   # a plan hash is the final answer's
        board.notes += hash_notes(r for run in runs for r in run.rows)
    board.notes += incomplete_notes([r for run in runs for r in run.rows])
    board.pairings = _pairings(board, pair)
    if at is not None:
        longer = sorted({r.get("time_limit") for run in runs for r in run.rows
                         if r.get("rescored_at") is None and r.get("time_limit") is not None
                         and r["time_limit"] < at})
        board.notes.insert(0, f"rescored at {at:g} s from the stored incumbent traces: what each "
                           "run held then, not what a run given that limit would reach (the "
                           "runner paces its backends by the limit: docs/bench.md)"
                           + (f"; rows with shorter limits ({', '.join(f'{t:g} s' for t in longer)})"
                              f" keep their final answers" if longer else ""))
    if top is not None:
        teams = [r for r in board.rows if r.kind == "team"]
        hidden = {id(r) for r in sorted(teams, key=lambda r: -r.total)[top:]}
        board.rows = [r for r in board.rows if id(r) not in hidden]
        board.hidden_teams = len(hidden)
        if hidden:
            board.notes.append(f"{len(hidden)} contest team(s) below the top {top} hidden "
                               f"(still scored: they set the minimum cost where they were best)")
    return board


def _build(runs: list[RunData], reference: Optional[str],
           run_paths: Sequence[str | Path], extra_rows: Optional[ExtraRows] = None) -> Leaderboard:
    notes = [f"{r.name}: skipped {r.bad_lines} unreadable line(s)" for r in runs if r.bad_lines]
    notes += failure_notes(runs) + fallback_notes(runs)
    entries = entries_from_runs(runs)
    instances = sorted({name for e in entries for name in e.outcomes})
    if not instances:
        raise ReportError("no results in " + ", ".join(str(p) for p in run_paths))
    if reference is not None:
        if reference != "contest":
            raise ReportError(f"unknown reference {reference!r}; known: contest")
        matched = [n for n in instances if contest.match(n) is not None]
        if not matched:
            raise ReportError("--reference contest: none of the instances is a contest benchmark "
                              "(asplos-2025-iopddl-A ... -Y)")
        left = [n for n in instances if n not in matched]
        if left:
            notes.append("not contest benchmarks, left out of the comparison: " + ", ".join(left))
        instances = matched
        entries = entries + contest_entries(instances)
        notes.append("contest rows: each team's final answer in the 2025 contest (on the contest's own machine, "
                     "contest time limits); XLA is a baseline and does not set the minimum")
    if extra_rows is not None:
        extra, said = extra_rows(entries, instances)
        entries, notes = entries + extra, notes + said
    board = score(entries, instances, [r.name for r in runs], reference, notes)
    board.entries = list(entries)
    return board


def _pairings(board: Leaderboard, pair: Optional[Sequence[str]]) -> list:
    from .seeds import paired

    runs = {e.label: e for e in board.entries if e.kind == "run"}
    if pair:
        if len(pair) != 2:
            raise ReportError(f"--pair takes two configurations, A,B; got {','.join(pair)}")
        missing = [p for p in pair if p not in runs]
        if missing:
            raise ReportError(f"--pair: no configuration {missing[0]!r} here "
                              f"(known: {', '.join(sorted(runs))})")
        return [paired(runs[pair[0]], runs[pair[1]])]
    trials = {o.trial for e in runs.values() for outs in e.outcomes.values() for o in outs}
    if len(runs) == 2 and len(trials) > 1:
        a, b = (r.label for r in board.rows if r.kind == "run")
        return [paired(runs[a], runs[b])]
    return []
