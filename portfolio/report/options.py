"""Which backend options differ between the configurations of a report: two settings of one
backend are two configurations of one sweep, and a leaderboard that ranks them must say what
tells them apart.

Read from the rows' ``options`` (every option in effect, a budget-aware default as resolved for
that row's time limit), so a setting that differs only through the budget shows too.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def effective_options(rows: Iterable[Mapping]) -> dict[str, dict[str, set[str]]]:
    """Per configuration, per ``backend.option``, the values its rows ran with."""
    out: dict[str, dict[str, set[str]]] = {}
    for row in rows:
        mine = out.setdefault(str(row.get("configuration")), {})
        for backend, values in (row.get("options") or {}).items():
            for name, value in (values or {}).items():
                mine.setdefault(f"{backend}.{name}", set()).add(_text(value))
    return out


def differing(rows: Iterable[Mapping]) -> dict[str, dict[str, str]]:
    """``{backend.option: {configuration: value(s)}}`` for the options whose values differ
    between configurations that run that backend (values joined by ``/`` when a configuration's
    rows ran with several, as a budget-aware default does over instances of different limits)."""
    by_config = effective_options(rows)
    keys = sorted({k for values in by_config.values() for k in values})
    out: dict[str, dict[str, str]] = {}
    for key in keys:
        seen = {config: "/".join(sorted(values[key])) for config, values in by_config.items()
                if key in values}
        if len(seen) > 1 and len(set(seen.values())) > 1:
            out[key] = seen
    return out


def difference_notes(rows: Iterable[Mapping]) -> list[str]:
    """One note per option that tells configurations apart (empty: none does)."""
    return [f"option {key} differs: " + ", ".join(f"{config} {value}"
                                                  for config, value in sorted(seen.items()))
            for key, seen in differing(rows).items()]
