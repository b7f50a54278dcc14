"""``portfolio info --features``: the instance features of docs/features.md, as JSON or a table."""

from __future__ import annotations

from rich.table import Table

from ..features import CHEAP_FEATURES, PRESOLVED_FEATURES, instance_features
from ..problem import Problem


def features_summary(problem: Problem, load_seconds: float) -> dict:
    """The features' record (``version``, ``values``, ``seconds`` per step with ``load``)."""
    got = instance_features(problem)
    got.seconds = {"load": load_seconds, **got.seconds}
    return got.to_json()


def _text(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.6g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def features_table(record: dict) -> Table:
    """One line per feature (step, name, value, what it is), then the seconds per step."""
    seconds = record.get("seconds", {})
    took = ", ".join(f"{step} {secs:.3f} s" for step, secs in seconds.items())
    table = Table(title=f"features (version {record['version']}; {took})", title_justify="left")
    for column in ("step", "feature", "value", "what"):
        table.add_column(column, overflow="fold")
    values = record["values"]
    for step, names in (("cheap", CHEAP_FEATURES), ("presolved", PRESOLVED_FEATURES)):
        for name, what in names.items():
            table.add_row(step, name, _text(values.get(name)), what)
    if record.get("error"):
        table.caption = record["error"]
    return table
