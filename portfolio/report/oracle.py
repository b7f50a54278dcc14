"""The two reference rows of algorithm selection (``report --oracle``; ``build(...,
extra_rows=reference_entries)``): the virtual best and the single best configuration, drawn from
the single-backend configurations of the runs.

* **virtual best**: on each instance (a column, which is one budget unless the runs mix limits
  for it: a note says so), the outcomes of the single-backend configuration whose cell scores
  best there: what a perfect per-instance selector among the members would get, and the bar a
  portfolio of them is measured against.
* **single best**: the single-backend configuration with the best total over the instances (the
  best mean): what choosing one member for every instance gets.

Both are rows of kind ``reference``: scored like the others against the same minimum cost, but
they set no minimum and take no rank (their outcomes are copies of real rows' outcomes).
Why the virtual best picks a configuration per instance and not the best outcome per seed: a
selector chooses before it runs, from the instance, so the seeds' luck is not its to pick.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..data import contest
from .leaderboard import Entry, min_costs, points

REFERENCE = "reference"
VIRTUAL_BEST = "virtual best"
SINGLE_BEST = "single best"


def is_single_backend(entry: Entry) -> bool:
    """A run entry whose every row ran exactly one backend (``backends`` of length 1)."""
    rows = [o.row for outs in entry.outcomes.values() for o in outs]
    return entry.kind == "run" and bool(rows) and all(
        r is not None and len(r.get("backends") or ()) == 1 for r in rows)


def _cell_points(entry: Entry, name: str, least: Optional[int]) -> float:
    outs = entry.outcomes.get(name, [])
    return sum(points(least, o.cost) for o in outs) / len(outs) if outs else 0.0


def _median_cost(entry: Entry, name: str) -> float:
    costs = sorted(o.cost for o in entry.outcomes.get(name, []) if o.cost is not None)
    return float(costs[len(costs) // 2]) if costs else float("inf")


def reference_entries(entries: Sequence[Entry], instances: Sequence[str]) -> tuple[list[Entry], list[str]]:
    """The virtual best and single best entries (none without a single-backend configuration),
    and the notes that say what they were drawn from."""
    singles = sorted((e for e in entries if is_single_backend(e)), key=lambda e: e.label)
    if not singles:
        return [], ["--oracle: no single-backend configuration in these runs, so no virtual best "
                    "or single best row"]
    least = min_costs(entries, instances)
    virtual = Entry(VIRTUAL_BEST, REFERENCE, {})
    chosen: dict[str, str] = {}
    for name in instances:
        ran = [e for e in singles if e.outcomes.get(name)]
        if not ran:
            continue
        best = max(ran, key=lambda e: (_cell_points(e, name, least[name]), -_median_cost(e, name)))
        virtual.outcomes[name] = list(best.outcomes[name])
        chosen[name] = best.label
    totals = {e.label: sum(_cell_points(e, n, least[n]) for n in instances) for e in singles}
    top = max(singles, key=lambda e: totals[e.label])   # ties: the first by name
    single = Entry(f"{SINGLE_BEST} ({top.label})", REFERENCE, dict(top.outcomes))
    by_config: dict[str, list[str]] = {}
    for name, label in chosen.items():
        bench = contest.match(name)
        by_config.setdefault(label, []).append(name if bench is None else bench.letter)
    picks = "; ".join(f"{label} on {', '.join(names)}" for label, names in by_config.items())
    notes = [f"reference rows from the {len(singles)} single-backend configuration(s) "
             f"({', '.join(e.label for e in singles)}): {VIRTUAL_BEST} takes on each instance the "
             f"one whose cell scores best ({picks}); {SINGLE_BEST} is the one with the best total; "
             f"neither sets the minimum cost nor takes a rank"]
    mixed = [name for name in instances if len({o.row.get("time_limit") for e in singles
                                                for o in e.outcomes.get(name, []) if o.row}) > 1]
    if mixed:
        notes.append(f"{', '.join(mixed)}: the single-backend rows ran with several time limits; "
                     f"the {VIRTUAL_BEST} picks one configuration for all of them")
    return [virtual, single], notes
